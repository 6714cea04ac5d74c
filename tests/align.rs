//! Movie alignment: a low-dose synthetic movie with a known drift, the `sum` reference against
//! the `first`, cpu against parallel, frame sources that fail, and bad options.

mod common;
use common::{drift, movie, CountingReads, FailsAt, Lcg};
use ndarray::{Array2, Array3, Axis};
use ufunc::registration::{
    align_movie, phase_cross_correlation, AlignOptions, FrameSource, Normalization, PccOptions,
    Reference, SpectraMemory,
};
use ufunc::{Error, Target};

/// RMS distance between the measured shifts and the truth (registering frame i needs -drift).
fn rms_error(shifts: &[[f64; 2]]) -> f64 {
    let sq: f64 = shifts
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let t = drift(i);
            (s[0] + t[0]).powi(2) + (s[1] + t[1]).powi(2)
        })
        .sum();
    (sq / shifts.len() as f64).sqrt()
}

#[test]
fn the_sum_reference_beats_the_first_frame_at_low_dose() {
    let mut m = movie(24, (128, 128), 0.6, 1);
    let sum = align_movie(&mut m, &AlignOptions::default()).unwrap();
    let first = align_movie(
        &mut m,
        &AlignOptions {
            reference: Reference::First,
            ..Default::default()
        },
    )
    .unwrap();
    let (e_sum, e_first) = (rms_error(&sum.shifts), rms_error(&first.shifts));
    println!("low dose (0.6 counts/px/frame): rms error sum {e_sum:.3} px, first {e_first:.3} px, {} iterations", sum.iterations);
    assert_eq!(sum.shifts[0], [0.0, 0.0]);
    assert_eq!(first.shifts[0], [0.0, 0.0]);
    assert!(e_sum < 0.25, "sum reference: rms error {e_sum}");
    assert!(3.0 * e_sum <= e_first, "sum {e_sum} vs first {e_first}");
    assert!(sum.iterations >= 2 && sum.iterations <= AlignOptions::default().max_iterations);
    assert_eq!(sum.sum.shape(), &[128, 128]);
    // The aligned sum keeps the counts: its mean is the frames' summed mean.
    let mean_counts = m.mean().unwrap() as f64 * 24.0;
    assert!((sum.sum.mean().unwrap() as f64 - mean_counts).abs() < 1e-3 * mean_counts);
}

#[test]
fn the_first_frame_reference_is_phase_cross_correlation_against_frame_0() {
    let m = movie(5, (48, 40), 50.0, 6);
    for normalization in [Normalization::Phase, Normalization::Off] {
        let a = align_movie(
            &mut m.clone(),
            &AlignOptions {
                reference: Reference::First,
                normalization,
                upsample_factor: 20,
                ..Default::default()
            },
        )
        .unwrap();
        let frame0 = m.index_axis(Axis(0), 0);
        for (i, frame) in m.outer_iter().enumerate() {
            let pcc = PccOptions {
                upsample_factor: 20,
                normalization,
                ..Default::default()
            };
            let r = phase_cross_correlation(&frame0, &frame, &pcc).unwrap();
            assert_eq!(
                a.shifts[i],
                [r.shift[0], r.shift[1]],
                "{normalization:?} {i}"
            );
        }
    }
}

#[test]
fn passes_stop_at_the_tolerance_or_the_limit_and_the_bfactor_weighs_in() {
    let m = movie(8, (64, 64), 2.0, 7);
    let run = |max_iterations, tolerance, bfactor| {
        align_movie(
            &mut m.clone(),
            &AlignOptions {
                max_iterations,
                tolerance,
                bfactor,
                ..Default::default()
            },
        )
        .unwrap()
    };
    // Any change is within a tolerance of 1000 px: one pass of ten allowed. The first pass's
    // change (from zero to the drift) is over a tolerance of 0: the limit of one pass stops it.
    let settled = run(10, 1000.0, 150.0);
    assert_eq!((settled.iterations, settled.converged), (1, true));
    let stopped = run(1, 0.0, 150.0);
    assert_eq!((stopped.iterations, stopped.converged), (1, false));
    assert!(run(10, 0.0, 150.0).iterations > 1);
    // At two counts a pixel the weighting of the high frequencies changes some shifts.
    let (plain, weighted) = (run(10, 0.05, 0.0), run(10, 0.05, 2000.0));
    assert_ne!(plain.shifts, weighted.shifts);
    assert!(
        rms_error(&weighted.shifts) < 0.5,
        "{}",
        rms_error(&weighted.shifts)
    );
}

/// Also with the frames far from zero mean: the mean adds only a constant to each
/// correlation, but one that swamped its f32 values (frames of mean 1000 moved shifts by 0.3
/// px, of mean 30000 by 1.75 px); it is left out, and kept in the aligned sum.
#[test]
fn a_clean_movie_is_aligned_to_a_twentieth_of_a_pixel() {
    let clean = movie(10, (96, 80), 400.0, 2);
    for offset in [0.0f32, 1000.0, 30000.0] {
        let mut m = clean.mapv(|v| v + offset);
        for reference in [Reference::Sum, Reference::First] {
            let a = align_movie(
                &mut m,
                &AlignOptions {
                    reference,
                    upsample_factor: 50,
                    ..Default::default()
                },
            )
            .unwrap();
            let e = rms_error(&a.shifts);
            let what = format!("{reference:?}, {offset} added");
            assert!(e < 0.05, "{what}: rms error {e}: {:?}", a.shifts);
            assert!(
                a.peaks.iter().all(|&p| p > 0.5 && p < 1.01),
                "{what}: {:?}",
                a.peaks
            );
            let (mean, expected) = (a.sum.mean().unwrap() / 10.0, m.mean().unwrap());
            assert!(
                (mean - expected).abs() < 1e-3 * expected,
                "{what}: {mean} vs {expected}"
            );
        }
    }
}

/// A blank frame (dark, or zero-filled by an aborted acquisition) holds nothing to register:
/// its correlation was rounding, which gave it a shift of tens of pixels and, as frame 0,
/// moved every other frame's shift by as much. It is reported unmoved with peak 0, the shifts
/// are relative to the first frame that is not blank, and the passes still converge.
#[test]
fn blank_frames_have_no_shift_and_move_no_other() {
    for shape in [(96, 80), (127, 129)] {
        let clean = movie(10, shape, 400.0, 2);
        let mut m = clean.clone();
        m.index_axis_mut(Axis(0), 0).fill(0.0);
        m.index_axis_mut(Axis(0), 6).fill(1234.5);
        for (what, taper) in [("sum", 0.0), ("sum, tapered", 0.1)] {
            let options = AlignOptions {
                upsample_factor: 50,
                taper,
                ..Default::default()
            };
            let a = align_movie(&mut m, &options).unwrap();
            let what = format!("{shape:?}, {what}");
            assert!(a.iterations < options.max_iterations, "{what}: passes");
            for i in [0, 6] {
                assert_eq!(
                    (a.shifts[i], a.peaks[i]),
                    ([0.0; 2], 0.0),
                    "{what}: frame {i}"
                );
            }
            assert_eq!(a.unregistered_frames(), [0, 6], "{what}");
            // Relative to frame 1, as the movie without blank frames has them.
            let want = align_movie(&mut clean.clone(), &options).unwrap().shifts;
            for i in [1, 2, 3, 4, 5, 7, 8, 9] {
                let (s, w) = (
                    a.shifts[i],
                    [want[i][0] - want[1][0], want[i][1] - want[1][1]],
                );
                let err = (s[0] - w[0]).abs().max((s[1] - w[1]).abs());
                assert!(err < 0.05, "{what}: frame {i} off by {err}: {:?}", a.shifts);
                assert!(a.peaks[i] > 0.5, "{what}: {:?}", a.peaks);
            }
        }
        // One frame with detail among blank ones has nothing to register against: all
        // unmoved, and so is the sum (it held that frame moved by its correlation's rounding).
        let mut alone = m.clone();
        alone
            .index_axis_mut(Axis(0), 0)
            .assign(&clean.index_axis(Axis(0), 0));
        for i in 1..10 {
            alone.index_axis_mut(Axis(0), i).fill(77.0);
        }
        let a = align_movie(&mut alone, &AlignOptions::default()).unwrap();
        assert!(a.shifts.iter().all(|s| *s == [0.0; 2]), "{:?}", a.shifts);
        assert!(a.peaks.iter().all(|&p| p == 0.0), "{:?}", a.peaks);
        let want = alone.sum_axis(Axis(0));
        let err = (&a.sum - &want).iter().fold(0.0f32, |e, v| e.max(v.abs()));
        assert!(err < 1e-3 * 77.0 * 10.0, "{shape:?}: sum off by {err}");
        // Against frame 0: a blank one leaves nothing to align to.
        let first = AlignOptions {
            reference: Reference::First,
            ..Default::default()
        };
        let e = align_movie(&mut m, &first).unwrap_err().to_string();
        assert!(e.contains("frame 0, the reference, is blank"), "{e}");
        m.index_axis_mut(Axis(0), 0)
            .assign(&movie(1, shape, 400.0, 2).index_axis(Axis(0), 0));
        let a = align_movie(&mut m, &first).unwrap();
        assert_eq!(
            (a.shifts[6], a.peaks[6]),
            ([0.0; 2], 0.0),
            "{shape:?}, first"
        );
        assert!(rms_error(&a.shifts[..6]) < 0.2, "{shape:?}: {:?}", a.shifts);
    }
}

/// A specimen that jumps half way through the movie (a stage that slips), two frames on each
/// side. The first pass, against the unmoved sum, registers each frame onto the other group
/// (two copies of it in the sum less the frame, one of its own); each later pass swapped the
/// groups back, less a little, so the passes had not settled after ten, the groups still
/// half a pixel apart (eight pixels without the B-factor's weighting). A frame whose step
/// reverses its last one now goes half way, where the two groups meet: four or five passes,
/// as for three frames on each side, which took seven to ten.
#[test]
fn two_groups_of_frames_that_swap_places_meet_half_way() {
    let jump = [9.3, -7.6];
    for (half, bfactor) in [(2, 150.0), (2, 0.0), (3, 150.0), (3, 0.0)] {
        let at: Vec<[f64; 2]> = (0..2 * half)
            .map(|i| if i < half { [0.0; 2] } else { jump })
            .collect();
        let mut m = common::movie_along(&at, (96, 80), 400.0, 11);
        for target in [Target::Cpu, Target::Parallel] {
            let options = AlignOptions {
                target,
                bfactor,
                ..Default::default()
            };
            let a = align_movie(&mut m, &options).unwrap();
            let what = format!("{target:?}, {half} + {half} frames, B {bfactor}");
            let passes = a.iterations;
            assert!(a.converged && passes <= 5, "{what}: {passes} passes");
            for (s, t) in a.shifts.iter().zip(&at) {
                let off = (s[0] + t[0]).hypot(s[1] + t[1]);
                assert!(off < 0.1, "{what}: {:?}", a.shifts);
            }
        }
    }
}

#[test]
fn cpu_and_parallel_agree() {
    let mut m = movie(7, (64, 60), 5.0, 3);
    let cpu = align_movie(
        &mut m,
        &AlignOptions {
            target: Target::Cpu,
            ..Default::default()
        },
    )
    .unwrap();
    let par = align_movie(
        &mut m,
        &AlignOptions {
            target: Target::Parallel,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(cpu.shifts, par.shifts);
    assert_eq!(cpu.iterations, par.iterations);
    // A view of the movie is a frame source too.
    let view = align_movie(
        &mut m.view(),
        &AlignOptions {
            target: Target::Cpu,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(view, cpu);
    // Frames that are not contiguous (every other column, reversed) are read element by element
    // instead of in pieces: the same result as their contiguous copy.
    let strided = m.slice(ndarray::s![.., .., ..;-2]);
    let options = AlignOptions {
        target: Target::Parallel,
        ..Default::default()
    };
    assert_eq!(
        align_movie(&mut strided.clone(), &options).unwrap(),
        align_movie(&mut strided.to_owned(), &options).unwrap()
    );
    // Frames of several pieces (65536 values each) copied side by side: the same as read
    // element by element from a view of the same frames stored with reversed columns.
    let (ny, nx) = (300, 301);
    let large = Array3::from_shape_fn((3, ny, nx), |(f, y, x)| m[[f, y % 64, x % 60]]);
    let reversed = Array3::from_shape_fn((3, ny, nx), |(f, y, x)| large[[f, y, nx - 1 - x]]);
    let mut same = reversed.slice(ndarray::s![.., .., ..;-1]);
    assert_eq!(same, large);
    assert_eq!(
        align_movie(&mut same, &options).unwrap(),
        align_movie(&mut large.clone(), &options).unwrap()
    );
}

/// An error with context, as `anyhow`'s: displayed alone, only the context shows.
#[derive(Debug)]
struct Context(&'static str, Box<dyn std::error::Error + Send + Sync>);

/// An error that prints its source as its own message and also returns it (as some I/O
/// wrappers do): the cause is shown once.
#[derive(Debug)]
struct Echo(std::io::Error);
impl std::fmt::Display for Echo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
impl std::error::Error for Echo {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}
impl std::fmt::Display for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
impl std::error::Error for Context {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.1)
    }
}

/// A movie whose frame 2 fails with context over a plain message, or with `echo`, whose frame 3
/// fails with context over an error that prints its own source as its message.
fn broken(frames: usize, echo: bool) -> FailsAt {
    FailsAt {
        movie: Array3::zeros((frames, 8, 8)),
        frame: if echo { 3 } else { 2 },
        error: if echo {
            || {
                let io = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "end of file");
                Box::new(Context("movie.tif: frame 3", Box::new(Echo(io))))
            }
        } else {
            || {
                Box::new(Context(
                    "movie.tif: frame 2",
                    "truncated file: frame 2 ends at byte 4096".into(),
                ))
            }
        },
    }
}

#[test]
fn bad_movies_and_options_are_errors() {
    let e = align_movie(&mut broken(4, false), &AlignOptions::default()).unwrap_err();
    // The source's error is shown with its cause, not its outermost context alone.
    assert_eq!(
        e.to_string(),
        "invalid `frames`: frame 2 could not be read: movie.tif: frame 2: truncated file: \
         frame 2 ends at byte 4096"
    );
    // A cause that its wrapper prints as its own message is not repeated.
    let e = align_movie(&mut broken(4, true), &AlignOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid `frames`: frame 3 could not be read: movie.tif: frame 3: end of file"
    );
    let e = align_movie(
        &mut Array3::<f32>::zeros((0, 8, 8)),
        &AlignOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { name: "frames", .. }),
        "{e}"
    );
    let mut m = Array3::<f32>::ones((3, 8, 8));
    for (o, name) in [
        (
            AlignOptions {
                upsample_factor: 0,
                ..Default::default()
            },
            "upsample_factor",
        ),
        (
            AlignOptions {
                bfactor: f64::NAN,
                ..Default::default()
            },
            "bfactor",
        ),
        (
            AlignOptions {
                taper: 0.6,
                ..Default::default()
            },
            "taper",
        ),
        (
            AlignOptions {
                max_iterations: 0,
                ..Default::default()
            },
            "max_iterations",
        ),
        (
            AlignOptions {
                tolerance: -0.1,
                ..Default::default()
            },
            "tolerance",
        ),
    ] {
        let e = align_movie(&mut m, &o).unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { name: n, .. } if n == name),
            "{e}"
        );
    }
    // NaN or an infinity in a frame is an error naming the frame and the place (an infinity
    // made every correlation NaN, and the alignment "succeeded" with a NaN sum).
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut m = m.clone();
        m[[1, 2, 3]] = bad;
        let e = align_movie(&mut m, &AlignOptions::default()).unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, Error::InvalidArgument { name: "frames", .. })
                && text.contains(&format!("frame 1 holds {bad} at row 2, column 3")),
            "{text}"
        );
    }
    // Frames are checked in pieces of 65536 values: a NaN in the last piece of a large frame,
    // and in a frame read element by element (a strided view), is found too.
    let mut large = Array3::<f32>::ones((2, 300, 301));
    large[[1, 299, 300]] = f32::NAN;
    for (e, column) in [
        (
            align_movie(&mut large.clone(), &AlignOptions::default()),
            300,
        ),
        (
            align_movie(
                &mut large.slice(ndarray::s![.., .., ..;-1]),
                &AlignOptions::default(),
            ),
            0,
        ),
    ] {
        let text = e.unwrap_err().to_string();
        assert!(
            text.contains(&format!("frame 1 holds NaN at row 299, column {column}")),
            "{text}"
        );
    }
    // One frame: nothing to align, frame 0 is the origin and its own reference (peak 1, as
    // frame 0's with the first frame as reference), and the sum is the frame.
    let lone = Array3::from_shape_fn((1, 8, 8), |(_, y, x)| (y * 8 + x) as f32);
    for reference in [Reference::Sum, Reference::First] {
        let a = align_movie(
            &mut lone.clone(),
            &AlignOptions {
                reference,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(a.shifts, vec![[0.0, 0.0]]);
        assert!(
            (a.peaks[0] - 1.0).abs() < 1e-6,
            "{reference:?}: {:?}",
            a.peaks
        );
        let off = (&a.sum - &lone.index_axis(Axis(0), 0)).mapv(f32::abs);
        assert!(off.iter().all(|&d| d < 1e-4), "{reference:?}: {off}");
        assert_eq!(a.iterations, usize::from(reference == Reference::First));
    }
}

/// Large frames aligned on cropped spectra: the same drift, the same full-size sum.
#[test]
fn frames_aligned_at_a_smaller_size_give_the_same_drift() {
    let mut m = movie(8, (128, 96), 300.0, 4);
    let full = align_movie(&mut m, &AlignOptions::default()).unwrap();
    let binned = align_movie(
        &mut m,
        &AlignOptions {
            max_size: 64,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(full.alignment_shape, (128, 96));
    assert_eq!(binned.alignment_shape, (64, 64));
    let e = rms_error(&binned.shifts);
    assert!(e < 0.1, "rms error {e}: {:?}", binned.shifts);
    assert_eq!(binned.sum.shape(), &[128, 96]);
    let diff = (&binned.sum - &full.sum).mapv(f32::abs).mean().unwrap();
    assert!(
        diff < 0.05 * full.sum.mean().unwrap(),
        "mean difference {diff}"
    );
    let bad = AlignOptions {
        max_size: 1,
        ..Default::default()
    };
    assert!(matches!(
        align_movie(&mut m, &bad).unwrap_err(),
        Error::InvalidArgument {
            name: "max_size",
            ..
        }
    ));
}

/// Frames of lengths whose transforms are slow (262 = 2 x 131 rows, 279 = 3^2 x 31 columns)
/// are aligned, with the sum reference, at the largest
/// fast lengths within them; the full-size spectra are kept, so the frames are read once, and
/// the sum is the frames' at their shifts.
#[test]
fn slow_lengths_are_aligned_at_fast_ones_and_read_once() {
    let m = movie(8, (262, 279), 300.0, 12);
    let mut kept = CountingReads::new(m.clone());
    let a = align_movie(&mut kept, &AlignOptions::default()).unwrap();
    assert_eq!(a.alignment_shape, (256, 275));
    assert_eq!(
        kept.reads, 8,
        "read once: the sum is made from the kept spectra"
    );
    let e = rms_error(&a.shifts);
    assert!(e < 0.1, "rms error {e}: {:?}", a.shifts);
    // The sum is the frames moved by the shifts reported, at full size.
    let mut moved = a.corrected(&mut kept.movie, Target::Parallel).unwrap();
    let mut want = Array2::<f32>::zeros((262, 279));
    let mut frame = Array2::<f32>::zeros((262, 279));
    for i in 0..8 {
        moved.read_frame(i, frame.view_mut()).unwrap();
        want += &frame;
    }
    let scale = want.iter().fold(0.0f32, |a, v| a.max(v.abs()));
    let err = (&a.sum - &want).iter().fold(0.0f32, |a, v| a.max(v.abs()));
    assert!(err <= 1e-4 * scale, "the sum differs by {err} of {scale}");
    // Streamed, each pass transforms the frames at full size: the same shifts and sum, and
    // no reading for the sum either.
    let mut streamed = CountingReads::new(m.clone());
    let limit = AlignOptions {
        memory_limit: 0,
        ..Default::default()
    };
    let b = align_movie(&mut streamed, &limit).unwrap();
    assert_eq!(
        (b.shifts.as_slice(), b.iterations),
        (a.shifts.as_slice(), a.iterations)
    );
    assert_eq!(streamed.reads, 8 * (1 + b.iterations));
    assert!((&a.sum - &b.sum).iter().all(|d| d.abs() <= 1e-4 * scale));
    // The first frame as reference (one pass, no B-factor): aligned at the frames' size.
    let first = AlignOptions {
        reference: Reference::First,
        ..Default::default()
    };
    let f = align_movie(&mut m.clone(), &first).unwrap();
    assert_eq!(f.alignment_shape, (262, 279));
    // Below 256 pixels nothing is cropped (255 = 3 x 5 x 17).
    let small = align_movie(
        &mut movie(3, (255, 255), 300.0, 13),
        &AlignOptions::default(),
    );
    assert_eq!(small.unwrap().alignment_shape, (255, 255));
}

#[test]
fn a_movie_over_the_memory_limit_is_streamed_with_the_same_result() {
    let m = movie(12, (64, 48), 2.0, 77);
    for reference in [Reference::Sum, Reference::First] {
        for max_size in [4096, 32] {
            let options = AlignOptions {
                reference,
                max_size,
                ..Default::default()
            };
            let mut kept = CountingReads::new(m.clone());
            let a = align_movie(&mut kept, &options).unwrap();
            let mut streamed = CountingReads::new(m.clone());
            let limit = AlignOptions {
                memory_limit: 0,
                ..options
            };
            let b = align_movie(&mut streamed, &limit).unwrap();
            // What `spectra_memory` says is kept: the full spectra (12 frames of 64 x 25
            // points of 8 bytes) where they fit, nothing in one pass.
            let full = 12 * 64 * 25 * 8;
            let (kept_memory, streamed_memory) = match reference {
                Reference::Sum => (SpectraMemory::Kept(full), SpectraMemory::Streamed(full)),
                Reference::First => (SpectraMemory::OnePass, SpectraMemory::OnePass),
            };
            assert_eq!(options.spectra_memory(12, (64, 48)), kept_memory);
            let cropped = 12 * 32 * 17 * 8;
            let streamed_memory = match (streamed_memory, max_size) {
                (SpectraMemory::Streamed(_), 32) => SpectraMemory::Streamed(cropped),
                (memory, _) => memory,
            };
            assert_eq!(limit.spectra_memory(12, (64, 48)), streamed_memory);
            assert_eq!(a.shifts, b.shifts, "{reference:?} at {max_size}");
            assert_eq!(a.iterations, b.iterations);
            assert!((&a.sum - &b.sum).iter().all(|d| d.abs() < 1e-3));
            // Kept (the sum reference): every frame read once, cropped or not (the full
            // spectra fit). Streamed: once for the first sum and once per pass (and once more
            // after a pass that damped a step: this movie has none); the first-frame reference
            // (one pass, never kept) reads frame 0 and then every frame. A cropped alignment
            // that keeps no full spectra reads them once more for the full-size sum.
            let crop = usize::from(max_size < 64);
            let (kept_reads, streamed_reads) = match reference {
                Reference::Sum => (12, 12 * (1 + b.iterations)),
                Reference::First => (1 + 12 + 12 * crop, 1 + 12),
            };
            assert_eq!(kept.reads, kept_reads);
            assert_eq!(
                streamed.reads,
                streamed_reads + 12 * crop,
                "{reference:?} at {max_size}"
            );
        }
    }
    // Cropped to 32 x 32 where the full spectra (12 x 64 x 25 x 8 bytes) do not fit in the
    // limit but the cropped ones (12 x 32 x 17 x 8) do: those are kept, the same shifts
    // found, and the frames read once more for the sum.
    let options = AlignOptions {
        max_size: 32,
        ..Default::default()
    };
    let mut full = CountingReads::new(m.clone());
    let a = align_movie(&mut full, &options).unwrap();
    let mut cropped = CountingReads::new(m.clone());
    let limit = AlignOptions {
        memory_limit: 12 * 64 * 25 * 8 - 1,
        ..options
    };
    let b = align_movie(&mut cropped, &limit).unwrap();
    assert!(12 * 32 * 17 * 8 <= limit.memory_limit);
    assert_eq!(
        limit.spectra_memory(12, (64, 48)),
        SpectraMemory::Kept(12 * 32 * 17 * 8)
    );
    // With an edge taper (the sum read again whatever is kept), or in groups of 2 (aligned
    // as 6 frames, their sum made apart), the cropped spectra are kept.
    let tapered = AlignOptions {
        taper: 0.1,
        ..options
    };
    assert_eq!(
        tapered.spectra_memory(12, (64, 48)),
        SpectraMemory::Kept(12 * 32 * 17 * 8)
    );
    let grouped = AlignOptions {
        group: 2,
        ..options
    };
    assert_eq!(
        grouped.spectra_memory(12, (64, 48)),
        SpectraMemory::Kept(6 * 32 * 17 * 8)
    );
    let mut counted = CountingReads::new(m.clone());
    align_movie(&mut counted, &tapered).unwrap();
    assert_eq!(
        counted.reads, 24,
        "read once for the spectra, once more for the tapered frames' sum"
    );
    assert_eq!(
        (a.shifts.as_slice(), a.alignment_shape),
        (b.shifts.as_slice(), (32, 32))
    );
    assert_eq!((full.reads, cropped.reads), (12, 24));
    assert!((&a.sum - &b.sum).iter().all(|d| d.abs() < 1e-3));
}

/// A frame cut from a specimen that does not repeat (blobs over a larger field and a gradient
/// of illumination across it): the frame's edges stay put while the specimen moves.
fn edge_frame(
    shape: (usize, usize),
    shift: [f64; 2],
    blobs: &[(f64, f64, f64, f64)],
) -> Array2<f32> {
    Array2::from_shape_fn(shape, |(y, x)| {
        let (y, x) = (y as f64 - shift[0], x as f64 - shift[1]);
        let v: f64 = blobs
            .iter()
            .map(|&(cy, cx, s, a)| {
                a * (-((y - cy).powi(2) + (x - cx).powi(2)) / (2.0 * s * s)).exp()
            })
            .sum();
        (1.0 + 0.01 * (y + 2.0 * x) + v) as f32
    })
}

#[test]
fn an_edge_taper_removes_the_pull_of_fixed_edges_on_phase_correlation() {
    let (frames, shape) = (8, (96, 96));
    let mut rng = Lcg(5);
    let blobs: Vec<(f64, f64, f64, f64)> = (0..120)
        .map(|_| {
            let mut at = |n: usize| -20.0 + (n as f64 + 40.0) * rng.next();
            (
                at(shape.0),
                at(shape.1),
                1.5 + 2.5 * rng.next(),
                0.5 + rng.next(),
            )
        })
        .collect();
    let mut m = Array3::zeros((frames, shape.0, shape.1));
    for i in 0..frames {
        m.index_axis_mut(ndarray::Axis(0), i)
            .assign(&edge_frame(shape, drift(i), &blobs));
    }
    let error = |taper| {
        let options = AlignOptions {
            reference: Reference::First,
            normalization: ufunc::registration::Normalization::Phase,
            upsample_factor: 20,
            taper,
            ..Default::default()
        };
        let a = align_movie(&mut m.clone(), &options).unwrap();
        (rms_error(&a.shifts), a.sum)
    };
    let (plain, plain_sum) = error(0.0);
    let (tapered, tapered_sum) = error(0.25);
    eprintln!("rms error: no taper {plain:.3} px, a quarter of each axis {tapered:.3} px");
    assert!(tapered < 0.1, "{tapered}");
    assert!(plain > 10.0 * tapered, "{plain} against {tapered}");
    // The sum is made from the frames as they are, not from the tapered ones.
    assert!(tapered_sum.iter().all(|&v| v > 0.5 * frames as f32));
    assert!(plain_sum.iter().all(|&v| v > 0.5 * frames as f32));
}

/// RMS distance between the measured shifts and `truth` (registering frame i needs -truth).
fn rms_against(shifts: &[[f64; 2]], truth: &[[f64; 2]]) -> f64 {
    let sq: f64 = shifts
        .iter()
        .zip(truth)
        .map(|(s, t)| (s[0] + t[0]).powi(2) + (s[1] + t[1]).powi(2))
        .sum();
    (sq / shifts.len() as f64).sqrt()
}

/// At a tenth of a count per pixel per frame a frame alone has too little signal for its
/// peak; groups of 8 frames (MotionCor2's -Group) find a smooth drift nearly 3 times better
/// (measured over three movies: rms 0.31 px against 0.84), on every target, and the sum adds
/// every frame at its own interpolated shift.
#[test]
fn groups_of_frames_find_a_smooth_drift_at_very_low_dose() {
    let truth: Vec<[f64; 2]> = (0..40)
        .map(|i| {
            let t = i as f64;
            [0.09 * t - 0.0008 * t * t, -0.06 * t]
        })
        .collect();
    let grouped_options = AlignOptions {
        group: 8,
        ..Default::default()
    };
    let (mut e_alone, mut e_grouped) = (0.0, 0.0);
    for seed in [8, 9, 7] {
        let mut m = common::movie_along(&truth, (128, 128), 0.1, seed);
        let alone = align_movie(&mut m, &AlignOptions::default()).unwrap();
        let grouped = align_movie(&mut m, &grouped_options).unwrap();
        e_alone += rms_against(&alone.shifts, &truth) / 3.0;
        e_grouped += rms_against(&grouped.shifts, &truth) / 3.0;
    }
    println!("0.1 counts/px/frame: mean rms error alone {e_alone:.3} px, in groups of 8 {e_grouped:.3} px");
    assert!(e_grouped < 0.4, "groups of 8: rms error {e_grouped}");
    assert!(
        2.0 * e_grouped <= e_alone,
        "grouped {e_grouped} vs alone {e_alone}"
    );

    let mut m = common::movie_along(&truth, (128, 128), 0.1, 7);
    let grouped = align_movie(&mut m, &grouped_options).unwrap();
    assert_eq!(grouped.shifts.len(), 40);
    assert_eq!(grouped.shifts[0], [0.0, 0.0]);
    // Each frame carries its group's peak.
    assert!(grouped
        .peaks
        .chunks(8)
        .all(|g| g.iter().all(|&p| p == g[0] && p > 0.0)));
    // The sum is every frame moved by its own shift: a sum made from those shifts.
    let at_shifts = ufunc::registration::dose_weighted_sum(
        &mut m,
        &grouped.shifts,
        &ufunc::registration::DoseWeighting::new(1e-9, 1.0),
        Target::Parallel,
    )
    .unwrap();
    // (An exposure that weighs nothing, over sqrt(frames).)
    let scale = (40f32).sqrt();
    let worst = grouped
        .sum
        .iter()
        .zip(&at_shifts)
        .map(|(a, b)| (a - b * scale).abs())
        .fold(0f32, f32::max);
    assert!(
        worst < 1e-3,
        "the grouped sum differs from the frames' by {worst}"
    );
    for target in [Target::Cpu, Target::Parallel] {
        let again = align_movie(
            &mut m,
            &AlignOptions {
                target,
                ..grouped_options
            },
        )
        .unwrap();
        assert_eq!(again.shifts, grouped.shifts, "{target:?}");
    }
}

/// A frame of a group that cannot be read is named itself, not by its group; too few frames
/// for two groups, and a group of 0, are errors naming `group`.
#[test]
fn grouping_errors_name_the_frame_and_the_group() {
    let grouped = |group| AlignOptions {
        group,
        ..Default::default()
    };
    let e = align_movie(&mut broken(6, false), &grouped(2)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid `frames`: frame 2 could not be read: movie.tif: frame 2: truncated file: \
         frame 2 ends at byte 4096"
    );
    let mut m = Array3::<f32>::ones((7, 8, 8));
    for (group, says) in [(4, "a movie of 7 frames"), (0, "got 0")] {
        let e = align_movie(&mut m, &grouped(group)).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument { name: "group", message } if message.contains(says)),
            "{e}"
        );
    }
}

/// Grouped frames aligned cropped (or tapered) are read twice in all: once for the groups'
/// spectra, kept between passes, and once for the sum at each frame's shift (no sum of the
/// groups, which would cost another reading, is made to be thrown away).
#[test]
fn grouped_frames_are_read_twice() {
    let m = movie(12, (64, 64), 5.0, 3);
    for options in [
        AlignOptions {
            group: 3,
            max_size: 32,
            ..Default::default()
        },
        AlignOptions {
            group: 3,
            taper: 0.1,
            ..Default::default()
        },
    ] {
        let mut counted = CountingReads::new(m.clone());
        let a = align_movie(&mut counted, &options).unwrap();
        assert_eq!(counted.reads, 2 * 12, "{options:?}");
        assert_eq!(a.sum.dim(), (64, 64));
    }
}

/// `shifted_sum` at an alignment's shifts is its sum; `even_odd_sums` splits it in two, each
/// the sum of its frames alone; a shift per frame is required.
#[test]
fn shifted_and_split_sums_add_up_to_the_aligned_sum() {
    use ufunc::registration::{even_odd_sums, shifted_sum};
    let mut m = movie(7, (64, 72), 20.0, 3);
    let aligned = align_movie(&mut m, &AlignOptions::default()).unwrap();
    let close = |a: &Array2<f32>, b: &Array2<f32>, what: &str| {
        let scale = b.iter().fold(0f32, |s, v| s.max(v.abs()));
        let worst = a.iter().zip(b).fold(0f32, |w, (x, y)| w.max((x - y).abs()));
        assert!(worst <= 1e-5 * scale, "{what}: off by {worst} of {scale}");
    };
    for target in [Target::Cpu, Target::Parallel] {
        let sum = shifted_sum(&mut m, &aligned.shifts, target).unwrap();
        close(&sum, &aligned.sum, "shifted_sum");
        let [even, odd] = even_odd_sums(&mut m, &aligned.shifts, target).unwrap();
        close(&(&even + &odd), &aligned.sum, "even + odd");
        for (half, start) in [(&even, 0), (&odd, 1)] {
            let mut frames = m.slice(ndarray::s![start..;2, .., ..]).to_owned();
            let shifts: Vec<[f64; 2]> = aligned
                .shifts
                .iter()
                .skip(start)
                .step_by(2)
                .copied()
                .collect();
            close(
                half,
                &shifted_sum(&mut frames, &shifts, target).unwrap(),
                "a half",
            );
        }
    }
    // The weighted sum and the halves from one reading are those the two make apart, to the
    // bit, and the frames are read once.
    let dose = ufunc::registration::DoseWeighting::new(1.5, 1.0);
    for target in [Target::Cpu, Target::Parallel] {
        let mut counted = CountingReads::new(m.clone());
        let (weighted, [even, odd]) = ufunc::registration::dose_weighted_and_even_odd_sums(
            &mut counted,
            &aligned.shifts,
            &dose,
            target,
        )
        .unwrap();
        assert_eq!(counted.reads, 7);
        let apart = ufunc::registration::dose_weighted_sum(&mut m, &aligned.shifts, &dose, target);
        assert_eq!(weighted, apart.unwrap());
        assert_eq!(
            [even, odd],
            even_odd_sums(&mut m, &aligned.shifts, target).unwrap()
        );
    }
    let bad_dose = ufunc::registration::DoseWeighting::new(-1.0, 1.0);
    let bad = ufunc::registration::dose_weighted_and_even_odd_sums(
        &mut m,
        &aligned.shifts,
        &bad_dose,
        Target::Cpu,
    );
    assert!(matches!(bad, Err(Error::InvalidArgument { .. })), "{bad:?}");
    for bad in [
        shifted_sum(&mut m, &aligned.shifts[1..], Target::Cpu).map(|_| ()),
        even_odd_sums(&mut m, &aligned.shifts[1..], Target::Cpu).map(|_| ()),
        ufunc::registration::dose_weighted_and_even_odd_sums(
            &mut m,
            &aligned.shifts[1..],
            &dose,
            Target::Cpu,
        )
        .map(|_| ()),
    ] {
        match bad {
            Err(Error::InvalidArgument { name, message }) => {
                assert_eq!(name, "shifts");
                assert!(message.contains("6 shifts for 7 frames"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}

/// The frames as an alignment moves them are each frame at its shift, and add up to the
/// aligned sum; frames other than those aligned are refused.
#[test]
fn corrected_frames_are_the_frames_at_their_shifts() {
    use ufunc::registration::shifted_sum;
    let mut m = movie(5, (48, 40), 20.0, 9);
    let aligned = align_movie(&mut m, &AlignOptions::default()).unwrap();
    let read = m.clone();
    for target in [Target::Cpu, Target::Parallel] {
        let mut corrected = aligned.corrected(&mut m, target).unwrap();
        assert_eq!((corrected.len(), corrected.frame_shape()), (5, (48, 40)));
        let mut sum = Array2::<f32>::zeros((48, 40));
        let mut frame = Array2::<f32>::zeros((48, 40));
        for i in 0..5 {
            corrected.read_frame(i, frame.view_mut()).unwrap();
            sum += &frame;
            let mut one = read.slice(ndarray::s![i..=i, .., ..]).to_owned();
            let alone = shifted_sum(&mut one, &aligned.shifts[i..=i], target).unwrap();
            let worst = (&frame - &alone).iter().fold(0f32, |w, d| w.max(d.abs()));
            assert!(worst < 1e-3, "frame {i} off by {worst}");
        }
        // Frame 4 moved (a frame at no shift would not tell a moved frame from one read).
        assert!(aligned.shifts[4][0].hypot(aligned.shifts[4][1]) > 0.5);
        let scale = aligned.sum.iter().fold(0f32, |s, v| s.max(v.abs()));
        let worst = (&sum - &aligned.sum)
            .iter()
            .fold(0f32, |w, d| w.max(d.abs()));
        assert!(worst <= 1e-5 * scale, "the frames add up within {worst}");
    }
    for mut other in [
        Array3::<f32>::zeros((4, 48, 40)),
        Array3::zeros((5, 48, 42)),
    ] {
        match aligned.corrected(&mut other, Target::Cpu) {
            Err(Error::InvalidArgument { name, message }) => {
                assert_eq!(name, "frames");
                assert!(message.contains("5 frames of 48x40"), "{message}");
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}

/// The groups' amplitude spectra, summed, are those of each group's frames moved and added,
/// transformed by the FFT module and centred by `fftshift`, for even and odd frames; the
/// other sums of the same reading are those made apart; a group of 0 frames is refused.
#[test]
fn grouped_amplitude_spectra_are_the_groups_transformed_and_centred() {
    use ufunc::fft::{fft2, fftshift};
    use ufunc::num_complex::Complex32;
    use ufunc::registration::{aligned_sums, even_odd_sums, shifted_sum, SumsWanted};
    for shape in [(48, 40), (47, 41)] {
        let mut m = movie(7, shape, 20.0, 11);
        let aligned = align_movie(&mut m, &AlignOptions::default()).unwrap();
        let mut expected = Array2::<f32>::zeros(shape);
        for start in [0, 3, 6] {
            let end = (start + 3).min(7);
            let mut group = m.slice(ndarray::s![start..end, .., ..]).to_owned();
            let sum = shifted_sum(&mut group, &aligned.shifts[start..end], Target::Cpu).unwrap();
            let spectrum = fft2(&sum.mapv(|v| Complex32::new(v, 0.0))).unwrap();
            expected += &fftshift(&spectrum.mapv(|c| c.norm() / (shape.0 * shape.1) as f32));
        }
        for target in [Target::Cpu, Target::Parallel] {
            let wanted = SumsWanted {
                halves: true,
                spectrum_group: Some(3),
                ..Default::default()
            };
            let sums = aligned_sums(&mut m, &aligned.shifts, &wanted, target).unwrap();
            let spectrum = sums.spectrum.unwrap();
            let scale = expected.iter().fold(0f32, |s, v| s.max(*v));
            // Row and column 0 of an even side are its Nyquist frequency, where a sub-pixel
            // shift leaves an imaginary part that a real image (the group's sum) cannot hold.
            let inner = |a: &Array2<f32>| {
                a.slice(ndarray::s![1 - shape.0 % 2.., 1 - shape.1 % 2..])
                    .to_owned()
            };
            let worst = (inner(&spectrum) - inner(&expected))
                .iter()
                .fold(0f32, |w, d| w.max(d.abs()));
            assert!(worst < 1e-5 * scale, "{shape:?}: off by {worst} of {scale}");
            let nyquist = (&spectrum - &expected)
                .row(0)
                .iter()
                .fold(0f32, |w, d| w.max(d.abs()));
            assert!(
                nyquist < 1e-2 * scale,
                "{shape:?}: Nyquist off by {nyquist}"
            );
            assert_eq!(
                sums.halves.unwrap(),
                even_odd_sums(&mut m, &aligned.shifts, target).unwrap()
            );
            assert!(sums.weighted.is_none());
        }
    }
    let mut m = movie(3, (16, 16), 20.0, 12);
    let wanted = SumsWanted {
        spectrum_group: Some(0),
        ..Default::default()
    };
    match aligned_sums(&mut m, &[[0.0; 2]; 3], &wanted, Target::Cpu) {
        Err(Error::InvalidArgument { name, .. }) => assert_eq!(name, "spectrum_group"),
        other => panic!("{other:?}"),
    }
    let nothing = aligned_sums(&mut m, &[[0.0; 2]; 3], &SumsWanted::default(), Target::Cpu);
    assert_eq!(nothing.unwrap(), Default::default());
}
