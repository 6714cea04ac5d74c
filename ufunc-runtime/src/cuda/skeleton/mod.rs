//! Kernel skeletons: the `__global__` functions around a translated body, one file per kernel
//! kind (`elementwise`: `{name}_contig` and `{name}_strided`; `reduce`: the ufunc methods'
//! kernels beside those; `gufunc`: `{name}_gufunc`). The
//! macro translates only the user's code (helpers, constants, the body's device function) and
//! says which kind it needs; the runtime writes the rest, so a new kernel kind needs no macro
//! change.

mod elementwise;
mod gufunc;
mod reduce;

use super::kernel::cuda_prelude;

/// The kernels a translated function needs, with what the skeleton must know of its device
/// function (named `device_fn` in the translated code).
#[derive(Debug, Clone, Copy)]
pub enum KernelKind {
    /// A `#[vectorize]` body: the C++ element types of its parameters and results.
    Elementwise {
        /// The body's device function.
        device_fn: &'static str,
        /// C++ type of each input (`f32`, `c64`, ...).
        inputs: &'static [&'static str],
        /// C++ type of each output.
        outputs: &'static [&'static str],
        /// Whether the function has the ufunc methods (`f(T, T) -> T`): their kernels
        /// (`reduce`) are added.
        methods: bool,
    },
    /// A `#[guvectorize]` core function.
    Gufunc {
        /// The core's device function.
        device_fn: &'static str,
        /// Every operand in layout order (inputs, output parameters, returned values).
        operands: &'static [GuOperand],
        /// The operands the core function takes, in its parameter order.
        call_order: &'static [usize],
        /// How many leading axes of the one output view get a thread per index (0: one thread
        /// per loop item).
        mapped_axes: usize,
    },
}

/// One operand of a gufunc kernel.
#[derive(Debug, Clone, Copy)]
pub enum GuOperand {
    /// A core view of `rank` dimensions of `elem` (a C++ type).
    View {
        /// C++ element type.
        elem: &'static str,
        /// Number of core dimensions.
        rank: usize,
        /// Whether the core writes it (`ArrayViewMut`).
        mutable: bool,
    },
    /// A `()` input, passed by value.
    ScalarIn(&'static str),
    /// A `()` output taken as `&mut T`.
    ScalarOut(&'static str),
    /// A `()` output returned by the core function.
    Return(&'static str),
}

/// The complete source of kernel `name`: the prelude, the `translated` code, then the
/// skeleton of `kind`.
///
/// ```
/// use ufunc_runtime::{kernel_source, KernelKind};
/// let kind = KernelKind::Elementwise {
///     device_fn: "body",
///     inputs: &["f32"],
///     outputs: &["f32"],
///     methods: false,
/// };
/// let src = kernel_source("twice", &kind, "__device__ f32 body(f32 x) { return x * 2.0f; }\n");
/// assert!(src.contains("extern \"C\" __global__ void twice_contig(long long n,"));
/// assert!(src.contains("auto r = body(in0[i]);"));
/// ```
pub fn kernel_source(name: &str, kind: &KernelKind, translated: &str) -> String {
    let skeleton = match *kind {
        KernelKind::Elementwise {
            device_fn,
            inputs,
            outputs,
            methods,
        } => {
            let mut s = elementwise::emit(name, device_fn, inputs, outputs);
            if methods {
                s.push_str(&reduce::emit(name, device_fn, outputs[0]));
            }
            s
        }
        KernelKind::Gufunc {
            device_fn,
            operands,
            call_order,
            mapped_axes,
        } => gufunc::emit(name, device_fn, operands, call_order, mapped_axes),
    };
    format!("{}{translated}{skeleton}", cuda_prelude())
}

/// The last parameter of every kernel: the launch's status word (see the prelude).
const STATUS_PARAM: &str = "int* __restrict__ __ufunc_status_word";
/// The first statement of every kernel: device functions report panics to this launch.
const STATUS_ENTRY: &str = "    __ufunc_status = __ufunc_status_word;";

/// `for (long long index = ...; index < total; ...) {`, spread over the whole grid.
fn grid_stride_head(index: &str, total: &str) -> String {
    format!(
        r#"    for (long long {index} = blockIdx.x * (long long)blockDim.x + threadIdx.x; {index} < {total};
         {index} += (long long)gridDim.x * blockDim.x) {{"#
    )
}

/// `off[k]`, the element offset of operand `k`, from the C-order multi-index of item `index`
/// over `shape` and per-operand `strides` (`strides[k * ndim + d]`).
/// The outermost index is what the inner axes leave (the item is below the shape's product),
/// which saves a 64-bit division and remainder per item.
fn offsets_of(index: &str, nops: usize, ndim: &str, shape: &str, strides: &str) -> String {
    format!(
        r#"        long long off[{nops}] = {{0}};
        long long rest = {index};
        for (int d = {ndim} - 1; d > 0; --d) {{
            long long idx = rest % {shape}[d];
            rest /= {shape}[d];
            for (int k = 0; k < {nops}; ++k) off[k] += idx * {strides}[k * {ndim} + d];
        }}
        if ({ndim} > 0)
            for (int k = 0; k < {nops}; ++k) off[k] += rest * {strides}[k * {ndim}];"#
    )
}

/// The head of a grid-stride loop over `n` items (`index`), computing the operands' offsets
/// of each (see [`offsets_of`]). The loop's body follows; the caller closes it.
fn grid_stride_offsets(index: &str, nops: usize, ndim: &str, shape: &str, strides: &str) -> String {
    format!(
        "{}\n{}",
        grid_stride_head(index, "n"),
        offsets_of(index, nops, ndim, shape, strides)
    )
}
