//! Registration on the `cuda` target against `parallel` (itself checked against scikit-image):
//! `Correlator` and `phase_cross_correlation` give the same shifts (quantised to 1/U: equal
//! unless a peak sits on a tie), `error` and `phasediff` within 1e-4; `align_movie` the same
//! shifts within one 1/U step, peak heights within 1e-4 and aligned sums within 1e-4 of the
//! largest value; each registration reads
//! back one small array; inputs the target cannot take are errors.

use super::common::{blobs, drift, movie, movie_along, warped_frame, CountingReads, Lcg};
use super::on_gpu;
use ndarray::{Array2, Array3, Axis};
use ufunc::cuda::cuda_counters;
use ufunc::registration::{
    align_movie, align_patches, phase_cross_correlation, release_device_memory, AlignOptions,
    Correlator, Normalization, PatchOptions, PccOptions, Reference,
};
use ufunc::{Error, Target};

/// Shifts agree within `tol` on every axis.
fn same_shift(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "{what}: {got:?} vs {want:?}");
    }
}

/// Aligned sums agree within 1e-4 of the largest value.
fn same_sum(what: &str, got: &Array2<f32>, want: &Array2<f32>) {
    let scale = want.iter().fold(0.0f32, |a, v| a.max(v.abs()));
    let err = (got - want).iter().fold(0.0f32, |a, v| a.max(v.abs()));
    assert!(
        err <= 1e-4 * scale,
        "{what}: sum differs by {err} of {scale}"
    );
}

fn frames(shape: (usize, usize), n: usize, seed: u64) -> Array3<f32> {
    movie(n, shape, 300.0, seed)
}

#[test]
fn correlator_on_cuda_matches_parallel() {
    on_gpu("correlator_on_cuda_matches_parallel", || {
        // With four threads a frame is staged through page-locked memory in pieces; with one
        // the driver copies it from the caller's memory.
        let pool = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
        };
        let (staged, direct) = (pool(4), pool(1));
        for (shape, upsample, normalization) in [
            ((48, 64), 1, Normalization::Phase),
            ((48, 64), 20, Normalization::Phase),
            ((45, 61), 10, Normalization::Off),
            ((33, 40), 4, Normalization::Phase),
            // More values than one piece of the staged copy (65536).
            ((256, 300), 2, Normalization::Phase),
        ] {
            let m = frames(shape, 4, 7);
            let options = |target| PccOptions {
                upsample_factor: upsample,
                normalization,
                target,
                ..Default::default()
            };
            let reference = m.index_axis(Axis(0), 0);
            let cuda = Correlator::new(&reference, &options(Target::Cuda)).unwrap();
            let host = Correlator::new(&reference, &options(Target::Parallel)).unwrap();
            for i in 1..4 {
                let frame = m.index_axis(Axis(0), i);
                let before = cuda_counters();
                let threads = if i % 2 == 1 { &staged } else { &direct };
                let got = threads.install(|| cuda.register(&frame)).unwrap();
                let after = cuda_counters();
                let reads = after.device_to_host - before.device_to_host;
                let allocations = after.allocations - before.allocations;
                let launches = after.launches - before.launches;
                let want = host.register(&frame).unwrap();
                let what = format!("{shape:?} U={upsample} {normalization:?} frame {i}");
                same_shift(&what, &got.shift, &want.shift, 1e-9);
                assert!(
                    (got.error - want.error).abs() < 1e-4,
                    "{what}: {got:?} {want:?}"
                );
                assert!((got.phasediff - want.phasediff).abs() < 1e-4, "{what}");
                // The peak, its refinement and the powers are chosen on the device: one read.
                assert_eq!(reads, 1, "{what}: {reads} reads from the device");
                // The reductions and the refinement reuse the lane's workspace (they made
                // eighteen allocations a frame). Left: the frame, its spectrum, the state,
                // the product with its status word and two shape and stride arrays, the
                // inverse's copy of its input and its output; the stream's first support
                // kernel makes the word those share.
                assert!(
                    allocations <= 10,
                    "{what}: {allocations} device allocations"
                );
                // The transforms (two stages each, and the inverse's copy of its input) and the
                // product: six; the two powers side by side: four; the peak: three; the
                // refinement: seven.
                let most = if upsample > 1 { 20 } else { 13 };
                assert!(launches <= most, "{what}: {launches} launches, over {most}");
            }
        }
    });
}

/// Ties: the device's peak and refinement (each folded by a block of threads in its own
/// grouping) pick the candidate the host's argmax picks, the first; and a frame that is not
/// finite fails on the device as on the host.
#[test]
fn ties_and_infinite_frames_go_as_on_the_host() {
    on_gpu("ties_and_infinite_frames_go_as_on_the_host", || {
        let constant = Array2::from_elem((36, 50), 3.0f32);
        // Two copies of one spot: two equal peaks of the cross-correlation.
        let mut spots = Array2::zeros((36, 50));
        spots[[5, 7]] = 1.0f32;
        spots[[5 + 18, 7 + 25]] = 1.0;
        let mut spot = Array2::zeros((36, 50));
        spot[[10, 10]] = 1.0f32;
        let options = |upsample_factor, target| PccOptions {
            upsample_factor,
            target,
            ..Default::default()
        };
        for (what, reference, moving) in [
            ("constant", &constant, &constant),
            ("two equal peaks", &spot, &spots),
        ] {
            for upsample in [1, 20] {
                let got =
                    phase_cross_correlation(reference, moving, &options(upsample, Target::Cuda));
                let want = phase_cross_correlation(
                    reference,
                    moving,
                    &options(upsample, Target::Parallel),
                );
                let (got, want) = (got.unwrap(), want.unwrap());
                same_shift(
                    &format!("{what}, U={upsample}"),
                    &got.shift,
                    &want.shift,
                    1e-9,
                );
            }
        }
        let mut infinite = frames((36, 50), 1, 3).index_axis_move(Axis(0), 0);
        infinite[[4, 9]] = f32::INFINITY;
        for target in [Target::Cuda, Target::Parallel] {
            let e = phase_cross_correlation(&infinite, &infinite, &options(20, target));
            assert!(e.is_err(), "{target:?}: {e:?}");
        }
    });
}

#[test]
fn phase_cross_correlation_on_cuda() {
    on_gpu("phase_cross_correlation_on_cuda", || {
        let m = frames((40, 52), 3, 11);
        let (a, b) = (m.index_axis(Axis(0), 0), m.index_axis(Axis(0), 2));
        let options = |target| PccOptions {
            upsample_factor: 8,
            target,
            ..Default::default()
        };
        let got = phase_cross_correlation(&a, &b, &options(Target::Cuda)).unwrap();
        let want = phase_cross_correlation(&a, &b, &options(Target::Parallel)).unwrap();
        same_shift("pcc", &got.shift, &want.shift, 1e-9);
        // The drift between frames 0 and 2, to within a pixel (noise).
        let d = drift(2);
        same_shift("truth", &got.shift, &[-d[0], -d[1]], 1.0);

        // `disambiguate`: crops of one frame 27 rows apart (past half of 40), by the function
        // and through a correlator, as on the host.
        let tall = frames((67, 40), 1, 12);
        let (crop_a, crop_b) = (
            tall.slice(ndarray::s![0, 0..40, ..]).to_owned(),
            tall.slice(ndarray::s![0, 27..67, ..]).to_owned(),
        );
        let disambiguating = |target| PccOptions {
            disambiguate: true,
            ..options(target)
        };
        let got = phase_cross_correlation(&crop_a, &crop_b, &disambiguating(Target::Cuda)).unwrap();
        let want =
            phase_cross_correlation(&crop_a, &crop_b, &disambiguating(Target::Parallel)).unwrap();
        assert_eq!(got.shift, want.shift);
        same_shift("disambiguated", &got.shift, &[27.0, 0.0], 0.26);
        let correlator = Correlator::new(&crop_a, &disambiguating(Target::Cuda)).unwrap();
        assert_eq!(correlator.register(&crop_b).unwrap().shift, want.shift);

        // What the target does not take: f64 images, 3-d inputs.
        let a64 = a.mapv(f64::from);
        let e = phase_cross_correlation(&a64, &a64, &options(Target::Cuda)).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument { name: "target", .. }),
            "{e}"
        );
        assert!(e.to_string().contains("f64"), "{e}");
        let e = phase_cross_correlation(&m, &m, &options(Target::Cuda)).unwrap_err();
        assert!(e.to_string().contains("3-d"), "{e}");
        let e = Correlator::new(&Array2::<f32>::zeros((0, 4)), &options(Target::Cuda));
        assert!(e.is_err());
    });
}

#[test]
fn the_next_movie_of_a_batch_reuses_the_streams_and_workspaces() {
    on_gpu(
        "the_next_movie_of_a_batch_reuses_the_streams_and_workspaces",
        || {
            let options = AlignOptions {
                target: Target::Cuda,
                ..Default::default()
            };
            // Device allocations and page-locked buffers of one call.
            let align = |m: &Array3<f32>| {
                let before = cuda_counters();
                let a = align_movie(&mut m.clone(), &options).unwrap();
                let after = cuda_counters();
                let made = (
                    after.allocations - before.allocations,
                    after.page_locked_allocations - before.page_locked_allocations,
                );
                (a, made)
            };
            let (a, b) = (frames((48, 40), 5, 21), frames((40, 48), 5, 22));
            release_device_memory();
            let (first, made) = align(&a);
            let (again, reused) = align(&a);
            // Each of the two workspaces holds a dozen buffers or more; the two page-locked
            // frames are made once.
            assert_eq!((made.1, reused.1), (2, 0));
            assert!(
                reused.0 + 24 <= made.0,
                "{reused:?} allocations in the second call, {made:?} in the first"
            );
            assert_eq!(first.shifts, again.shifts);
            assert_eq!(first.peaks, again.peaks);
            assert_eq!(first.sum, again.sum);
            // Another shape takes new lanes; the first shape's then come anew too, as after
            // a release.
            assert_eq!(align(&b).1 .1, 2);
            let (back, remade) = align(&a);
            assert_eq!(remade.1, 2);
            assert!(
                remade.0 >= reused.0 + 24,
                "{remade:?} back at the first shape"
            );
            assert_eq!(back.shifts, first.shifts);
            assert_eq!(back.sum, first.sum);
            assert!(release_device_memory());
            assert_eq!(align(&a).1 .1, 2);
            // A call that fails keeps nothing.
            let mut bad = a.clone();
            bad[[3, 1, 1]] = f32::NAN;
            assert!(align_movie(&mut bad, &options).is_err());
            assert!(!release_device_memory());
        },
    );
}

/// Local alignment on `cuda` aligns the whole frames and each patch on the device (the cut,
/// the model and the sum stay on the host): the patches' drift and the sum as on `parallel`.
#[test]
fn align_patches_on_cuda_matches_parallel() {
    on_gpu("align_patches_on_cuda_matches_parallel", || {
        // A specimen that turns as it drifts: 1.5 px at the edges' middles by the last frame.
        let mut rng = Lcg(5);
        let specimen = blobs(34, (96, 96), &mut rng);
        let mut m = Array3::zeros((6, 96, 96));
        for t in 0..6 {
            let turn = 1.5 / 48.0 * t as f64 / 5.0;
            let moved = |y: f64, x: f64| {
                let g = drift(t);
                [g[0] + turn * (x - 48.0), g[1] - turn * (y - 48.0)]
            };
            let frame = warped_frame((96, 96), moved, 300.0, &specimen, &mut rng);
            m.index_axis_mut(Axis(0), t).assign(&frame);
        }
        let on = |target, m: &mut Array3<f32>| {
            let options = PatchOptions {
                grid: (3, 3),
                align: AlignOptions {
                    target,
                    ..Default::default()
                },
                ..Default::default()
            };
            align_patches(m, &options).unwrap()
        };
        let (got, want) = (on(Target::Cuda, &mut m), on(Target::Parallel, &mut m));
        let step = 1.0 / 20.0 + 1e-9;
        for (i, (g, w)) in got
            .global
            .shifts
            .iter()
            .zip(&want.global.shifts)
            .enumerate()
        {
            same_shift(&format!("whole frame {i}"), g, w, step);
        }
        assert_eq!(got.patches.len(), 9);
        // The corner patches are left a pixel of drift or so: the device has some to find.
        let largest = want
            .patches
            .iter()
            .flat_map(|p| &p.shifts)
            .map(|s| s[0].hypot(s[1]));
        assert!(largest.fold(0.0, f64::max) > 0.8);
        for (p, (g, w)) in got.patches.iter().zip(&want.patches).enumerate() {
            assert_eq!(g.origin, w.origin);
            for (i, (a, b)) in g.shifts.iter().zip(&w.shifts).enumerate() {
                same_shift(&format!("patch {p}, frame {i}"), a, b, step);
            }
        }
        same_sum("local sum", &got.sum, &want.sum);
    });
}

#[test]
fn align_movie_on_cuda_matches_parallel() {
    on_gpu("align_movie_on_cuda_matches_parallel", || {
        let m = frames((64, 56), 6, 3);
        for (what, options) in [
            (
                "first",
                AlignOptions {
                    reference: Reference::First,
                    ..Default::default()
                },
            ),
            ("sum", AlignOptions::default()),
            (
                "sum, phase, streamed",
                AlignOptions {
                    normalization: Normalization::Phase,
                    memory_limit: 0,
                    upsample_factor: 10,
                    ..Default::default()
                },
            ),
            (
                "sum, cropped, tapered",
                AlignOptions {
                    max_size: 32,
                    taper: 0.2,
                    ..Default::default()
                },
            ),
            (
                "sum, whole pixels",
                AlignOptions {
                    upsample_factor: 1,
                    ..Default::default()
                },
            ),
            (
                "sum, groups of 2",
                AlignOptions {
                    group: 2,
                    ..Default::default()
                },
            ),
        ] {
            let on = |target| {
                let options = AlignOptions { target, ..options };
                align_movie(&mut m.clone(), &options).unwrap()
            };
            let before = cuda_counters().device_to_host;
            let got = on(Target::Cuda);
            let reads = cuda_counters().device_to_host - before;
            let want = on(Target::Parallel);
            // Per frame and pass one read, its registration's state; then the sum.
            let most = m.shape()[0] * got.iterations + 1;
            assert!(
                reads <= most,
                "{what}: {reads} reads from the device, over {most}"
            );
            // Passes stop when no shift changes by more than the tolerance (one 1/U step
            // here): a peak on a near-tie may take another pass on one target.
            assert!(
                got.iterations.abs_diff(want.iterations) <= 3,
                "{what}: passes"
            );
            assert_eq!(got.alignment_shape, want.alignment_shape, "{what}");
            // A group's shift one step off moves its frames' interpolated shifts by up to
            // three (extrapolated past the middles, then made relative to frame 0's).
            let steps = if options.group > 1 { 3.0 } else { 1.0 };
            let step = steps / options.upsample_factor as f64 + 1e-9;
            for (i, (g, w)) in got.shifts.iter().zip(&want.shifts).enumerate() {
                same_shift(&format!("{what}: frame {i}"), g, w, step);
            }
            for (g, w) in got.peaks.iter().zip(&want.peaks) {
                assert!((g - w).abs() < 1e-4, "{what}: peaks {g} vs {w}");
            }
            same_sum(what, &got.sum, &want.sum);
        }
        // Lengths whose transforms are slow: both targets align at fast ones within them,
        // reading the crop out of the full spectra they keep, so the frames are read once
        // (the sum comes from the last pass); the same when the frames are cropped by
        // `max_size` as well, and streamed, each pass reading the frames again. Streamed and
        // cropped, the spectra kept are `max_size`'s crop, the registered one is cut out of
        // them, and the sum reads the frames once more.
        let slow = frames((262, 279), 4, 9);
        for (what, options) in [
            ("slow lengths", AlignOptions::default()),
            (
                "slow lengths, cropped",
                AlignOptions {
                    max_size: 261,
                    ..Default::default()
                },
            ),
            (
                "slow lengths, streamed",
                AlignOptions {
                    memory_limit: 0,
                    ..Default::default()
                },
            ),
            (
                "slow lengths, cropped, streamed",
                AlignOptions {
                    max_size: 261,
                    memory_limit: 0,
                    ..Default::default()
                },
            ),
        ] {
            let on = |target| {
                let mut counted = CountingReads::new(slow.clone());
                let options = AlignOptions { target, ..options };
                let a = align_movie(&mut counted, &options).unwrap();
                (a, counted.reads)
            };
            let ((got, got_reads), (want, want_reads)) = (on(Target::Cuda), on(Target::Parallel));
            assert_eq!(got.alignment_shape, want.alignment_shape, "{what}");
            assert_eq!(got_reads, want_reads, "{what}: frames read");
            // Every pass reads the frames when streamed (one more than the iterations, where
            // no pass was damped, as here), and the sum once more where the spectra are not
            // the frames'.
            let reads = match (options.memory_limit, options.max_size) {
                (0, 261) => 4 * (2 + got.iterations),
                (0, _) => 4 * (1 + got.iterations),
                _ => 4,
            };
            assert_eq!(got_reads, reads, "{what}: frames read");
            // One step of 1/20 of an aligned pixel on each axis, in the frame's pixels.
            let (a, f) = (got.alignment_shape, slow.dim());
            let steps = [f.1 as f64 / a.0 as f64, f.2 as f64 / a.1 as f64].map(|s| s / 20.0);
            for (i, (g, w)) in got.shifts.iter().zip(&want.shifts).enumerate() {
                for axis in 0..2 {
                    let d = (g[axis] - w[axis]).abs();
                    assert!(d <= steps[axis] + 1e-9, "{what}: frame {i}: {g:?} vs {w:?}");
                }
            }
            same_sum(what, &got.sum, &want.sum);
        }
        assert_eq!(
            align_movie(&mut slow.clone(), &AlignOptions::default())
                .unwrap()
                .alignment_shape,
            (256, 275)
        );
        // Frames far from zero mean: the means are left out of the device's correlation and
        // energies as of the host's, and kept in the sum.
        let far = m.mapv(|v| v + 30000.0);
        for reference in [Reference::First, Reference::Sum] {
            let on = |target| {
                let options = AlignOptions {
                    target,
                    reference,
                    ..Default::default()
                };
                align_movie(&mut far.clone(), &options).unwrap()
            };
            let (got, want) = (on(Target::Cuda), on(Target::Parallel));
            for (i, (g, w)) in got.shifts.iter().zip(&want.shifts).enumerate() {
                same_shift(
                    &format!("mean 30000, {reference:?}: frame {i}"),
                    g,
                    w,
                    0.05 + 1e-9,
                );
            }
            for (g, w) in got.peaks.iter().zip(&want.peaks) {
                assert!((g - w).abs() < 1e-3, "mean 30000: peaks {g} vs {w}");
            }
            let (g, w) = (got.sum.mean().unwrap(), want.sum.mean().unwrap());
            assert!(
                (g - w).abs() <= 1e-4 * w,
                "mean 30000: sums' means {g} vs {w}"
            );
        }
        // Blank frames (frame 0 among them): no shift and peak 0, the others relative to
        // frame 1, on the device as on the host; with the first frame as reference, an error.
        let mut blank = m.clone();
        blank.index_axis_mut(ndarray::Axis(0), 0).fill(0.0);
        blank.index_axis_mut(ndarray::Axis(0), 4).fill(77.0);
        for reference in [Reference::Sum, Reference::First] {
            let on = |target| {
                let options = AlignOptions {
                    target,
                    reference,
                    ..Default::default()
                };
                align_movie(&mut blank.clone(), &options)
            };
            let (got, want) = (on(Target::Cuda), on(Target::Parallel));
            if reference == Reference::First {
                let (got, want) = (got.unwrap_err(), want.unwrap_err());
                assert_eq!(got.to_string(), want.to_string());
                continue;
            }
            let (got, want) = (got.unwrap(), want.unwrap());
            for (i, (g, w)) in got.shifts.iter().zip(&want.shifts).enumerate() {
                same_shift(&format!("blank frames: frame {i}"), g, w, 0.05 + 1e-9);
            }
            assert_eq!((got.peaks[0], got.peaks[4]), (0.0, 0.0), "{:?}", got.peaks);
            assert_eq!((got.shifts[0], got.shifts[4]), ([0.0; 2], [0.0; 2]));
            for (g, w) in got.peaks.iter().zip(&want.peaks) {
                assert!((g - w).abs() < 1e-3, "blank frames: peaks {g} vs {w}");
            }
        }
        // Two groups of frames that swapped places every pass: damped on the device as on
        // the host (with the frames kept on the device, and read again for every pass).
        let jump = [9.3, -7.6];
        let at = [[0.0; 2], [0.0; 2], jump, jump];
        let groups = movie_along(&at, (96, 80), 400.0, 11);
        for memory_limit in [usize::MAX, 0] {
            let on = |target, max_iterations| {
                let options = AlignOptions {
                    target,
                    memory_limit,
                    max_iterations,
                    ..Default::default()
                };
                align_movie(&mut groups.clone(), &options).unwrap()
            };
            let (got, want) = (on(Target::Cuda, 10), on(Target::Parallel, 10));
            let what = format!("two groups, memory limit {memory_limit}");
            assert!(got.converged, "{what}: {} passes", got.iterations);
            // A peak on a near-tie may take another pass on one target.
            assert!(got.iterations.abs_diff(want.iterations) <= 1, "{what}");
            for (i, (g, t)) in got.shifts.iter().zip(&at).enumerate() {
                same_shift(&format!("{what}: frame {i}"), g, &[-t[0], -t[1]], 0.1);
            }
            same_sum(&what, &got.sum, &want.sum);
            // The second pass damps every frame (each group's step back to where it began
            // is halved, so the two meet): the sum is the one added up at the damped shifts,
            // the groups already within a pixel of the jump.
            let (got, want) = (on(Target::Cuda, 2), on(Target::Parallel, 2));
            let what = format!("{what}, stopped after a damped pass");
            assert!(!got.converged, "{what}");
            for (i, (g, w)) in got.shifts.iter().zip(&want.shifts).enumerate() {
                same_shift(&format!("{what}: frame {i}"), g, w, 0.05 + 1e-9);
            }
            for (i, (g, t)) in got.shifts.iter().zip(&at).enumerate() {
                same_shift(&format!("{what}: frame {i}"), g, &[-t[0], -t[1]], 1.0);
            }
            same_sum(&what, &got.sum, &want.sum);
        }
        // Frames one row high: no shift along the rows, on the device as on the host.
        let rows = frames((1, 64), 4, 9);
        let on = |target| {
            let options = AlignOptions {
                target,
                ..Default::default()
            };
            align_movie(&mut rows.clone(), &options).unwrap().shifts
        };
        let (got, want) = (on(Target::Cuda), on(Target::Parallel));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g[0], 0.0, "one row: frame {i}");
            same_shift(&format!("one row: frame {i}"), g, w, 0.05 + 1e-9);
        }
        // A lone frame is its own reference: no pass, peak 1, on the device as on the host.
        let lone = frames((32, 40), 1, 5);
        for target in [Target::Cuda, Target::Parallel] {
            let options = AlignOptions {
                target,
                ..Default::default()
            };
            let a = align_movie(&mut lone.clone(), &options).unwrap();
            assert_eq!(
                (a.shifts, a.peaks, a.iterations),
                (vec![[0.0, 0.0]], vec![1.0], 0),
                "{target:?}"
            );
        }
    });
}
