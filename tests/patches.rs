//! Local (patch) alignment: a synthetic movie whose specimen turns and bends as it drifts, the
//! model fitted to it against the truth, the sum against the clean specimen, a movie that
//! only drifts, the memory limit, the corrected frames, and bad input.

mod common;
use common::{blobs, drift, specimen, warped_frame, Blob, Lcg};
use ndarray::{Array2, Array3, Axis};
use ufunc::registration::{
    align_patches, dose_weighted_sum, AlignOptions, DoseWeighting, LocalAlignment, LocalMotion,
    MotionModel, PatchOptions,
};
use ufunc::{Error, Target};

const SHAPE: (usize, usize) = (256, 256);
const FRAMES: usize = 16;
const DOSE: f64 = 4.0;

/// Where frame `t` shows the specimen's point at `(y, x)` moved to: a drift, and a turn and a
/// bend that grow with time (1.5 px at the corners by the last frame).
fn moved(t: usize, y: f64, x: f64, bend: f64) -> [f64; 2] {
    let g = drift(t);
    let (cy, cx) = (SHAPE.0 as f64 / 2.0, SHAPE.1 as f64 / 2.0);
    let k = t as f64 / (FRAMES - 1) as f64;
    let turn = bend * 0.0117 * k;
    let dome = bend * 1.5 * k * ((y - cy) / cy).powi(2);
    [g[0] + turn * (x - cx), g[1] - turn * (y - cy) + dome]
}

/// The movie, and its blobs.
fn movie(bend: f64, seed: u64) -> (Array3<f32>, Vec<Blob>) {
    let mut rng = Lcg(seed);
    let blobs = blobs(240, SHAPE, &mut rng);
    let mut m = Array3::zeros((FRAMES, SHAPE.0, SHAPE.1));
    for t in 0..FRAMES {
        let frame = warped_frame(SHAPE, |y, x| moved(t, y, x, bend), DOSE, &blobs, &mut rng);
        m.index_axis_mut(Axis(0), t).assign(&frame);
    }
    (m, blobs)
}

fn options() -> PatchOptions {
    PatchOptions {
        grid: (4, 4),
        ..Default::default()
    }
}

fn model(local: &LocalAlignment) -> &MotionModel {
    match &local.motion {
        LocalMotion::Fitted(model) => model,
        LocalMotion::Unfitted(reason) => panic!("no model: {reason}"),
    }
}

/// The motion `d` of the specimen's point that frame `t` shows at `(y, x)`: the shift `s` that
/// registers the pixel (frame 0's point `p` is at `p + d(p)`) solves `s = -d(p - s)`.
fn motion_at(t: usize, y: f64, x: f64, bend: f64) -> [f64; 2] {
    let mut d = moved(t, y, x, bend);
    for _ in 0..8 {
        d = moved(t, y + d[0], x + d[1], bend);
    }
    d
}

/// RMS distance, over the pixels between the outermost patch centres and every frame, of
/// the shift that registers each pixel (the whole frame's plus, with `local`, the model's)
/// from the truth (registering needs the opposite of the motion).
fn rms_error(local: &LocalAlignment, bend: f64, with_model: bool) -> f64 {
    let (mut sq, mut count) = (0.0, 0);
    for t in 0..FRAMES {
        for y in (40..=216).step_by(8) {
            for x in (40..=216).step_by(8) {
                let (y, x) = (y as f64, x as f64);
                let g = local.global.shifts[t];
                let m = match with_model {
                    true => model(local).shift_at(t as f64, y, x),
                    false => [0.0; 2],
                };
                let truth = motion_at(t, y, x, bend);
                sq += (g[0] + m[0] + truth[0]).powi(2) + (g[1] + m[1] + truth[1]).powi(2);
                count += 1;
            }
        }
    }
    (sq / count as f64).sqrt()
}

/// The relative RMS difference of a sum from the clean specimen as frame 0 shows it, times
/// the frames, over the pixels the edges' clamping does not reach.
fn sum_error(sum: &Array2<f32>, blobs: &[Blob]) -> f64 {
    let clean = |y: usize, x: usize| {
        FRAMES as f64 * DOSE * (0.3 + specimen(SHAPE, blobs, y as f64, x as f64))
    };
    let (mut diff, mut norm) = (0.0, 0.0);
    for y in 16..SHAPE.0 - 16 {
        for x in 16..SHAPE.1 - 16 {
            let c = clean(y, x);
            diff += (sum[[y, x]] as f64 - c).powi(2);
            norm += c * c;
        }
    }
    (diff / norm).sqrt()
}

/// A specimen that turns and bends: the whole-frame shifts leave up to 1.5 px; the model
/// fitted to the patches' drift finds each pixel's shift to within 0.13 px rms, and the
/// sum it makes is nearer the clean specimen than the whole-frame sum.
#[test]
fn the_local_model_follows_a_specimen_that_turns_and_bends() {
    let (mut m, blobs) = movie(1.0, 11);
    let local = align_patches(&mut m, &options()).unwrap();
    assert_eq!(local.patches.len(), 16);
    assert_eq!(local.patches[5].origin, (64, 64));
    assert_eq!(local.patches[5].shape, (64, 64));
    assert!(local
        .patches
        .iter()
        .all(|p| p.shifts.len() == FRAMES && p.shifts[0] == [0.0; 2]));
    let (whole, fitted) = (rms_error(&local, 1.0, false), rms_error(&local, 1.0, true));
    let (whole_sum, local_sum) = (
        sum_error(&local.global.sum, &blobs),
        sum_error(&local.sum, &blobs),
    );
    let rms = model(&local).rms;
    println!(
        "turning and bending: rms error whole-frame {whole:.3} px, with the model {fitted:.3} px \
         (fit rms {:.3}, {:.3}); sum's relative error whole-frame {whole_sum:.4}, local {local_sum:.4}",
        rms[0], rms[1]
    );
    assert!(whole > 0.5, "the whole-frame shifts leave {whole}");
    assert!(fitted < 0.16, "with the model: {fitted}");
    assert!(
        3.0 * fitted < whole,
        "model {fitted} vs whole frames {whole}"
    );
    // (Of which 7% is the interpolation's smoothing of the shot noise: see the next test.)
    assert!(
        local_sum < 0.8 * whole_sum,
        "local sum {local_sum} vs whole {whole_sum}"
    );
    // The sum keeps the counts.
    let (a, b) = (local.sum.mean().unwrap(), local.global.sum.mean().unwrap());
    assert!((a - b).abs() < 2e-3 * b, "{a} vs {b}");
}

/// A specimen that only drifts leaves the patches nothing: the model is near 0 and the sum
/// near the whole-frame sum.
#[test]
fn a_movie_that_only_drifts_has_a_model_near_zero() {
    let (mut m, blobs) = movie(0.0, 12);
    let local = align_patches(&mut m, &options()).unwrap();
    let fitted = rms_error(&local, 0.0, true);
    let largest = (0..FRAMES)
        .flat_map(|t| [(t, 40.0, 40.0), (t, 216.0, 128.0), (t, 128.0, 216.0)])
        .map(|(t, y, x)| {
            let [dy, dx] = model(&local).shift_at(t as f64, y, x);
            dy.hypot(dx)
        })
        .fold(0.0, f64::max);
    println!(
        "drift alone: rms error with the model {fitted:.3} px, largest model shift {largest:.3} px"
    );
    assert!(largest < 0.15, "the model moves a pixel by {largest}");
    let (whole_sum, local_sum) = (
        sum_error(&local.global.sum, &blobs),
        sum_error(&local.sum, &blobs),
    );
    // (The interpolation's smoothing of the shot noise alone brings the local sum 7% nearer.)
    assert!(local_sum <= whole_sum, "{local_sum} vs {whole_sum}");
}

/// Patches that do not fit in the memory limit together are cut a row of patches at a time,
/// with the same result; the corrected frames, dose-weighted with no weight to speak of, add
/// up to the local sum; on `cpu` the result is `parallel`'s.
#[test]
fn streamed_patches_corrected_frames_and_targets_agree() {
    let (mut m, _) = movie(1.0, 13);
    let local = align_patches(&mut m, &options()).unwrap();
    let streamed = align_patches(
        &mut m,
        &PatchOptions {
            align: AlignOptions {
                memory_limit: 64 * 256 * 4 * FRAMES,
                ..Default::default()
            },
            ..options()
        },
    )
    .unwrap();
    assert_eq!(streamed.patches, local.patches);
    assert_eq!(streamed.motion, local.motion);
    let cpu = align_patches(
        &mut m,
        &PatchOptions {
            align: AlignOptions {
                target: Target::Cpu,
                ..Default::default()
            },
            ..options()
        },
    )
    .unwrap();
    assert_eq!(cpu.patches, local.patches);
    let worst = cpu
        .sum
        .iter()
        .zip(&local.sum)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(worst < 1e-3, "cpu and parallel sums differ by {worst}");

    let mut corrected = local.corrected(&mut m, Target::Parallel).unwrap();
    let weighted = dose_weighted_sum(
        &mut corrected,
        &[[0.0; 2]; FRAMES],
        &DoseWeighting::new(1e-9, 1.0),
        Target::Parallel,
    )
    .unwrap();
    let scale = (FRAMES as f32).sqrt();
    let worst = weighted
        .iter()
        .zip(&local.sum)
        .map(|(w, s)| (w * scale - s).abs() / s.abs().max(1.0))
        .fold(0f32, f32::max);
    assert!(
        worst < 1e-4,
        "the corrected frames add up to the local sum within {worst}"
    );
    let mut other = Array3::<f32>::zeros((FRAMES, 128, 128));
    match local.corrected(&mut other, Target::Parallel) {
        Err(Error::InvalidArgument { name, message }) => {
            assert_eq!(name, "frames");
            assert!(
                message.contains("256x256") && message.contains("128x128"),
                "{message}"
            );
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn bad_grids_and_movies_are_errors() {
    let (mut m, _) = movie(0.0, 14);
    let invalid = |m: &mut Array3<f32>, options: &PatchOptions| match align_patches(m, options) {
        Err(Error::InvalidArgument { name, message }) => (name, message),
        other => panic!("{:?}", other.map(|_| ())),
    };
    let (name, message) = invalid(
        &mut m,
        &PatchOptions {
            grid: (2, 4),
            ..options()
        },
    );
    assert_eq!(name, "grid");
    assert!(
        message.contains("at least 3 rows and 3 columns")
            && message.contains("2 rows and 4 columns"),
        "{message}"
    );
    let (name, message) = invalid(
        &mut m,
        &PatchOptions {
            grid: (20, 4),
            ..options()
        },
    );
    assert_eq!(name, "grid");
    assert!(message.contains("12x64 pixels"), "{message}");
    let mut short = m.slice(ndarray::s![..3, .., ..]).to_owned();
    let (name, message) = invalid(&mut short, &options());
    assert_eq!(name, "frames");
    assert!(message.contains("at least 4 frames, got 3"), "{message}");
    let (name, _) = invalid(
        &mut m,
        &PatchOptions {
            align: AlignOptions {
                upsample_factor: 0,
                ..Default::default()
            },
            ..options()
        },
    );
    assert_eq!(name, "upsample_factor");
    let (name, message) = invalid(
        &mut m,
        &PatchOptions {
            max_fit_rms: 0.0,
            ..options()
        },
    );
    assert_eq!(name, "max_fit_rms");
    assert!(message.contains("got 0"), "{message}");
}

/// Patches of a blank region register nothing: left out of the fit, whose reason says so
/// when too little is left.
#[test]
fn patches_with_nothing_to_register_leave_the_model_unfitted() {
    let mut flat = Array3::<f32>::from_elem((FRAMES, 128, 128), 2.0);
    let local = align_patches(
        &mut flat,
        &PatchOptions {
            grid: (3, 3),
            ..Default::default()
        },
    )
    .unwrap();
    match &local.motion {
        LocalMotion::Unfitted(reason) => {
            assert!(reason.contains("with 0 registered frames"), "{reason}")
        }
        fitted => panic!("{fitted:?}"),
    }
    assert_eq!(local.sum, local.global.sum);
}

/// A frame that cannot be read through the corrected frames is named once, as the source's
/// own reading names it (the inner reading's error is passed through, not wrapped again).
#[test]
fn a_corrected_frame_that_cannot_be_read_is_named_once() {
    let (mut m, _) = movie(1.0, 15);
    let local = align_patches(&mut m, &options()).unwrap();
    let mut failing = common::FailsAt {
        movie: m,
        frame: 3,
        error: || "truncated file".into(),
    };
    let mut corrected = local.corrected(&mut failing, Target::Parallel).unwrap();
    let error = ufunc::registration::shifted_sum(&mut corrected, &[[0.0; 2]; FRAMES], Target::Cpu)
        .unwrap_err()
        .to_string();
    assert_eq!(error.matches("could not be read").count(), 1, "{error}");
    assert!(
        error.contains("frame 3 could not be read: truncated file"),
        "{error}"
    );
}
