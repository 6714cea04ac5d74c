//! Launching a translated kernel over operands in device memory: the modules loaded so far
//! (by kernel name and source hash), and the arguments of the element-wise kernels (from the
//! same `LoopPlan` the CPU engine walks, so merged axes cost no index arithmetic) and of the
//! gufunc kernel (from the layout's binding).

use super::args::{Arg, Buffer, LaunchShape, ModuleHandle};
use super::kernel::CudaKernel;
use super::queue::Queue;
use crate::error::Result;
use crate::exec::plan_loop;
use crate::gufunc::CoreBinding;
use crate::shape::{broadcast_strides_to, c_strides, element_count, Strides};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// An input as a launch reads it: device memory, the byte offset of its first element, its
/// shape and element strides (any sign; 0 broadcasts).
pub(crate) struct LaunchInput<'a> {
    pub mem: &'a Buffer,
    pub offset: usize,
    pub shape: &'a [usize],
    pub strides: Strides,
}

/// An output as a launch writes it: device memory holding its whole shape in C order.
pub(crate) struct LaunchOutput<'a> {
    pub mem: &'a mut Buffer,
    pub shape: &'a [usize],
}

/// The loaded module of `kernel`: from memory, or compiled (or read from the disk cache) and
/// loaded. Modules are known by kernel name, source hash and options, so two functions with
/// the same source share one.
pub(crate) fn module(queue: &Queue, kernel: &CudaKernel) -> Result<ModuleHandle> {
    type Key = (&'static str, u64, bool);
    static MODULES: OnceLock<Mutex<HashMap<Key, ModuleHandle>>> = OnceLock::new();
    let source = (kernel.source)();
    let key = (kernel.name, source.hash(), kernel.fast_math);
    let mut modules = MODULES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(m) = modules.get(&key) {
        return Ok(m.clone());
    }
    let m = queue.backend.load(kernel, source.text())?;
    modules.insert(key, m.clone());
    Ok(m)
}

/// Queues `entry` of a hand-written support source (FFT gathers, registration reductions) over
/// `items` grid-stride items. Support kernels cannot panic: they share one status word per
/// queue that is never read, so a stream's `synchronize` reads back only the words of kernels
/// that can.
pub(crate) fn launch_support(
    queue: &Queue,
    kernel: &CudaKernel,
    entry: &'static str,
    items: usize,
    args: Vec<Arg<'_>>,
) -> Result<()> {
    if items == 0 {
        return Ok(());
    }
    let shape = LaunchShape {
        items,
        threads: 256,
        cooperative: false,
    };
    queue_support(queue, kernel, entry, shape, args)
}

/// Queues `entry` of a hand-written support source as one block of `threads` that
/// synchronise (`__syncthreads`: a cooperative launch, which the simulator runs with threads
/// of their own). The kernel's other blocks, where the simulator runs some, must return.
pub(crate) fn launch_support_block(
    queue: &Queue,
    kernel: &CudaKernel,
    entry: &'static str,
    threads: u32,
    args: Vec<Arg<'_>>,
) -> Result<()> {
    let shape = LaunchShape {
        items: threads as usize,
        threads,
        cooperative: true,
    };
    queue_support(queue, kernel, entry, shape, args)
}

fn queue_support(
    queue: &Queue,
    kernel: &CudaKernel,
    entry: &'static str,
    shape: LaunchShape,
    mut args: Vec<Arg<'_>>,
) -> Result<()> {
    let module = module(queue, kernel)?;
    queue.with_support_status(|status| queue.launch(&module, entry, shape, &mut args, status))
}

/// Launches `entry` of `kernel` on `queue` with `args` and a status word of its own (the last
/// kernel parameter); on a waiting queue, waits and reports a panic.
pub(super) fn run(
    queue: &Queue,
    function: &'static str,
    kernel: &CudaKernel,
    entry: &str,
    shape: LaunchShape,
    args: Vec<Arg<'_>>,
) -> Result<()> {
    let mut status = queue.status_word()?;
    queue_with_status(queue, kernel, entry, shape, args, &mut status)?;
    queue.finish_launch(function, kernel.panics, status)
}

/// Queues `entry` of `kernel` on `queue` with `args` and the status word `status`, which
/// launches queued one after another may share (the first panic stays in it): `finish_launch`
/// then waits once for all of them.
pub(super) fn queue_with_status(
    queue: &Queue,
    kernel: &CudaKernel,
    entry: &str,
    shape: LaunchShape,
    mut args: Vec<Arg<'_>>,
    status: &mut Buffer,
) -> Result<()> {
    let module = module(queue, kernel)?;
    queue.launch(&module, entry, shape, &mut args, status)
}

/// Launches the contiguous or the strided kernel of `kernel` over `shape`: inputs with any
/// offsets, shapes and strides (broadcast to `shape`), outputs of the full `shape` in C order.
pub(crate) fn launch_elementwise(
    queue: &Queue,
    function: &'static str,
    kernel: &CudaKernel,
    ins: &[LaunchInput<'_>],
    outs: &mut [&mut Buffer],
    shape: &[usize],
) -> Result<()> {
    let total = element_count(shape)?;
    if total == 0 {
        return Ok(());
    }
    let launch = LaunchShape {
        items: total,
        threads: 256,
        cooperative: false,
    };
    let mut strides: Vec<Strides> = Vec::with_capacity(ins.len() + outs.len());
    for op in ins {
        strides.push(broadcast_strides_to(shape, op.shape, &op.strides)?);
    }
    let out_strides = c_strides(shape);
    strides.extend(outs.iter().map(|_| out_strides.clone()));
    // The outputs are C order, so the plan flips no axis: its offsets are all zero.
    let plan = plan_loop(shape, &strides, ins.len());
    let mut args = vec![Arg::I64(total as i64)];
    if plan.shape.len() == 1 && plan.strides.iter().all(|s| s[0] == 1) {
        args.extend(ins.iter().map(|op| Arg::In(op.mem, op.offset)));
        args.extend(outs.iter_mut().map(|m| Arg::Out(m)));
        let entry = format!("{}_contig", kernel.name);
        return run(queue, function, kernel, &entry, launch, args);
    }
    let shape_i64: Vec<i64> = plan.shape.iter().map(|&d| d as i64).collect();
    let strides_i64: Vec<i64> = plan.strides.iter().flatten().map(|&s| s as i64).collect();
    let shape_mem = queue.upload_i64(&shape_i64)?;
    let strides_mem = queue.upload_i64(&strides_i64)?;
    args.push(Arg::I32(plan.shape.len() as i32));
    args.push(Arg::In(&shape_mem, 0));
    args.push(Arg::In(&strides_mem, 0));
    args.extend(ins.iter().map(|op| Arg::In(op.mem, op.offset)));
    args.extend(outs.iter_mut().map(|m| Arg::Out(m)));
    let entry = format!("{}_strided", kernel.name);
    run(queue, function, kernel, &entry, launch, args)
}

/// Launches `<name>_gufunc` over the loop items of `binding`, operands in device memory.
pub(crate) fn launch_gufunc(
    queue: &Queue,
    function: &'static str,
    kernel: &CudaKernel,
    ins: &[LaunchInput<'_>],
    outs: &mut [LaunchOutput<'_>],
    binding: &CoreBinding,
) -> Result<()> {
    let total = element_count(&binding.loop_shape)?;
    if total == 0 {
        return Ok(());
    }
    let out_strides: Vec<Strides> = outs.iter().map(|o| c_strides(o.shape)).collect();
    let operands = ins.iter().map(|op| (op.shape, &op.strides[..])).chain(
        outs.iter()
            .zip(&out_strides)
            .map(|(o, s)| (o.shape, &s[..])),
    );
    let (mut loop_strides, mut core_shapes, mut core_strides) =
        (Vec::new(), Vec::new(), Vec::new());
    for (k, (shape, strides)) in operands.enumerate() {
        let n_core = binding.core_axes[k].iter().filter(|a| a.is_some()).count();
        let n_loop = shape.len() - n_core;
        let ls = broadcast_strides_to(&binding.loop_shape, &shape[..n_loop], &strides[..n_loop])?;
        loop_strides.extend(ls.iter().map(|&s| s as i64));
        core_shapes.extend(binding.core_shapes[k].iter().map(|&n| n as i64));
        core_strides.extend(
            binding.core_axes[k]
                .iter()
                .map(|a| a.map_or(0, |a| strides[a] as i64)),
        );
    }
    let loop_shape: Vec<i64> = binding.loop_shape.iter().map(|&n| n as i64).collect();
    let loop_shape_mem = queue.upload_i64(&loop_shape)?;
    let loop_strides_mem = queue.upload_i64(&loop_strides)?;
    let core_shapes_mem = queue.upload_i64(&core_shapes)?;
    let core_strides_mem = queue.upload_i64(&core_strides)?;
    let mut args = vec![
        Arg::I64(total as i64),
        Arg::I32(binding.loop_shape.len() as i32),
        Arg::In(&loop_shape_mem, 0),
        Arg::In(&loop_strides_mem, 0),
        Arg::In(&core_shapes_mem, 0),
        Arg::In(&core_strides_mem, 0),
    ];
    args.extend(ins.iter().map(|op| Arg::In(op.mem, op.offset)));
    args.extend(outs.iter_mut().map(|o| Arg::Out(&mut *o.mem)));
    // A mapped kernel has a thread per loop item and index of the output's leading axes (one
    // for an empty axis, as the kernel counts them).
    let per_item: usize = match binding.core_shapes.last() {
        Some(out_core) if kernel.mapped_axes > 0 => out_core[..kernel.mapped_axes]
            .iter()
            .fold(1usize, |n, &len| n.saturating_mul(len.max(1))),
        _ => 1,
    };
    let launch = LaunchShape {
        items: total.saturating_mul(per_item),
        threads: 128,
        cooperative: false,
    };
    let entry = format!("{}_gufunc", kernel.name);
    run(queue, function, kernel, &entry, launch, args)
}
