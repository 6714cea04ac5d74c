//! Frame grouping ([`AlignOptions::group`], MotionCor2's `-Group`): consecutive frames are
//! added into groups, the groups are aligned as frames, and each frame's shift is interpolated
//! between the groups' at their middle frames. A movie of very low dose per frame (a
//! high-frame-rate counting movie, an EER file rendered finely) has too little signal in one
//! frame for its peak; a group of G frames has G times the counts.

use super::align::{
    align_each_frame, check, host_threads, nothing_registered, read_one, streamed_sum, Alignment,
    FrameSource, InnerFrameError, Summed,
};
use super::pcc::ImagePlan;
use super::AlignOptions;
use crate::error::{Error, Result};
use ndarray::{Array2, ArrayViewMut2};

/// Consecutive frames split into groups of `group` frames, as RELION's motion correction
/// splits them: where the frames do not divide evenly, the frames left over are handed out
/// one at a time from the last group back to the second, and again, so that the first group,
/// where the drift is fastest, keeps `group`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Groups {
    /// The first frame of each group, and the frames in it.
    starts: Vec<usize>,
    sizes: Vec<usize>,
}

impl Groups {
    /// The groups of `frames` frames; an error where fewer than two groups result, as the
    /// frames' shifts are interpolated between groups.
    pub(super) fn new(frames: usize, group: usize) -> Result<Groups> {
        let count = frames / group.max(1);
        if group == 0 || count < 2 {
            return Err(Error::InvalidArgument {
                name: "group",
                message: format!(
                    "frames are aligned in groups of {group}, and a movie of {frames} frames \
                     needs at least 2 groups of at least 1 frame to interpolate its shifts \
                     between: use a group of at most {}",
                    (frames / 2).max(1)
                ),
            });
        }
        let mut sizes = vec![group; count];
        for k in 0..frames % group {
            sizes[count - 1 - k % (count - 1)] += 1;
        }
        debug_assert_eq!(sizes.iter().sum::<usize>(), frames);
        let starts = sizes
            .iter()
            .scan(0, |start, &size| {
                let first = *start;
                *start += size;
                Some(first)
            })
            .collect();
        Ok(Groups { starts, sizes })
    }

    fn len(&self) -> usize {
        self.sizes.len()
    }

    /// The frames of group `g`.
    fn frames(&self, g: usize) -> std::ops::Range<usize> {
        self.starts[g]..self.starts[g] + self.sizes[g]
    }

    /// The middle of group `g`, as a frame index (between two frames for an even size).
    fn middle(&self, g: usize) -> f64 {
        self.starts[g] as f64 + (self.sizes[g] - 1) as f64 / 2.0
    }

    /// Each frame's shift and peak from its group's: the shifts interpolated linearly between
    /// the groups' middles (and extrapolated along the first and last segments), a group with
    /// nothing to register (peak 0) left out of it, its frames unmoved with peak 0; relative to
    /// the first frame that had something to register.
    pub(super) fn per_frame(
        &self,
        shifts: &[[f64; 2]],
        peaks: &[f64],
    ) -> (Vec<[f64; 2]>, Vec<f64>) {
        let anchors: Vec<(f64, [f64; 2])> = (0..self.len())
            .filter(|&g| !nothing_registered(peaks[g]))
            .map(|g| (self.middle(g), shifts[g]))
            .collect();
        let at = |frame: f64| -> [f64; 2] {
            match anchors.len() {
                0 => [0.0; 2],
                1 => anchors[0].1,
                n => {
                    // The segment whose start is the last middle at or before `frame`, within
                    // the first and last segments.
                    let k = anchors
                        .iter()
                        .rposition(|a| a.0 <= frame)
                        .unwrap_or(0)
                        .min(n - 2);
                    let ((c0, s0), (c1, s1)) = (anchors[k], anchors[k + 1]);
                    let t = (frame - c0) / (c1 - c0);
                    [s0[0] + t * (s1[0] - s0[0]), s0[1] + t * (s1[1] - s0[1])]
                }
            }
        };
        let frames = self.starts[self.len() - 1] + self.sizes[self.len() - 1];
        let mut frame_shifts = vec![[0.0; 2]; frames];
        let mut frame_peaks = vec![0.0; frames];
        for (g, &peak) in peaks.iter().enumerate().take(self.len()) {
            for i in self.frames(g) {
                frame_peaks[i] = peak;
                if !nothing_registered(peak) {
                    frame_shifts[i] = at(i as f64);
                }
            }
        }
        if let Some(first) = frame_peaks.iter().position(|&p| !nothing_registered(p)) {
            let origin = frame_shifts[first];
            for (s, &p) in frame_shifts.iter_mut().zip(&frame_peaks) {
                if !nothing_registered(p) {
                    *s = [s[0] - origin[0], s[1] - origin[1]];
                }
            }
        }
        (frame_shifts, frame_peaks)
    }
}

/// The frames of a source added in [`Groups`]: a source of one frame per group.
struct GroupedFrames<'a, S: ?Sized> {
    frames: &'a mut S,
    groups: &'a Groups,
    scratch: Array2<f32>,
}

impl<S: FrameSource + ?Sized> FrameSource for GroupedFrames<'_, S> {
    fn frame_shape(&self) -> (usize, usize) {
        self.frames.frame_shape()
    }
    fn len(&self) -> usize {
        self.groups.len()
    }
    fn read_frame(
        &mut self,
        index: usize,
        mut out: ArrayViewMut2<'_, f32>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        out.fill(0.0);
        for i in self.groups.frames(index) {
            read_one(self.frames, i, self.scratch.view_mut()).map_err(InnerFrameError)?;
            out += &self.scratch;
        }
        Ok(())
    }
}

/// [`align_movie`](super::align_movie) with [`AlignOptions::group`] > 1: the groups aligned as frames (on the
/// options' target), then the frames read once more and added at their interpolated shifts
/// on the host's cores (all of them but with `Target::Cpu`).
pub(super) fn align_grouped<S: FrameSource + ?Sized>(
    frames: &mut S,
    options: &AlignOptions,
) -> Result<Alignment> {
    check(frames, options)?;
    let groups = Groups::new(frames.len(), options.group)?;
    let (ny, nx) = frames.frame_shape();
    let scratch = crate::alloc::try_zeroed_fft(&ndarray::Ix2(ny, nx))?;
    let grouped = align_each_frame(
        &mut GroupedFrames {
            frames,
            groups: &groups,
            scratch,
        },
        &AlignOptions {
            group: 1,
            ..*options
        },
        Summed::No,
    )?;
    let (shifts, peaks) = groups.per_frame(&grouped.shifts, &grouped.peaks);
    let threads = host_threads(options.target);
    let plan = ImagePlan::<f32>::new(ny, nx)?;
    let sum = streamed_sum(frames, &shifts, &plan, threads, None)?;
    Ok(Alignment {
        shifts,
        peaks,
        sum,
        ..grouped
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_split_as_relion_splits_them() {
        let g = Groups::new(10, 3).unwrap();
        assert_eq!(
            (g.starts.as_slice(), g.sizes.as_slice()),
            (&[0, 3, 6][..], &[3, 3, 4][..])
        );
        let g = Groups::new(11, 3).unwrap();
        assert_eq!(
            (g.starts.as_slice(), g.sizes.as_slice()),
            (&[0, 3, 7][..], &[3, 4, 4][..])
        );
        // More frames left over than groups after the first: handed out again.
        for (frames, group, sizes) in [
            (11, 4, &[4, 7][..]),
            (10, 4, &[4, 6][..]),
            (31, 8, &[8, 11, 12][..]),
            (40, 12, &[12, 14, 14][..]),
        ] {
            let g = Groups::new(frames, group).unwrap();
            assert_eq!(g.sizes, sizes, "{frames} in groups of {group}");
            assert_eq!(g.starts[g.len() - 1] + g.sizes[g.len() - 1], frames);
        }
        let g = Groups::new(8, 4).unwrap();
        assert_eq!(
            (g.starts.as_slice(), g.sizes.as_slice()),
            (&[0, 4][..], &[4, 4][..])
        );
        assert_eq!((g.middle(0), g.middle(1)), (1.5, 5.5));
        for (frames, group) in [(7, 4), (3, 2), (5, 0)] {
            let Err(Error::InvalidArgument { name, message }) = Groups::new(frames, group) else {
                panic!("{frames} frames in groups of {group}");
            };
            assert_eq!(name, "group");
            assert!(message.contains(&format!("groups of {group}")), "{message}");
        }
    }

    /// A drift linear in the frame number is found exactly for every frame, extrapolated to
    /// the first and last; a blank group's frames stay unmoved.
    #[test]
    fn shifts_are_interpolated_between_the_groups_middles() {
        let g = Groups::new(10, 3).unwrap(); // middles 1, 4, 7.5
        let line = |t: f64| [0.5 * t, -0.25 * t];
        let group_shifts: Vec<[f64; 2]> = [1.0, 4.0, 7.5].iter().map(|&m| line(m)).collect();
        let (shifts, peaks) = g.per_frame(&group_shifts, &[0.3, 0.4, 0.5]);
        for (i, s) in shifts.iter().enumerate() {
            let want = line(i as f64);
            assert!(
                (s[0] - want[0]).abs() < 1e-12 && (s[1] - want[1]).abs() < 1e-12,
                "{i}: {s:?}"
            );
        }
        assert_eq!(peaks, [0.3, 0.3, 0.3, 0.4, 0.4, 0.4, 0.5, 0.5, 0.5, 0.5]);

        // Group 1 blank: frames 3-5 unmoved, the others on the line through groups 0 and 2.
        let (shifts, peaks) = g.per_frame(&group_shifts, &[0.3, 0.0, 0.5]);
        for (i, s) in shifts.iter().enumerate() {
            let want = if (3..6).contains(&i) {
                [0.0; 2]
            } else {
                line(i as f64)
            };
            assert!(
                (s[0] - want[0]).abs() < 1e-12 && (s[1] - want[1]).abs() < 1e-12,
                "{i}: {s:?}"
            );
        }
        assert_eq!(peaks[4], 0.0);
        // Group 0 blank: relative to frame 3, the first with something registered.
        let (shifts, _) = g.per_frame(&group_shifts, &[0.0, 0.4, 0.5]);
        assert_eq!(shifts[0], [0.0; 2]);
        assert!((shifts[9][0] - 0.5 * 6.0).abs() < 1e-12, "{:?}", shifts[9]);
        // One group left: no drift to interpolate.
        let (shifts, _) = g.per_frame(&group_shifts, &[0.0, 0.0, 0.5]);
        assert!(shifts.iter().all(|s| *s == [0.0; 2]));
    }
}
