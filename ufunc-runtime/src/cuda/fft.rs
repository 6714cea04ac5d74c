//! Transforms on device memory: a recipe of `crate::fft` (the host's shape rules: axes,
//! lengths, norm) run as batched plans of the backend (cuFFT, or the simulator's host FFT).
//!
//! 1. `load`: the input view (any strides) is gathered into a C-order working buffer, cropped
//!    or zero-padded to the transform lengths, real widened to complex where a complex
//!    transform reads it. A contiguous input of the right shape is read in place by the
//!    first plan where that plan is out of place and complex or real-to-complex (cuFFT writes
//!    the input of neither); a real inverse always reads a buffer of ours (a complex-to-real
//!    plan overwrites its input).
//! 2. `stages`: consecutive passes over adjacent axes become one plan of rank up to 3 (a real
//!    forward pass joins the complex passes before it when its axis is the innermost); the
//!    complex passes run in place, the real ones into a new buffer. The half spectrum's
//!    zero and Nyquist frequencies lose their imaginary parts before a real inverse, as NumPy.
//! 3. The norm's factor, in one scaling kernel at the end.
//!
//! An axis that `axes` names twice (NumPy transforms it once per appearance) splits the recipe
//! into pieces without a repeat, run one after the other.
//!
//! No operand data is copied to or from the host; only the gather's shape, limits and strides
//! go up, as small uploads that the transfer counters leave out.

use super::args::{Arg, Buffer, FftKind, FftLayout};
use super::launch::launch_support;
use super::queue::Queue;
use crate::error::{Error, Result};
use crate::fft::{FftElement, Pass, PassKind, Recipe};
use crate::shape::{byte_size, c_strides, element_count};
use num_complex::Complex;

/// Where a transform's input is: device memory, the byte offset of the first element, the
/// shape and element strides.
pub(crate) struct FftInput<'a> {
    pub mem: &'a Buffer,
    pub offset: usize,
    pub shape: &'a [usize],
    pub strides: &'a [isize],
}

/// The working data between stages: the caller's input (read, never written) or a buffer of
/// ours, C order.
enum Data<'a> {
    Input(&'a Buffer, usize),
    Own(Buffer),
}

/// One plan's worth of passes: a block of adjacent axes `first..first + rank`.
#[derive(Debug, Clone, PartialEq)]
struct Stage {
    kind: FftKind,
    inverse: bool,
    first: usize,
    /// The transform length per axis of the block.
    n: Vec<usize>,
}

/// Groups `passes` into stages (see the module's docs).
fn plan_stages(passes: &[Pass]) -> Vec<Stage> {
    let mut stages: Vec<(Stage, Vec<usize>)> = Vec::new();
    for p in passes {
        let (kind, inverse) = match p.kind {
            PassKind::Forward => (FftKind::C2C, false),
            PassKind::Inverse => (FftKind::C2C, true),
            PassKind::RealForward => (FftKind::R2C, false),
            PassKind::RealInverse => (FftKind::C2R, true),
        };
        if let Some((stage, axes)) = stages.last_mut() {
            let lo = axes.iter().min().copied().unwrap_or(p.axis).min(p.axis);
            let hi = axes.iter().max().copied().unwrap_or(p.axis).max(p.axis);
            let joins = kind == FftKind::C2C
                && stage.inverse == inverse
                && stage.kind != FftKind::C2R
                && hi - lo + 1 == axes.len() + 1
                && axes.len() < 3
                && (stage.kind == FftKind::C2C || p.axis < axes[0]);
            if joins {
                axes.push(p.axis);
                continue;
            }
        }
        stages.push((
            Stage {
                kind,
                inverse,
                first: p.axis,
                n: vec![p.n],
            },
            vec![p.axis],
        ));
    }
    // Each block's lengths in axis order (the real pass's axis, where there is one, last).
    stages
        .into_iter()
        .map(|(mut stage, mut axes)| {
            let lens: Vec<(usize, usize)> = {
                let mut l: Vec<(usize, usize)> = axes
                    .iter()
                    .map(|&a| (a, passes.iter().find(|p| p.axis == a).map_or(1, |p| p.n)))
                    .collect();
                l.sort();
                l
            };
            axes.sort();
            stage.first = axes[0];
            stage.n = lens.into_iter().map(|(_, n)| n).collect();
            stage
        })
        .collect()
}

/// The shape of the data a stage writes, from the shape it reads.
fn stage_output(stage: &Stage, shape: &[usize]) -> Vec<usize> {
    let mut out = shape.to_vec();
    let last = stage.first + stage.n.len() - 1;
    out[last] = match stage.kind {
        FftKind::C2C => shape[last],
        FftKind::R2C => stage.n[stage.n.len() - 1] / 2 + 1,
        FftKind::C2R => stage.n[stage.n.len() - 1],
    };
    out
}

/// How a real plan's real side is laid out where its runs would start between complex
/// elements: cuFFT reads and writes real data only at addresses aligned to its complex type
/// (an unaligned pointer is `CUFFT_INVALID_VALUE`), and a real axis with axes after it starts
/// a run at every real element of those axes (or of each slab of odd size). The real side
/// then lives in a buffer of shape `spread`: the C-order real data of shape `dense`, its last
/// axis lengthened by one (a gap after each element, or after each slab), so that each run
/// starts at an even real element.
#[derive(Debug, Clone, PartialEq)]
struct Spread {
    dense: Vec<usize>,
    spread: Vec<usize>,
}

/// The real side's offset of a run (input, output) of a real plan.
fn real_offset(kind: FftKind, run: &mut (usize, usize)) -> &mut usize {
    match kind {
        FftKind::R2C => &mut run.0,
        _ => &mut run.1,
    }
}

/// The plan layout of `stage` over C-order data of shape `from` (written as `to`), the
/// element offsets (input, output) of each execution: one, or one per index of the axes
/// before or after the block, whichever are fewer; and where a real side's runs would be
/// unaligned, the [`Spread`] layout of that side that the layout and offsets describe.
fn stage_layout(
    stage: &Stage,
    from: &[usize],
    to: &[usize],
    double: bool,
) -> (FftLayout, Vec<(usize, usize)>, Option<Spread>) {
    let (first, end) = (stage.first, stage.first + stage.n.len());
    let outer: usize = from[..first].iter().product();
    let inner: usize = from[end..].iter().product();
    let block_in: usize = from[first..end].iter().product();
    let block_out: usize = to[first..end].iter().product();
    let i64s = |s: &[usize]| s.iter().map(|&x| x as i64).collect::<Vec<_>>();
    // Element strides (within a transform) and distances (between batch members) per side.
    let (mut stride_in, mut stride_out) = (inner, inner);
    let (batch, mut dist_in, mut dist_out, mut runs) = if inner == 1 {
        (outer, block_in, block_out, vec![(0, 0)])
    } else if outer <= inner {
        let runs = (0..outer)
            .map(|o| (o * block_in * inner, o * block_out * inner))
            .collect();
        (inner, 1, 1, runs)
    } else {
        let runs = (0..inner).map(|j| (j, j)).collect();
        (outer, block_in * inner, block_out * inner, runs)
    };
    let real_block = match stage.kind {
        FftKind::C2C => None,
        FftKind::R2C => Some(block_in),
        FftKind::C2R => Some(block_out),
    };
    let spread = match real_block {
        Some(block) if inner > 1 && outer > inner => {
            // A gap after every element: run `j` starts at element `2 j`.
            let (stride, dist) = (2 * inner, 2 * block * inner);
            if stage.kind == FftKind::R2C {
                (stride_in, dist_in) = (stride, dist);
            } else {
                (stride_out, dist_out) = (stride, dist);
            }
            for (j, run) in runs.iter_mut().enumerate() {
                *real_offset(stage.kind, run) = 2 * j;
            }
            Some(Spread {
                dense: vec![outer * block, inner, 1],
                spread: vec![outer * block, inner, 2],
            })
        }
        Some(block) if inner > 1 && outer > 1 && (block * inner) % 2 == 1 => {
            // A gap after every slab of odd size: run `o` starts at element `o (slab + 1)`.
            let slab = block * inner;
            for (o, run) in runs.iter_mut().enumerate() {
                *real_offset(stage.kind, run) = o * (slab + 1);
            }
            Some(Spread {
                dense: vec![outer, slab],
                spread: vec![outer, slab + 1],
            })
        }
        _ => None,
    };
    let layout = FftLayout {
        kind: stage.kind,
        double,
        n: i64s(&stage.n),
        inembed: i64s(&from[first..end]),
        istride: stride_in as i64,
        idist: dist_in as i64,
        onembed: i64s(&to[first..end]),
        ostride: stride_out as i64,
        odist: dist_out as i64,
        batch: batch as i64,
    };
    (layout, runs, spread)
}

/// Runs `recipe` on `input` (elements `I`) and returns the C-order output buffer.
pub(crate) fn run_recipe<I: FftElement>(
    queue: &Queue,
    input: &FftInput<'_>,
    recipe: &Recipe,
) -> Result<Buffer> {
    // The load below crops or pads each axis once: an axis transformed twice (NumPy's
    // repeated `axes`) needs a recipe per appearance.
    let segments = recipe.segments();
    if let [first, rest @ ..] = segments.as_slice() {
        if !rest.is_empty() {
            let mut buf = run_recipe::<I>(queue, input, first)?;
            for segment in rest {
                let strides = c_strides(&segment.input);
                let input = FftInput {
                    mem: &buf,
                    offset: 0,
                    shape: &segment.input,
                    strides: &strides,
                };
                buf = run_recipe::<Complex<I::Real>>(queue, &input, segment)?;
            }
            return Ok(buf);
        }
    }
    let real = size_of::<I::Real>();
    let double = real == 8;
    let input_complex = size_of::<I>() == 2 * real;
    let first = recipe.passes.first().map(|p| p.kind);
    let first_real = first == Some(PassKind::RealForward);
    let last_real = recipe.passes.last().map(|p| p.kind) == Some(PassKind::RealInverse);
    let out_elem = if last_real { real } else { 2 * real };
    let out_bytes = byte_size(&recipe.output, out_elem)?;
    if element_count(&recipe.output)? == 0 {
        return queue.alloc(out_bytes);
    }
    // The load shape: every transformed axis at its transform's input length.
    let mut shape = input.shape.to_vec();
    let mut limit = input.shape.to_vec();
    for p in &recipe.passes {
        shape[p.axis] = match p.kind {
            PassKind::RealInverse => p.n / 2 + 1,
            _ => p.n,
        };
        limit[p.axis] = p.len_read();
    }
    let load_elem = if first_real { real } else { 2 * real };
    // A complex input feeds a complex first plan, a real one a real-to-complex plan; cuFFT
    // writes the input of neither (only a complex-to-real plan overwrites its input). Without
    // a pass (no axes) the load is the result, a new array.
    let in_place_ok = input_complex != first_real
        && first.is_some_and(|kind| kind != PassKind::RealInverse)
        && (input_complex || input.offset % (2 * real) == 0)
        && shape == input.shape
        && input.strides == c_strides(&shape).as_slice();
    let mut data = if in_place_ok {
        Data::Input(input.mem, input.offset)
    } else {
        let mut buf = queue.alloc(byte_size(&shape, load_elem)?)?;
        gather(
            queue,
            input,
            &shape,
            &limit,
            input_complex,
            load_elem,
            double,
            &mut buf,
        )?;
        Data::Own(buf)
    };
    let elem_of = |kind_out_complex: bool| if kind_out_complex { 2 * real } else { real };
    for stage in plan_stages(&recipe.passes) {
        let to = stage_output(&stage, &shape);
        let (layout, runs, spread) = stage_layout(&stage, &shape, &to, double);
        let plan = queue.fft_plan(&layout)?;
        let (in_elem, out_elem) = match stage.kind {
            FftKind::C2C => (elem_of(true), elem_of(true)),
            FftKind::R2C => (elem_of(false), elem_of(true)),
            FftKind::C2R => (elem_of(true), elem_of(false)),
        };
        let exec = |src: Option<(&Buffer, usize)>, dst: &mut Buffer| -> Result<()> {
            for &(i, o) in &runs {
                let src = src.map(|(b, off)| (b, off + i * in_elem));
                queue.fft_exec(&plan, src, (dst, o * out_elem), stage.inverse)?;
            }
            Ok(())
        };
        data = match (stage.kind, data) {
            (FftKind::C2C, Data::Own(mut buf)) => {
                exec(None, &mut buf)?;
                Data::Own(buf)
            }
            (FftKind::C2R, data) => {
                // Always from a buffer of ours: the plan overwrites its input.
                let mut buf = match data {
                    Data::Own(buf) => buf,
                    Data::Input(..) => {
                        return Err(Error::Cuda {
                            what: "a real inverse reading the caller's input".into(),
                        })
                    }
                };
                hermitian(queue, &stage, &shape, double, &mut buf)?;
                let mut out = queue.alloc(byte_size(&to, out_elem)?)?;
                match &spread {
                    None => exec(Some((&buf, 0)), &mut out)?,
                    Some(spread) => {
                        let mut spread_buf = queue.alloc(byte_size(&spread.spread, real)?)?;
                        exec(Some((&buf, 0)), &mut spread_buf)?;
                        let spread_view = FftInput {
                            mem: &spread_buf,
                            offset: 0,
                            shape: &spread.dense,
                            strides: &c_strides(&spread.spread),
                        };
                        let dense = &spread.dense;
                        gather(
                            queue,
                            &spread_view,
                            dense,
                            dense,
                            false,
                            real,
                            double,
                            &mut out,
                        )?;
                    }
                }
                Data::Own(out)
            }
            (_, data) => {
                // Out of place from the input, or a real-to-complex plan.
                let mut out = queue.alloc(byte_size(&to, out_elem)?)?;
                let (mem, offset) = match &data {
                    Data::Input(mem, offset) => (*mem, *offset),
                    Data::Own(buf) => (buf, 0),
                };
                match &spread {
                    None => exec(Some((mem, offset)), &mut out)?,
                    Some(spread) => {
                        let mut spread_buf = queue.alloc(byte_size(&spread.spread, real)?)?;
                        let dense = FftInput {
                            mem,
                            offset,
                            shape: &spread.dense,
                            strides: &c_strides(&spread.dense),
                        };
                        let (shape, limit) = (&spread.spread, &spread.dense);
                        gather(
                            queue,
                            &dense,
                            shape,
                            limit,
                            false,
                            real,
                            double,
                            &mut spread_buf,
                        )?;
                        exec(Some((&spread_buf, 0)), &mut out)?;
                    }
                }
                Data::Own(out)
            }
        };
        shape = to;
    }
    let mut out = match data {
        Data::Own(buf) => buf,
        Data::Input(..) => {
            return Err(Error::Cuda {
                what: "a device transform without a pass".into(),
            })
        }
    };
    let scale: f64 = recipe.passes.iter().map(|p| p.scale).product();
    if scale != 1.0 {
        let count = element_count(&recipe.output)? * if last_real { 1 } else { 2 };
        let entry = if double {
            "ufunc_fft_scale_f64"
        } else {
            "ufunc_fft_scale_f32"
        };
        let args = vec![
            Arg::I64(count as i64),
            Arg::I64(scale.to_bits() as i64),
            Arg::Out(&mut out),
        ];
        launch(queue, entry, count, args)?;
    }
    if queue.deferred.is_none() {
        queue.wait()?;
    }
    Ok(out)
}

/// A C-order copy of `input` (elements `T`) in new device memory.
pub(crate) fn contiguous<T: FftElement>(queue: &Queue, input: &FftInput<'_>) -> Result<Buffer> {
    let real = size_of::<T::Real>();
    let complex = size_of::<T>() == 2 * real;
    let mut out = queue.alloc(byte_size(input.shape, size_of::<T>())?)?;
    gather(
        queue,
        input,
        input.shape,
        input.shape,
        complex,
        size_of::<T>(),
        real == 8,
        &mut out,
    )?;
    if queue.deferred.is_none() {
        queue.wait()?;
    }
    Ok(out)
}

/// Gathers `input` into `out`, C order of `shape`: element `k` of an axis from the input's
/// element `k` where `k < limit`, else zero; real input widened when `out` is complex.
#[allow(clippy::too_many_arguments)]
fn gather(
    queue: &Queue,
    input: &FftInput<'_>,
    shape: &[usize],
    limit: &[usize],
    input_complex: bool,
    out_elem: usize,
    double: bool,
    out: &mut Buffer,
) -> Result<()> {
    let count = element_count(shape)?;
    let out_complex = out_elem == 2 * if double { 8 } else { 4 };
    let entry = match (double, input_complex, out_complex) {
        (false, false, false) => "ufunc_fft_gather_f32_f32",
        (false, false, true) => "ufunc_fft_gather_f32_c32",
        (false, true, _) => "ufunc_fft_gather_c32_c32",
        (true, false, false) => "ufunc_fft_gather_f64_f64",
        (true, false, true) => "ufunc_fft_gather_f64_c64",
        (true, true, _) => "ufunc_fft_gather_c64_c64",
    };
    let i64s = |s: &[usize]| s.iter().map(|&x| x as i64).collect::<Vec<_>>();
    let shape_mem = queue.upload_i64(&i64s(shape))?;
    let limit_mem = queue.upload_i64(&i64s(limit))?;
    let strides: Vec<i64> = input.strides.iter().map(|&s| s as i64).collect();
    let strides_mem = queue.upload_i64(&strides)?;
    let args = vec![
        Arg::I64(count as i64),
        Arg::I32(shape.len() as i32),
        Arg::In(&shape_mem, 0),
        Arg::In(&limit_mem, 0),
        Arg::In(&strides_mem, 0),
        Arg::In(input.mem, input.offset),
        Arg::Out(out),
    ];
    launch(queue, entry, count, args)
}

/// Clears the imaginary parts of the zero and Nyquist frequencies along the last axis of
/// `stage` (a real inverse), which a real output cannot hold.
fn hermitian(
    queue: &Queue,
    stage: &Stage,
    shape: &[usize],
    double: bool,
    data: &mut Buffer,
) -> Result<()> {
    let axis = stage.first + stage.n.len() - 1;
    let n = stage.n[stage.n.len() - 1];
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let nyquist = if n % 2 == 0 { (n / 2) as i64 } else { -1 };
    let entry = if double {
        "ufunc_fft_hermitian_c64"
    } else {
        "ufunc_fft_hermitian_c32"
    };
    let items = outer * inner * 2;
    let args = vec![
        Arg::I64(outer as i64),
        Arg::I64(shape[axis] as i64),
        Arg::I64(inner as i64),
        Arg::I64(nyquist),
        Arg::Out(data),
    ];
    launch(queue, entry, items, args)
}

// The support kernels: gathering, the Hermitian fix and scaling.
super::kernel::support_kernels!(SUPPORT, "ufunc_fft_support", include_str!("fft.cuh"));

fn launch(queue: &Queue, entry: &'static str, items: usize, args: Vec<Arg<'_>>) -> Result<()> {
    launch_support(queue, &SUPPORT, entry, items, args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fft::{plan_recipe, DefaultAxes, FftOptions, Transform};

    fn stages(shape: &[usize], t: Transform, o: FftOptions) -> Vec<Stage> {
        plan_stages(&plan_recipe(shape, t, &o, DefaultAxes::All).unwrap().passes)
    }

    #[test]
    fn support_kernels_compile_with_nvrtc() {
        crate::cuda::assert_compiles("support_kernels_compile_with_nvrtc", (SUPPORT.source)());
    }

    #[test]
    fn adjacent_passes_share_a_plan() {
        let s = stages(&[4, 6, 8], Transform::Forward, FftOptions::new());
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].first, s[0].n.clone()), (0, vec![4, 6, 8]));
        // Axes 0 and 2 are not adjacent: two plans.
        let s = stages(
            &[4, 6, 8],
            Transform::Forward,
            FftOptions::new().axes(&[0, 2]),
        );
        assert_eq!(s.len(), 2);
        // rfftn: the real pass on the innermost axis takes the complex ones before it.
        let s = stages(
            &[4, 6, 8],
            Transform::RealForward,
            FftOptions::new().axes(&[1, 2]),
        );
        assert_eq!(s.len(), 1);
        assert_eq!(
            (s[0].kind, s[0].first, s[0].n.clone()),
            (FftKind::R2C, 1, vec![6, 8])
        );
        // ... but not when its axis is not the innermost.
        let s = stages(
            &[4, 6, 8],
            Transform::RealForward,
            FftOptions::new().axes(&[2, 1]),
        );
        assert_eq!(s.len(), 2);
        // irfftn: the complex passes, then a 1-d real inverse of its own.
        let s = stages(&[4, 6, 5], Transform::RealInverse, FftOptions::new());
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].kind, s[0].n.clone()), (FftKind::C2C, vec![4, 6]));
        assert_eq!((s[1].kind, s[1].n.clone()), (FftKind::C2R, vec![8]));
    }

    #[test]
    fn layouts_batch_over_the_outer_or_the_inner_axes() {
        let stage = Stage {
            kind: FftKind::C2C,
            inverse: false,
            first: 1,
            n: vec![6],
        };
        // 4 outer, 8 inner: one run per outer index, batched over the inner axis.
        let (l, runs, _) = stage_layout(&stage, &[4, 6, 8], &[4, 6, 8], false);
        assert_eq!((l.batch, l.istride, l.idist), (8, 8, 1));
        assert_eq!(runs, (0..4).map(|o| (o * 48, o * 48)).collect::<Vec<_>>());
        // 40 outer, 2 inner: one run per inner index, batched over the outer axis.
        let (l, runs, _) = stage_layout(&stage, &[40, 6, 2], &[40, 6, 2], false);
        assert_eq!((l.batch, l.istride, l.idist), (40, 2, 12));
        assert_eq!(runs, vec![(0, 0), (1, 1)]);
        // The last axis: one run.
        let stage = Stage {
            first: 2,
            n: vec![8],
            kind: FftKind::R2C,
            inverse: false,
        };
        let (l, runs, spread) = stage_layout(&stage, &[4, 6, 8], &[4, 6, 5], true);
        assert_eq!(
            (l.batch, l.idist, l.odist, l.onembed.clone()),
            (24, 8, 5, vec![5])
        );
        assert_eq!(runs, vec![(0, 0)]);
        assert_eq!(spread, None);
    }

    /// The C-order multi-index of element `k` of `shape`.
    fn unravel(mut k: usize, shape: &[usize]) -> Vec<usize> {
        let mut index = vec![0; shape.len()];
        for (i, &n) in index.iter_mut().zip(shape).rev() {
            *i = k % n;
            k /= n;
        }
        index
    }

    /// Every element a run of `layout` reaches on one side: `offset + batch * dist +
    /// (C-order index in embed) * stride` over the transform's own lengths.
    fn reached(layout: &FftLayout, input: bool, offset: usize, n: &[usize]) -> Vec<usize> {
        let (embed, stride, dist) = if input {
            (&layout.inembed, layout.istride, layout.idist)
        } else {
            (&layout.onembed, layout.ostride, layout.odist)
        };
        let embed: Vec<usize> = embed.iter().map(|&e| e as usize).collect();
        let strides = c_strides(&embed);
        let mut out = vec![];
        for b in 0..layout.batch as usize {
            for k in 0..n.iter().product::<usize>() {
                let idx = unravel(k, n);
                let within: isize = idx
                    .iter()
                    .zip(&strides)
                    .map(|(&i, &s)| i as isize * s)
                    .sum();
                out.push(offset + b * dist as usize + within as usize * stride as usize);
            }
        }
        out
    }

    /// cuFFT takes real data only at addresses aligned to its complex type: a real axis with
    /// axes after it gets its real side spread so that every run starts at an even element,
    /// and the runs together still reach each element of the spread buffer that holds data
    /// exactly once.
    #[test]
    fn real_runs_start_on_complex_elements() {
        for (shape, axis) in [
            (vec![5, 7, 3], 1),
            (vec![3, 5, 7], 1),
            (vec![3, 5, 7], 0),
            (vec![2, 5, 3], 1),
            (vec![9, 4, 5], 0),
            (vec![40, 6, 3], 1),
            (vec![3, 3, 3, 3], 2),
            (vec![7, 3], 0),
            (vec![4, 6, 8], 1),
        ] {
            for kind in [FftKind::R2C, FftKind::C2R] {
                let n = shape[axis];
                let stage = Stage {
                    kind,
                    inverse: kind == FftKind::C2R,
                    first: axis,
                    n: vec![n],
                };
                let mut half = shape.clone();
                half[axis] = n / 2 + 1;
                let (from, to) = match kind {
                    FftKind::R2C => (shape.clone(), half.clone()),
                    _ => (half.clone(), shape.clone()),
                };
                let (layout, runs, spread) = stage_layout(&stage, &from, &to, false);
                let real_shape = &shape;
                let what = format!("{kind:?} {shape:?} axis {axis}");
                let mut real_reached = vec![];
                for run in &runs {
                    let real = *real_offset(kind, &mut run.clone());
                    assert_eq!(real % 2, 0, "{what}: a run's real data at element {real}");
                    real_reached.extend(reached(&layout, kind == FftKind::R2C, real, &[n]));
                }
                real_reached.sort();
                let expected: Vec<usize> = match &spread {
                    None => (0..real_shape.iter().product()).collect(),
                    Some(s) => {
                        assert_eq!(
                            s.dense.iter().product::<usize>(),
                            real_shape.iter().product()
                        );
                        let (dense, strides) = (&s.dense, c_strides(&s.spread));
                        (0..dense.iter().product())
                            .map(|k| {
                                let idx = unravel(k, dense);
                                idx.iter()
                                    .zip(&strides)
                                    .map(|(&i, &s)| i * s as usize)
                                    .sum()
                            })
                            .collect()
                    }
                };
                assert_eq!(real_reached, expected, "{what}");
            }
        }
    }
}
