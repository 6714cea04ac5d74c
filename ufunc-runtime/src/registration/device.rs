//! The `cuda` target of registration: every step of a frame's registration on the device, in
//! the host's order and precision (real FFTs, the cross-power spectrum as
//! `#[vectorize(target = "cuda")]` complex kernels, the inverse, the integer peak, the upsampled
//! DFT around it, the coarse and refined peaks chosen there), so that one state of ten numbers
//! comes back per frame (`device.cuh` says which). Frames are read into page-locked buffers and
//! uploaded on two streams in turn, so that one frame's upload and kernels overlap the other's.
//! Reductions (powers, the peak) run over a fixed number of slots, so a result does not depend
//! on the device's grid: the simulator's and the GPU's agree.

use super::align::{
    bfactor_weights, check, copy_frame, iterate_on_sum, nothing_registered, read_one,
    relative_to_first, shift_phases, Found, Registered, SumPasses, Summed, Taper,
};
use super::pcc::{refinement_region, Peak};
use super::{AlignOptions, Alignment, FrameSource, Normalization, PccOptions, Reference};
use crate::cuda::{
    launch_support, launch_support_block, queue_of, wrap, Arg, Buffer, PinnedImage, Queue,
};
use crate::error::{Error, Result};
use crate::fft::{device as dfft, FftOptions, FftReal};
use crate::{to_device_on, DeviceArray, DeviceBuffer, Stream};
use ndarray::{Array2, ArrayView2, Ix1, Ix2};
use num_complex::Complex;
use ufunc_macros::vectorize;

type Spectrum = DeviceArray<Complex<f32>, Ix2>;

/// The host's `normalise(r conj(m), Phase)` times the B-factor weight: `z / max(|z|, 100 ε)`.
#[vectorize(target = "cuda")]
fn phase_cross_power(r: Complex<f32>, m: Complex<f32>, wy: f32, wx: f32) -> Complex<f32> {
    let z = r * m.conj();
    z / (z.re * z.re + z.im * z.im).sqrt().max(1.1920929e-5f32) * (wy * wx)
}

/// The plain cross-power spectrum times the B-factor weight.
#[vectorize(target = "cuda")]
fn plain_cross_power(r: Complex<f32>, m: Complex<f32>, wy: f32, wx: f32) -> Complex<f32> {
    r * m.conj() * (wy * wx)
}

/// The sum of the other frames: the total less `moving` moved by its shift (`py px`).
#[vectorize(target = "cuda")]
fn leave_out(
    total: Complex<f32>,
    moving: Complex<f32>,
    py: Complex<f32>,
    px: Complex<f32>,
) -> Complex<f32> {
    total - moving * (py * px)
}

/// `total` plus `spectrum` moved by `py px`.
#[vectorize(target = "cuda")]
fn add_moved(
    total: Complex<f32>,
    spectrum: Complex<f32>,
    py: Complex<f32>,
    px: Complex<f32>,
) -> Complex<f32> {
    total + spectrum * (py * px)
}

/// `spectrum` moved by `py px`.
#[vectorize(target = "cuda")]
fn moved(spectrum: Complex<f32>, py: Complex<f32>, px: Complex<f32>) -> Complex<f32> {
    spectrum * (py * px)
}

crate::cuda::support_kernels!(KERNELS, "ufunc_registration", include_str!("device.cuh"));

/// Slots of the power sums' stages: the first reads the data, the others the partials before
/// them; a single thread takes the last stage's. Enough slots to fill a GPU: with 4096, a
/// frame's three reductions took a millisecond on an H200 (each thread's loads one after
/// another). A fixed partition: the sums' rounding does not depend on the device's grid.
const SLOTS: [usize; 3] = [65536, 2048, 32];

/// The argmax's stages: the first reads the data, the second its candidates; one block folds
/// the second's in `ufunc_reg_peak` (any grouping picks the same candidate).
const ARGMAX_SLOTS: [usize; 2] = [65536, 2048];

/// Threads of the one-block kernels (`ufunc_reg_peak`, `ufunc_reg_refine`), whose shared
/// memory holds a candidate for each of up to 1024.
const BLOCK_THREADS: u32 = 256;
const _: () = assert!(BLOCK_THREADS <= 1024);

/// Terms per part of the upsampled DFT's sums (parts added in order afterwards), at least:
/// short parts keep many threads busy, each with a short chain of loads (on an H200 the two
/// sums and their parts took 207 us a frame with 128 terms, 176 us with 32). Longer where
/// there would be more than `MAX_SUM_PARTS` parts, whose memory grows with the image (with 32
/// terms, 252 MB a stream for 8192x8192 at U = 20).
const SUM_CHUNK: usize = 32;
const MAX_SUM_PARTS: usize = 64;

/// The terms per part and the parts of a sum over `n` terms.
fn sum_parts(n: usize) -> (usize, usize) {
    let chunk = SUM_CHUNK.max(n.div_ceil(MAX_SUM_PARTS));
    (chunk, n.div_ceil(chunk))
}

/// Rows of the upsampled grid per thread of `ufunc_reg_rows_times_half` (device.cuh's
/// `__UFUNC_REG_ROWS`).
const ROWS_PER_THREAD: usize = 8;

/// Doubles in a frame's registration state on the device (`device.cuh` says what each holds).
const STATE: usize = 10;

/// Where the state keeps `Σ|S|²` of the reference and of the moving spectrum (side by side:
/// `ufunc_reg_total` writes both).
const POWER_SLOTS: [usize; 2] = [8, 9];
const _: () = assert!(POWER_SLOTS[1] == POWER_SLOTS[0] + 1);

fn launch(queue: &Queue, entry: &'static str, items: usize, args: Vec<Arg<'_>>) -> Result<()> {
    launch_support(queue, &KERNELS, entry, items, args)
}

/// Device memory of `dim`, written whole by a kernel before it is read.
fn scratch<T: crate::Element, D: ndarray::Dimension>(
    queue: &Queue,
    dim: D,
) -> Result<DeviceArray<T, D>> {
    let bytes = dim.size() * size_of::<T>();
    Ok(wrap(DeviceBuffer(queue.alloc(bytes)?), &dim))
}

/// Queues the Fourier crop of the half spectrum `from` into the smaller `out`: the lowest
/// frequencies of each sign on each axis (the host's `crop_half_spectrum`).
fn crop_into(queue: &Queue, from: &Spectrum, out: &mut Spectrum) -> Result<()> {
    let (ny, cols) = (from.shape()[0], from.shape()[1]);
    let (cy, m) = (out.shape()[0], out.shape()[1]);
    let mut args = i64s(&[ny, cols, cy, m]);
    args.extend([Arg::In(&from.buf.0, 0), Arg::Out(&mut out.buf.0)]);
    launch(queue, "ufunc_reg_crop", cy * m, args)
}

fn i64s(v: &[usize]) -> Vec<Arg<'static>> {
    v.iter().map(|&x| Arg::I64(x as i64)).collect()
}

/// Queues `Σ|S|²` over the full spectra of images `nx` wide, from their halves `a` and `b`,
/// into the state's power slots, through the stages' partial sums `sums` (both sums side by
/// side in each stage: four launches for the two).
fn queue_powers(
    queue: &Queue,
    (a, b): (&Spectrum, &Spectrum),
    nx: usize,
    state: &mut Buffer,
    sums: &mut [Buffer; 3],
) -> Result<()> {
    let (rows, cols) = (a.shape()[0], a.shape()[1]);
    let mut args = i64s(&[rows, cols, nx, SLOTS[0]]);
    args.extend([
        Arg::In(&a.buf.0, 0),
        Arg::In(&b.buf.0, 0),
        Arg::Out(&mut sums[0]),
    ]);
    launch(queue, "ufunc_reg_power", 2 * SLOTS[0], args)?;
    for stage in 1..SLOTS.len() {
        let (done, next) = sums.split_at_mut(stage);
        let mut args = i64s(&[SLOTS[stage - 1], SLOTS[stage], 2]);
        args.extend([Arg::In(&done[stage - 1], 0), Arg::Out(&mut next[0])]);
        launch(queue, "ufunc_reg_sum", 2 * SLOTS[stage], args)?;
    }
    let mut args = i64s(&[SLOTS[2], POWER_SLOTS[0]]);
    args.extend([Arg::In(&sums[2], 0), Arg::Out(state)]);
    launch(queue, "ufunc_reg_total", 2, args)
}

/// Queues the coarse peak of `cc` (the largest `|cc|`, its first index) into `state`, with the
/// grid of the upsampled DFT around it (`region` points per axis), through the stages'
/// candidates `best` and `at`.
fn queue_peak(
    queue: &Queue,
    cc: &DeviceArray<f32, Ix2>,
    (upsample, region): (u32, usize),
    state: &mut Buffer,
    (best, at): (&mut [Buffer; 2], &mut [Buffer; 2]),
) -> Result<()> {
    let [slots, pairs] = ARGMAX_SLOTS;
    let mut args = i64s(&[cc.len(), slots]);
    args.extend([
        Arg::In(&cc.buf.0, 0),
        Arg::Out(&mut best[0]),
        Arg::Out(&mut at[0]),
    ]);
    launch(queue, "ufunc_reg_argmax", slots, args)?;
    let ([best_in, best_out], [at_in, at_out]) = (best, at);
    let mut args = i64s(&[slots, pairs]);
    args.extend([
        Arg::In(best_in, 0),
        Arg::In(at_in, 0),
        Arg::Out(best_out),
        Arg::Out(at_out),
    ]);
    launch(queue, "ufunc_reg_argmax_pairs", pairs, args)?;
    let (ny, nx) = (cc.shape()[0], cc.shape()[1]);
    let mut args = i64s(&[pairs, ny, nx, upsample as usize, region]);
    args.extend([Arg::In(best_out, 0), Arg::In(at_out, 0), Arg::Out(state)]);
    launch_support_block(queue, &KERNELS, "ufunc_reg_peak", BLOCK_THREADS, args)
}

/// The device memory of one stream's registrations, made once and reused frame after frame
/// (each allocation is a few driver calls on a GPU, and a frame used to make some twenty):
/// the reductions' stages, the upsampled DFT's kernels and partial sums, a frame's phase
/// ramps. Frames on one stream run in its order, so they can share it.
struct Workspace {
    sums: [Buffer; 3],
    best: [Buffer; 2],
    at: [Buffer; 2],
    /// The upsampled DFT's, where there is one (`upsample` > 1).
    refinement: Option<Refinement>,
    /// Phase ramps `(rows, 1)` and `(1, cols)` that leave a frame out of the sum.
    ramps: (Spectrum, Spectrum),
}

/// The upsampled DFT's memory in a [`Workspace`].
struct Refinement {
    /// The DFT kernels of the rows and the columns, `region` x `ny` and `region` x `nx`.
    dft: [DeviceArray<Complex<f64>, Ix2>; 2],
    /// The row contraction in parts, then summed; the upsampled grid in parts, then summed.
    g_parts: Buffer,
    g: Buffer,
    up_parts: Buffer,
    up: Buffer,
}

impl Workspace {
    fn new(stream: &Stream, plan: &DevicePlan) -> Result<Self> {
        let queue = queue_of(Some(stream))?;
        let (ny, nx) = plan.shape;
        let m = plan.half_width();
        let region = refinement_region(plan.upsample);
        let alloc = |elements: usize, size: usize| queue.alloc(elements * size);
        // The two power sums side by side, in doubles.
        let sums = [
            alloc(2 * SLOTS[0], size_of::<f64>())?,
            alloc(2 * SLOTS[1], size_of::<f64>())?,
            alloc(2 * SLOTS[2], size_of::<f64>())?,
        ];
        let [slots, pairs] = ARGMAX_SLOTS;
        let c64 = size_of::<Complex<f64>>();
        let refinement = if plan.upsample > 1 {
            Some(Refinement {
                dft: [
                    scratch(queue, ndarray::Ix2(region, ny))?,
                    scratch(queue, ndarray::Ix2(region, nx))?,
                ],
                g_parts: alloc(sum_parts(ny).1 * region * m, size_of::<Complex<f32>>())?,
                g: alloc(region * m, c64)?,
                up_parts: alloc(sum_parts(nx).1 * region * region, c64)?,
                up: alloc(region * region, c64)?,
            })
        } else {
            None
        };
        Ok(Workspace {
            sums,
            best: [
                alloc(slots, size_of::<f32>())?,
                alloc(pairs, size_of::<f32>())?,
            ],
            at: [
                alloc(slots, size_of::<i64>())?,
                alloc(pairs, size_of::<i64>())?,
            ],
            refinement,
            ramps: (
                scratch(queue, ndarray::Ix2(ny, 1))?,
                scratch(queue, ndarray::Ix2(1, m))?,
            ),
        })
    }
}

/// The registration of one frame, queued on a stream: its state on the device, which
/// `finish` reads back.
pub(super) struct Queued {
    state: DeviceArray<f64, Ix1>,
}

/// The shapes and options of registering images of one shape on the device.
pub(super) struct DevicePlan {
    /// The images as given.
    frame: (usize, usize),
    /// The images whose half spectra a movie's passes keep and add up: `frame`, or its
    /// Fourier crop.
    stored: (usize, usize),
    /// The images registered: `stored`, or its Fourier crop.
    shape: (usize, usize),
    upsample: u32,
    normalization: Normalization,
    /// The movie path's: the images' means left out of the correlation and the energies.
    zero_mean: bool,
}

/// The shape that [`DevicePlan::phases_on_device`]'s ramps move an image of.
#[derive(Clone, Copy)]
enum Ramps {
    Registered,
    Stored,
}

/// Row and column weights of the cross-power spectrum, as `(rows, 1)` and `(1, cols)`.
pub(super) struct Weights {
    rows: DeviceArray<f32, Ix2>,
    cols: DeviceArray<f32, Ix2>,
}

impl DevicePlan {
    fn half_width(&self) -> usize {
        self.shape.1 / 2 + 1
    }

    fn stored_half_width(&self) -> usize {
        self.stored.1 / 2 + 1
    }

    /// This plan with the stored images registered, uncropped (their sum's).
    fn at_stored(&self) -> DevicePlan {
        DevicePlan {
            shape: self.stored,
            ..*self
        }
    }

    /// The B-factor weights of this plan's spectra (all ones for 0), `B` in the frame's pixels².
    fn weights(&self, stream: &Stream, bfactor: f64) -> Result<Weights> {
        let ny = self.shape.0;
        let (wy, wx) = bfactor_weights(bfactor, (ny, self.half_width()), self.frame);
        let rows = Array2::from_shape_vec((ny, 1), wy).expect("ny weights");
        let cols = Array2::from_shape_vec((1, self.half_width()), wx).expect("m weights");
        Ok(Weights {
            rows: to_device_on(stream, &rows)?,
            cols: to_device_on(stream, &cols)?,
        })
    }

    /// The half spectrum of `image` at the stored shape (cropped where that is smaller).
    fn spectrum(&self, stream: &Stream, image: &DeviceArray<f32, Ix2>) -> Result<Spectrum> {
        let full = dfft::rfft2_on(stream, image, &FftOptions::new())?;
        if self.frame == self.stored {
            return Ok(full);
        }
        let queue = queue_of(Some(stream))?;
        let (cy, m) = (self.stored.0, self.stored_half_width());
        let mut out = scratch::<Complex<f32>, _>(queue, ndarray::Ix2(cy, m))?;
        crop_into(queue, &full, &mut out)?;
        Ok(out)
    }

    /// A stored half spectrum as registered: itself, or its crop into `crop` (of the
    /// registered shape, where that is not the stored one).
    fn registered<'s>(
        &self,
        queue: &Queue,
        stored: &'s Spectrum,
        crop: &'s mut Option<Spectrum>,
    ) -> Result<&'s Spectrum> {
        match crop {
            Some(out) => {
                crop_into(queue, stored, out)?;
                Ok(out)
            }
            None => Ok(stored),
        }
    }

    /// A buffer for [`DevicePlan::registered`]'s crops: where the stored shape is not the
    /// registered one.
    fn crop_buffer(&self, queue: &Queue) -> Result<Option<Spectrum>> {
        let dim = ndarray::Ix2(self.shape.0, self.half_width());
        (self.stored != self.shape)
            .then(|| scratch(queue, dim))
            .transpose()
    }

    /// Buffers for the ramps that move a stored spectrum (`Ramps::Stored`).
    fn stored_ramps(&self, queue: &Queue) -> Result<(Spectrum, Spectrum)> {
        Ok((
            scratch(queue, ndarray::Ix2(self.stored.0, 1))?,
            scratch(queue, ndarray::Ix2(1, self.stored_half_width()))?,
        ))
    }

    /// Queues the registration of `moving` onto `reference`, or, with `leave_out` (the two
    /// doubles at a byte offset of a buffer), onto `reference` less `moving` moved by that
    /// shift. Nothing is read back: the coarse peak and the grid of the refinement around it
    /// are chosen on the device.
    fn queue(
        &self,
        stream: &Stream,
        reference: &Spectrum,
        leave_out: Option<(&Buffer, usize)>,
        moving: &Spectrum,
        weights: &Weights,
        ws: &mut Workspace,
    ) -> Result<Queued> {
        let queue = queue_of(Some(stream))?;
        let (ny, nx) = self.shape;
        let mut state = scratch::<f64, _>(queue, ndarray::Ix1(STATE))?;
        let others;
        let reference = match leave_out {
            Some(shift) => {
                self.phases_on_device(queue, shift, 0, Ramps::Registered, &mut ws.ramps)?;
                let (py, px) = &ws.ramps;
                others = self::leave_out::on_stream(
                    stream,
                    reference.view(),
                    moving.view(),
                    py.view(),
                    px.view(),
                )?;
                &others
            }
            None => reference,
        };
        let state_buf = &mut state.buf.0;
        queue_powers(queue, (reference, moving), nx, state_buf, &mut ws.sums)?;
        let (r, m, wy, wx) = (
            reference.view(),
            moving.view(),
            weights.rows.view(),
            weights.cols.view(),
        );
        let mut product = match self.normalization {
            Normalization::Phase => phase_cross_power::on_stream(stream, r, m, wy, wx)?,
            Normalization::Off => plain_cross_power::on_stream(stream, r, m, wy, wx)?,
        };
        if self.zero_mean {
            let mut args = i64s(&[POWER_SLOTS[0]]);
            args.extend([
                Arg::In(&reference.buf.0, 0),
                Arg::In(&moving.buf.0, 0),
                Arg::Out(&mut product.buf.0),
                Arg::Out(state_buf),
            ]);
            launch(queue, "ufunc_reg_zero_mean", 1, args)?;
        }
        let cc = dfft::irfft2_on(stream, &product, &FftOptions::new().s(&[ny, nx]))?;
        let region = refinement_region(self.upsample);
        let candidates = (&mut ws.best, &mut ws.at);
        queue_peak(queue, &cc, (self.upsample, region), state_buf, candidates)?;
        if let Some(refinement) = &mut ws.refinement {
            self.queue_refinement(queue, &product, state_buf, refinement)?;
        }
        Ok(Queued { state })
    }

    /// Reads back a queued registration: the host's `Peak`, from the state the device chose.
    fn finish(&self, stream: &Stream, queued: Queued) -> Result<Peak> {
        let state = queued.state.copy_to_host()?;
        // Reports a panic of the element-wise kernels queued so far (their status words wait on
        // the stream until it is synchronised).
        stream.synchronize()?;
        let (ny, nx) = self.shape;
        let amplitudes = (state[POWER_SLOTS[0]], state[POWER_SLOTS[1]]);
        let coarse = vec![state[0], state[1]];
        let value = Complex::new(state[6], state[7]);
        Ok(if self.upsample == 1 {
            let size = (ny * nx) as f64;
            Peak::new(
                coarse,
                None,
                value,
                (amplitudes.0 / size, amplitudes.1 / size),
            )
        } else {
            Peak::new(coarse, Some(vec![state[4], state[5]]), value, amplitudes)
        })
    }

    /// Queues the upsampled DFT of the cross-power half spectrum `product` on the grid that
    /// `state` holds, and its peak into `state`.
    fn queue_refinement(
        &self,
        queue: &Queue,
        product: &Spectrum,
        state: &mut Buffer,
        ws: &mut Refinement,
    ) -> Result<()> {
        let (ny, nx) = self.shape;
        let m = self.half_width();
        let region = refinement_region(self.upsample);
        for (axis, (k, n)) in ws.dft.iter_mut().zip([ny, nx]).enumerate() {
            let mut args = i64s(&[n, region, self.upsample as usize, axis]);
            args.extend([Arg::In(state, 0), Arg::Out(&mut k.buf.0)]);
            launch(queue, "ufunc_reg_dft_kernel", region * n, args)?;
        }
        let [ey, ex] = &ws.dft;
        // Each contraction in parts over chunks of its sum, then the parts added in order.
        let add_parts = |entry, parts: &Buffer, count: usize, cells: usize, sum: &mut Buffer| {
            let mut args = i64s(&[cells, count]);
            args.extend([Arg::In(parts, 0), Arg::Out(sum)]);
            launch(queue, entry, cells, args)
        };
        let (chunk, parts) = sum_parts(ny);
        let mut args = i64s(&[ny, m, region, chunk]);
        args.extend([
            Arg::In(&ey.buf.0, 0),
            Arg::In(&product.buf.0, 0),
            Arg::Out(&mut ws.g_parts),
        ]);
        let items = parts * region.div_ceil(ROWS_PER_THREAD) * m;
        launch(queue, "ufunc_reg_rows_times_half", items, args)?;
        let cells = region * m;
        add_parts(
            "ufunc_reg_sum_parts_c32",
            &ws.g_parts,
            parts,
            cells,
            &mut ws.g,
        )?;
        let (chunk, parts) = sum_parts(nx);
        let mut args = i64s(&[ny, nx, m, region, chunk]);
        args.extend([
            Arg::In(&ws.g, 0),
            Arg::In(&ey.buf.0, 0),
            Arg::In(&ex.buf.0, 0),
            Arg::In(&product.buf.0, 0),
            Arg::Out(&mut ws.up_parts),
        ]);
        launch(queue, "ufunc_reg_upsampled", parts * region * region, args)?;
        let cells = region * region;
        add_parts(
            "ufunc_reg_sum_parts_c64",
            &ws.up_parts,
            parts,
            cells,
            &mut ws.up,
        )?;
        let mut args = i64s(&[region, self.upsample as usize]);
        args.extend([Arg::In(&ws.up, 0), Arg::Out(state)]);
        launch_support_block(queue, &KERNELS, "ufunc_reg_refine", BLOCK_THREADS, args)
    }

    /// The phase ramps that move an image of this plan's shape by `shift`, as `(rows, 1)` and
    /// `(1, cols)` device arrays.
    fn phases(&self, stream: &Stream, shift: [f64; 2]) -> Result<(Spectrum, Spectrum)> {
        let m = self.half_width();
        let (py, px) = shift_phases(shift, (self.shape.0, m), self.shape.1);
        let py = Array2::from_shape_vec((self.shape.0, 1), py).expect("rows");
        let px = Array2::from_shape_vec((1, m), px).expect("cols");
        Ok((to_device_on(stream, &py)?, to_device_on(stream, &px)?))
    }

    /// The same ramps made on the device, into `ramps`, from a shift in the registered
    /// images' pixels that is already there: a frame's registration state (`upsample` > 0: its
    /// shift as `Peak::shift` makes it) or, with `upsample` 0, two doubles (dy, dx); each at a
    /// byte offset of a buffer. The ramps move an image of the registered shape, or with
    /// `Ramps::Stored` one of the stored shape (by the shift scaled to its pixels).
    fn phases_on_device(
        &self,
        queue: &Queue,
        (shift, offset): (&Buffer, usize),
        upsample: u32,
        at: Ramps,
        (py, px): &mut (Spectrum, Spectrum),
    ) -> Result<()> {
        let ((ny, nx), m, from) = match at {
            Ramps::Registered => (self.shape, self.half_width(), (0, 0)),
            Ramps::Stored => (self.stored, self.stored_half_width(), self.shape),
        };
        let mut args = i64s(&[ny, nx, m, from.0, from.1, upsample as usize]);
        args.extend([
            Arg::In(shift, offset),
            Arg::Out(&mut py.buf.0),
            Arg::Out(&mut px.buf.0),
        ]);
        launch(queue, "ufunc_reg_phases", ny + m, args)
    }

    /// `total + spectrum` moved by the phase ramps `(py, px)`, into `out`.
    fn add_moved_into(
        &self,
        stream: &Stream,
        total: &Spectrum,
        spectrum: &Spectrum,
        (py, px): (&Spectrum, &Spectrum),
        out: &mut Spectrum,
    ) -> Result<()> {
        let (t, s) = (total.view(), spectrum.view());
        add_moved::out_stream(stream, t, s, py.view(), px.view(), out)
    }

    /// The image of the half spectrum `total` moved by `shift`, back on the host.
    fn image(&self, stream: &Stream, total: &Spectrum, shift: [f64; 2]) -> Result<Array2<f32>> {
        let (py, px) = self.phases(stream, shift)?;
        let total = moved::on_stream(stream, total.view(), py.view(), px.view())?;
        let (ny, nx) = self.shape;
        let image = dfft::irfft2_on(stream, &total, &FftOptions::new().s(&[ny, nx]))?;
        stream.synchronize()?;
        image.copy_to_host()
    }
}

/// The `cuda` engine of [`super::Correlator`]: the reference's half spectrum on the device.
pub(super) struct DeviceCorrelator {
    plan: DevicePlan,
    reference: Spectrum,
    weights: Weights,
    /// Streams, page-locked frames and workspaces of finished calls, reused by the next ones
    /// (one per concurrent caller).
    lanes: std::sync::Mutex<Vec<Lane>>,
}

/// What one registration at a time needs: a stream, a page-locked frame, a workspace.
type Lane = (Stream, PinnedImage, Workspace);

/// `Ok` for `f32` images, or why the `cuda` target cannot take others.
fn require_f32<T: FftReal>() -> Result<()> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        name: "target",
        message: format!(
            "`cuda` registers `f32` images, not `{}`: convert them, or use `cpu` or `parallel`",
            std::any::type_name::<T>()
        ),
    })
}

/// `image` as `f32` elements, where it holds `f32` in standard (C) order.
fn contiguous_f32<'a, T: FftReal>(image: &ArrayView2<'a, T>) -> Option<ArrayView2<'a, f32>> {
    if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
        return None;
    }
    let elements = image.to_slice()?;
    // SAFETY: `T` is `f32` (checked above), so the slice's memory holds `f32`s.
    let floats =
        unsafe { std::slice::from_raw_parts(elements.as_ptr().cast::<f32>(), elements.len()) };
    ArrayView2::from_shape(image.raw_dim(), floats).ok()
}

/// Threads from which a contiguous frame is staged through page-locked memory ([`fill`])
/// rather than copied by the driver: two cores copy a frame into page-locked memory no faster
/// than the driver.
const STAGING_MIN_THREADS: usize = 4;

/// Copies `image` (of `f32`: `require_f32`) into the page-locked `frame`, a contiguous one in
/// pieces side by side.
fn fill<T: FftReal>(
    frame: &mut PinnedImage,
    stream: &Stream,
    image: ArrayView2<'_, T>,
) -> Result<()> {
    let mut to = frame.view_mut(stream)?;
    match contiguous_f32(&image) {
        Some(image) => copy_frame(to, image),
        None => to.zip_mut_with(&image, |o, &v| *o = v.as_f64() as f32),
    }
    Ok(())
}

impl DeviceCorrelator {
    pub(super) fn new<T: FftReal>(
        reference: ArrayView2<'_, T>,
        options: &PccOptions,
    ) -> Result<Self> {
        require_f32::<T>()?;
        let plan = DevicePlan {
            frame: reference.dim(),
            stored: reference.dim(),
            shape: reference.dim(),
            upsample: options.upsample_factor,
            normalization: options.normalization,
            // scikit-image's correlation, means included.
            zero_mean: false,
        };
        let stream = Stream::new()?;
        let mut frame = PinnedImage::new(&stream, plan.frame)?;
        fill(&mut frame, &stream, reference)?;
        let reference = plan.spectrum(&stream, &frame.upload(&stream)?)?;
        let weights = plan.weights(&stream, 0.0)?;
        let workspace = Workspace::new(&stream, &plan)?;
        stream.synchronize()?;
        Ok(DeviceCorrelator {
            plan,
            reference,
            weights,
            lanes: std::sync::Mutex::new(vec![(stream, frame, workspace)]),
        })
    }

    pub(super) fn peak<T: FftReal>(&self, moving: ArrayView2<'_, T>) -> Result<Peak> {
        let pool = || self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        let taken = pool().pop();
        let (stream, mut frame, mut workspace) = match taken {
            Some(lane) => lane,
            None => {
                let stream = Stream::new()?;
                let frame = PinnedImage::new(&stream, self.plan.frame)?;
                let workspace = Workspace::new(&stream, &self.plan)?;
                (stream, frame, workspace)
            }
        };
        // The driver copies pageable memory through its own page-locked buffer, one core
        // at a time (14 GB/s on an H200's host). With cores to spare, the frame is copied
        // into ours in pieces side by side and uploaded from there at the bus's speed.
        let image = match contiguous_f32(&moving) {
            Some(image) if rayon::current_num_threads() < STAGING_MIN_THREADS => {
                to_device_on(&stream, &image)
            }
            _ => fill(&mut frame, &stream, moving).and_then(|()| frame.upload(&stream)),
        };
        let peak = image
            .and_then(|image| self.plan.spectrum(&stream, &image))
            .and_then(|s| {
                self.plan.queue(
                    &stream,
                    &self.reference,
                    None,
                    &s,
                    &self.weights,
                    &mut workspace,
                )
            })
            .and_then(|q| self.plan.finish(&stream, q));
        pool().push((stream, frame, workspace));
        peak
    }
}

/// [`super::align_movie`] on the device: the same passes as the host's, each frame's
/// registration queued on one of two streams in turn, a whole pass before its results are
/// read back. The spectra (the largest that [`super::align::storage`] allows) stay in device
/// memory between passes when they fit in `memory_limit`; otherwise every pass reads and
/// uploads the frames again.
pub(super) fn align_on_device<S: FrameSource + ?Sized>(
    frames: &mut S,
    options: &AlignOptions,
    summed: Summed,
) -> Result<Alignment> {
    check(frames, options)?;
    let n = frames.len();
    let (ny, nx) = frames.frame_shape();
    // The sum is made from the frames read again where the spectra stored are not theirs.
    let (shapes, keep) = super::align::storage(options, n, (ny, nx), summed);
    let crop = shapes.aligned;
    let plan = DevicePlan {
        frame: (ny, nx),
        stored: shapes.stored,
        shape: crop,
        upsample: options.upsample_factor,
        normalization: options.normalization,
        zero_mean: true,
    };
    let taper = (options.taper > 0.0).then(|| Taper::new((ny, nx), options.taper));
    let Lanes {
        streams,
        images,
        workspaces,
    } = Lanes::take(&plan)?;
    let queues = [queue_of(Some(&streams[0]))?, queue_of(Some(&streams[1]))?];
    let crops = [plan.crop_buffer(queues[0])?, plan.crop_buffer(queues[1])?];
    let stored_ramps = [plan.stored_ramps(queues[0])?, plan.stored_ramps(queues[1])?];
    let mut movie = Movie {
        frames,
        plan: &plan,
        taper: taper.as_ref(),
        kept: keep.then(Vec::new),
        images,
        workspaces,
        crops,
        stored_ramps,
        streams,
    };
    let Registered {
        mut shifts,
        peaks,
        iterations,
        converged,
        total,
    } = match options.reference {
        Reference::First => {
            let reference = movie.spectrum(0, 0)?;
            let weights = plan.weights(&movie.streams[0], 0.0)?;
            let pass = movie.pass(PassOf::Register((&reference, None, &weights)))?;
            Registered::one_pass(pass.found, pass.total)
        }
        Reference::Sum => {
            let weights = plan.weights(&movie.streams[0], options.bfactor)?;
            let mut passes = DevicePasses {
                movie: &mut movie,
                weights: &weights,
            };
            iterate_on_sum(&mut passes, n, options)?
        }
    };
    let origin = relative_to_first(&mut shifts, &peaks, options.reference, crop, (ny, nx))?;
    let stream = &movie.streams[0];
    let unregistered = peaks.iter().any(|&p| nothing_registered(p));
    let sum = if summed == Summed::No {
        Array2::zeros((0, 0))
    } else if shapes.stored == (ny, nx) && taper.is_none() && !unregistered {
        // The last pass added every frame moved by its shift: moving that sum by -origin
        // makes it frame 0's, as the shifts are (unless a frame with nothing to register was
        // added at a shift that is now reported as none).
        let origin = shapes.to_stored(origin);
        plan.at_stored()
            .image(stream, &total, [-origin[0], -origin[1]])?
    } else {
        // Aligned on cropped or tapered spectra: the sum is made from the frames read again.
        let full = DevicePlan {
            stored: (ny, nx),
            shape: (ny, nx),
            ..plan
        };
        let mut total = crate::device_array((ny, full.half_width()))?;
        let mut next = crate::device_array((ny, full.half_width()))?;
        for (i, &shift) in shifts.iter().enumerate() {
            read_one(movie.frames, i, movie.images[0].view_mut(stream)?)?;
            let s = full.spectrum(stream, &movie.images[0].upload(stream)?)?;
            let (py, px) = full.phases(stream, shift)?;
            full.add_moved_into(stream, &total, &s, (&py, &px), &mut next)?;
            std::mem::swap(&mut total, &mut next);
        }
        full.image(stream, &total, [0.0, 0.0])?
    };
    Lanes {
        streams: movie.streams,
        images: movie.images,
        workspaces: movie.workspaces,
    }
    .keep(&plan);
    Ok(Alignment {
        shifts,
        peaks,
        iterations,
        converged,
        sum,
        alignment_shape: crop,
    })
}

/// The device's passes over a movie, for [`iterate_on_sum`].
struct DevicePasses<'m, 'a, S: FrameSource + ?Sized> {
    movie: &'m mut Movie<'a, S>,
    weights: &'m Weights,
}

impl<S: FrameSource + ?Sized> SumPasses for DevicePasses<'_, '_, S> {
    type Total = Spectrum;

    fn register(
        &mut self,
        total: &Spectrum,
        previous: &[[f64; 2]],
    ) -> Result<(Vec<Found>, Spectrum)> {
        let pass = self
            .movie
            .pass(PassOf::Register((total, Some(previous), self.weights)))?;
        Ok((pass.found, pass.total))
    }

    fn add_at(&mut self, shifts: &[[f64; 2]]) -> Result<Spectrum> {
        Ok(self.movie.pass(PassOf::AddAt(shifts))?.total)
    }
}

/// A movie's two streams, each with a page-locked frame and a workspace. One call keeps its
/// lanes for the next with the same key (the next movie of a batch), whose fixed cost they
/// were: page-locked memory takes about 10 ms per 16 MB frame to allocate and 3 ms to free on
/// an H100, and each stream's cuFFT plans (with their work areas) live with it.
struct Lanes {
    streams: [Stream; 2],
    images: [PinnedImage; 2],
    workspaces: [Workspace; 2],
}

/// What [`Lanes`] were made for: the frame shape, the registered shape, the upsampling.
type LanesKey = ((usize, usize), (usize, usize), u32);

/// The lanes of the last call, for the next (one set: a call with another key frees them).
static KEPT_LANES: std::sync::Mutex<Option<(LanesKey, Lanes)>> = std::sync::Mutex::new(None);

impl Lanes {
    fn key(plan: &DevicePlan) -> LanesKey {
        (plan.frame, plan.shape, plan.upsample)
    }

    /// The kept lanes where they fit `plan`, else new ones (the kept ones freed first).
    fn take(plan: &DevicePlan) -> Result<Lanes> {
        let kept = KEPT_LANES.lock().unwrap_or_else(|e| e.into_inner()).take();
        match kept {
            Some((key, lanes)) if key == Self::key(plan) => Ok(lanes),
            other => {
                drop(other);
                let streams = [Stream::new()?, Stream::new()?];
                Ok(Lanes {
                    images: [
                        PinnedImage::new(&streams[0], plan.frame)?,
                        PinnedImage::new(&streams[1], plan.frame)?,
                    ],
                    workspaces: [
                        Workspace::new(&streams[0], plan)?,
                        Workspace::new(&streams[1], plan)?,
                    ],
                    streams,
                })
            }
        }
    }

    /// Keeps these lanes (whose streams are idle) for the next call.
    fn keep(self, plan: &DevicePlan) {
        let replaced = KEPT_LANES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace((Self::key(plan), self));
        // Freed outside the lock: freeing page-locked memory takes milliseconds.
        drop(replaced);
    }
}

/// Frees what the last `align_movie` call on `cuda` kept for the next (see
/// [`super::release_device_memory`]); whether there was any.
pub(super) fn release_kept_lanes() -> bool {
    let kept = KEPT_LANES.lock().unwrap_or_else(|e| e.into_inner()).take();
    kept.is_some()
}

/// A movie on its way through the device.
struct Movie<'a, S: FrameSource + ?Sized> {
    frames: &'a mut S,
    plan: &'a DevicePlan,
    taper: Option<&'a Taper>,
    /// The spectra of the frames seen so far, where they are kept between passes.
    kept: Option<Vec<Spectrum>>,
    /// Page-locked frames, one per stream: frame `i + 1` is read into one while frame `i`
    /// is still being copied from the other.
    images: [PinnedImage; 2],
    /// Each stream's workspace.
    workspaces: [Workspace; 2],
    /// Each stream's frame cropped from the stored shape to the registered one, where they
    /// differ.
    crops: [Option<Spectrum>; 2],
    /// Each stream's ramps that move a frame into the sum.
    stored_ramps: [(Spectrum, Spectrum); 2],
    streams: [Stream; 2],
}

/// The outcome of one pass: per frame its shift and peak height, and the sum of the frames
/// moved by their shifts.
struct Pass {
    found: Vec<Found>,
    total: Spectrum,
}

/// What a pass registers each frame against: a reference spectrum, with the frames' previous
/// shifts where it is their sum (each frame is then left out of it), and the weights.
type Against<'a> = (&'a Spectrum, Option<&'a [[f64; 2]]>, &'a Weights);

/// What a pass does with each frame before adding it to the new total.
#[derive(Clone, Copy)]
enum PassOf<'a> {
    /// Registers it, and adds it moved by the shift found.
    Register(Against<'a>),
    /// Adds it moved by the shift given.
    AddAt(&'a [[f64; 2]]),
}

impl<S: FrameSource + ?Sized> Movie<'_, S> {
    /// Frame `i` read, tapered and transformed on stream `k`.
    fn spectrum(&mut self, i: usize, k: usize) -> Result<Spectrum> {
        let stream = &self.streams[k];
        let mut image = self.images[k].view_mut(stream)?;
        read_one(self.frames, i, image.view_mut())?;
        if let Some(taper) = self.taper {
            taper.apply(image);
        }
        self.plan.spectrum(stream, &self.images[k].upload(stream)?)
    }

    /// Frame `i`'s spectrum: `owned`, or `kept` from an earlier pass.
    fn spectrum_in<'s>(
        kept: &'s Option<Vec<Spectrum>>,
        i: usize,
        owned: &'s Option<Spectrum>,
    ) -> Result<&'s Spectrum> {
        owned
            .as_ref()
            .or_else(|| kept.as_ref().and_then(|k| k.get(i)))
            .ok_or_else(|| Error::Cuda {
                what: format!("the spectrum of frame {i} was neither kept nor made"),
            })
    }

    /// Registers every frame against what `work` says, or takes its shift from it, and adds
    /// it, moved by its shift, to a new total. Frame `i` goes on stream `i % 2`, and nothing
    /// is read back until every frame is queued: each frame's shift moves it into the total on
    /// the device, so the host only reads the frames while the device works.
    fn pass(&mut self, work: PassOf<'_>) -> Result<Pass> {
        let n = self.frames.len();
        let plan = self.plan;
        // The sum is added up in two buffers in turn, each frame reading one and writing the
        // other: no buffer is dropped during the pass (freeing one that the other stream has
        // read would make its stream wait for that read, and the streams would take turns).
        let stored = (plan.stored.0, plan.stored_half_width());
        let mut total: Spectrum = crate::device_array(stored)?;
        let mut next: Spectrum = crate::device_array(stored)?;
        // The reference (a sum of stored spectra, or frame 0's) as registered.
        let mut reference_crop: Option<Spectrum>;
        let work = match work {
            PassOf::Register((reference, shifts, weights)) => {
                let queue = queue_of(Some(&self.streams[0]))?;
                reference_crop = plan.crop_buffer(queue)?;
                let reference = plan.registered(queue, reference, &mut reference_crop)?;
                PassOf::Register((reference, shifts, weights))
            }
            add => add,
        };
        // Shifts from the host, as (dy, dx) doubles per frame: the previous pass's, for
        // leaving each frame out of the sum it is registered on, or those to add the frames at.
        let given = match work {
            PassOf::Register((_, Some(shifts), _)) | PassOf::AddAt(shifts) => {
                let flat: Vec<f64> = shifts.iter().flatten().copied().collect();
                Some(to_device_on(
                    &self.streams[0],
                    &ndarray::Array1::from(flat),
                )?)
            }
            PassOf::Register((_, None, _)) => None,
        };
        let given_at = |i: usize| given.as_ref().map(|g| (&g.buf.0, i * 2 * size_of::<f64>()));
        let mut queued = Vec::with_capacity(n);
        for i in 0..n {
            let owned = match self.kept.as_ref().and_then(|k| k.get(i)) {
                Some(_) => None,
                None => Some(self.spectrum(i, i % 2)?),
            };
            let stream = &self.streams[i % 2];
            let s = Self::spectrum_in(&self.kept, i, &owned)?;
            let ws = &mut self.workspaces[i % 2];
            let queue = queue_of(Some(stream))?;
            let q = match work {
                PassOf::Register((reference, _, weights)) => {
                    let moving = plan.registered(queue, s, &mut self.crops[i % 2])?;
                    Some(plan.queue(stream, reference, given_at(i), moving, weights, ws)?)
                }
                PassOf::AddAt(_) => None,
            };
            // The ramps that move the frame into the total, from its registration's state or
            // from the shift given.
            let (shift, upsample) = match (&q, given_at(i)) {
                (Some(q), _) => ((&q.state.buf.0, 0), plan.upsample),
                (None, Some(shift)) => (shift, 0),
                (None, None) => unreachable!("a pass that adds at shifts is given them"),
            };
            let ramps = &mut self.stored_ramps[i % 2];
            plan.phases_on_device(queue, shift, upsample, Ramps::Stored, ramps)?;
            plan.add_moved_into(stream, &total, s, (&ramps.0, &ramps.1), &mut next)?;
            std::mem::swap(&mut total, &mut next);
            queued.push(q);
            if let (Some(s), Some(kept)) = (owned, self.kept.as_mut()) {
                kept.push(s);
            }
        }
        let (ny, nx) = plan.shape;
        let found = queued
            .into_iter()
            .enumerate()
            .map(|(i, q)| match q {
                Some(q) => {
                    let peak = plan.finish(&self.streams[i % 2], q)?;
                    let s = peak.shift(&[ny, nx], plan.upsample);
                    Ok(([s[0], s[1]], peak.correlation()))
                }
                None => Ok(([0.0, 0.0], 0.0)),
            })
            .collect::<Result<Vec<_>>>()?;
        for stream in &self.streams {
            stream.synchronize()?;
        }
        Ok(Pass { found, total })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn registration_kernels_compile_with_nvrtc() {
        crate::cuda::assert_compiles(
            "registration_kernels_compile_with_nvrtc",
            (super::KERNELS.source)(),
        );
    }

    /// The one-block folds pick what the host's argmax picks however the block's threads
    /// interleave the candidates: each case puts the first of two equal ones at 255 (the last
    /// thread of a 256-thread block, and of an 8-thread one in the simulator) and the other at
    /// 256 (thread 0 of both, the left side of every step of the tree).
    #[test]
    fn the_block_folds_pick_the_first_of_equal_candidates() {
        use super::*;
        use ndarray::Array1;
        let stream = match Stream::new() {
            Ok(s) => s,
            Err(e) => {
                let required = std::env::var("UFUNC_REQUIRE_GPU").is_ok_and(|v| v == "1");
                assert!(!required, "a device is required (UFUNC_REQUIRE_GPU=1): {e}");
                return eprintln!(
                    "SKIPPED the_block_folds_pick_the_first_of_equal_candidates: {e}"
                );
            }
        };
        let queue = queue_of(Some(&stream)).unwrap();
        let state = || scratch::<f64, _>(queue, Ix1(STATE)).unwrap();

        // The refinement over a 17x17 grid (U = 11): the index of the chosen |up|.
        let (region, upsample) = (17, 11);
        let refine = |marks: &[(usize, f64)]| {
            let mut up = Array1::from_elem(region * region, Complex::new(0.5f64, 0.0));
            for &(i, v) in marks {
                up[i] = Complex::new(v, 0.0);
            }
            let up = to_device_on(&stream, &up).unwrap();
            let mut state = state();
            let mut args = i64s(&[region, upsample]);
            args.extend([Arg::In(&up.buf.0, 0), Arg::Out(&mut state.buf.0)]);
            launch_support_block(queue, &KERNELS, "ufunc_reg_refine", BLOCK_THREADS, args).unwrap();
            let state = state.copy_to_host().unwrap();
            let at = |offset: f64| (offset * upsample as f64 + (region / 2) as f64).round();
            at(state[4]) as usize * region + at(state[5]) as usize
        };
        assert_eq!(
            refine(&[(255, 2.0), (256, -2.0)]),
            255,
            "the first of equal values"
        );
        assert_eq!(
            refine(&[(3, 9.0), (255, f64::NAN), (256, f64::NAN)]),
            255,
            "first NaN"
        );
        assert_eq!(
            refine(&[(255, 9.0), (256, f64::NAN)]),
            256,
            "a NaN before any number"
        );

        // The peak from 300 candidates (value, index) of a 64x64 image: the largest |value|,
        // the smallest index on ties; NaN values and indices below 0 are no candidates.
        let peak = |marks: &[(usize, f32, i64)]| {
            let mut best = Array1::from_elem(300, 0.5f32);
            let mut at = Array1::from_shape_fn(300, |k| 1000 + k as i64);
            for &(k, value, index) in marks {
                (best[k], at[k]) = (value, index);
            }
            let (best, at) = (
                to_device_on(&stream, &best).unwrap(),
                to_device_on(&stream, &at),
            );
            let at = at.unwrap();
            let mut state = state();
            let mut args = i64s(&[300, 64, 64, 1, 1]);
            args.extend([
                Arg::In(&best.buf.0, 0),
                Arg::In(&at.buf.0, 0),
                Arg::Out(&mut state.buf.0),
            ]);
            launch_support_block(queue, &KERNELS, "ufunc_reg_peak", BLOCK_THREADS, args).unwrap();
            let state = state.copy_to_host().unwrap();
            (state[0] * 64.0 + state[1], state[6])
        };
        // Index 5 is row 0, column 5; index 9 column 9.
        let none = [(10, 99.0, -1), (11, f32::NAN, 0)];
        assert_eq!(
            peak(&[(255, 2.0, 5), (256, -2.0, 9), none[0], none[1]]),
            (5.0, 2.0)
        );
        assert_eq!(peak(&[(255, -2.0, 9), (256, 2.0, 5)]), (5.0, 2.0));
    }

    #[test]
    fn sums_are_split_in_at_most_64_parts_of_32_terms_or_more() {
        for (n, want) in [
            (1, (32, 1)),
            (45, (32, 2)),
            (2048, (32, 64)),
            (8192, (128, 64)),
        ] {
            assert_eq!(super::sum_parts(n), want, "{n} terms");
        }
        for n in 1..5000 {
            let (chunk, parts) = super::sum_parts(n);
            assert!(parts <= 64 && chunk >= 32 && chunk * parts >= n && chunk * (parts - 1) < n);
        }
    }

    #[test]
    fn the_rows_per_thread_are_the_kernels() {
        let define = format!("#define __UFUNC_REG_ROWS {}\n", super::ROWS_PER_THREAD);
        assert!(include_str!("device.cuh").contains(&define), "{define}");
    }

    #[test]
    fn the_blank_frame_bound_is_the_hosts() {
        let define = format!(
            "#define __UFUNC_REG_BLANK {:e}\n",
            super::super::align::BLANK_ENERGY
        );
        assert!(include_str!("device.cuh").contains(&define), "{define}");
    }

    #[test]
    fn the_elementwise_kernels_compile_with_nvrtc() {
        use super::*;
        let sources = [
            phase_cross_power::cuda_source(),
            plain_cross_power::cuda_source(),
            leave_out::cuda_source(),
            add_moved::cuda_source(),
            moved::cuda_source(),
        ];
        crate::cuda::assert_all_compile("the_elementwise_kernels_compile_with_nvrtc", sources);
    }

    #[test]
    fn the_phase_floor_is_the_hosts() {
        // `phase_cross_power` spells the host's `normalise` floor as a literal.
        assert_eq!(1.1920929e-5f32, f32::EPSILON * 100.0);
    }
}
