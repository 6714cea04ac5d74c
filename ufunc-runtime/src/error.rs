//! The one error type of the runtime: every variant carries the data that was wrong.

use crate::Target;
use std::fmt;

/// What went wrong in a ufunc call.
///
/// ```
/// use ufunc_runtime::{broadcast_shapes, Error};
/// let err = broadcast_shapes(&[&[3, 4], &[5]]).unwrap_err();
/// assert_eq!(err.to_string(), "operands could not be broadcast together with shapes (3,4) (5,)");
/// assert!(matches!(err, Error::Broadcast { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The operand shapes do not broadcast together under NumPy's rules.
    Broadcast {
        /// The shape of every operand, in argument order.
        shapes: Vec<Vec<usize>>,
    },
    /// An output array given to `out` does not have the broadcast shape of the inputs.
    OutputShape {
        /// Which output (0 for the first).
        output: usize,
        /// The broadcast shape of the inputs.
        expected: Vec<usize>,
        /// The shape of the array that was given.
        found: Vec<usize>,
    },
    /// An operand a gufunc with an in-place layout writes would have to be broadcast to the
    /// loop shape of the call (each of its loop dimensions must be the call's).
    InPlaceBroadcast {
        /// The operand's name.
        operand: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// The broadcast loop shape of all operands.
        loop_shape: Vec<usize>,
    },
    /// An array of this shape cannot exist: its elements or bytes overflow what one allocation
    /// may hold (`isize::MAX` bytes; for an empty shape, the product of its non-zero lengths).
    TooLarge {
        /// The shape that overflowed.
        shape: Vec<usize>,
    },
    /// The memory for a result could not be allocated.
    OutOfMemory {
        /// The shape of the array.
        shape: Vec<usize>,
        /// The bytes asked for.
        bytes: usize,
    },
    /// The function was called on a target it was not compiled for.
    TargetNotCompiled {
        /// The ufunc's name.
        function: &'static str,
        /// The target that was asked for.
        target: Target,
        /// The targets the function was compiled for.
        compiled: &'static [Target],
    },
    /// An operand of a gufunc has fewer dimensions than its core dimensions need.
    CoreRank {
        /// The operand's parameter name.
        operand: &'static str,
        /// Its number of dimensions.
        ndim: usize,
        /// Its core dimensions as written in the layout, e.g. `(m,n)`.
        core: String,
        /// The fewest dimensions it needs (optional dimensions may be missing).
        needed: usize,
    },
    /// A named core dimension has different sizes in two operands.
    CoreDimMismatch {
        /// The dimension's name in the layout.
        dim: &'static str,
        /// The operand that fixed the size first.
        first: &'static str,
        /// The size it fixed.
        first_size: usize,
        /// The operand that disagrees.
        operand: &'static str,
        /// Its size.
        size: usize,
    },
    /// A fixed-size core dimension, like `(3)`, has another size.
    FixedCoreDim {
        /// The operand's parameter name.
        operand: &'static str,
        /// The size the layout fixes.
        expected: usize,
        /// The size the operand has.
        found: usize,
    },
    /// A core dimension that appears only in outputs has no size: the call must pass `out`.
    UnboundOutputDim {
        /// The dimension's name.
        dim: &'static str,
        /// The output it appears in.
        output: &'static str,
    },
    /// The loop (non-core) dimensions of the operands do not broadcast together.
    LoopBroadcast {
        /// Each operand's name and loop shape.
        shapes: Vec<(&'static str, Vec<usize>)>,
    },
    /// A gufunc layout was bound to another number of inputs or outputs than it names.
    OperandCount {
        /// The layout, e.g. `(m,n),(n)->(m)`.
        layout: &'static str,
        /// `"inputs"` or `"outputs"`.
        kind: &'static str,
        /// How many the layout names.
        expected: usize,
        /// How many were given.
        found: usize,
    },
    /// Two arrays that must have the same shape do not.
    ShapeMismatch {
        /// What was being done, e.g. `phase_cross_correlation`.
        context: &'static str,
        /// The names of the two arrays.
        names: [&'static str; 2],
        /// Their shapes.
        shapes: [Vec<usize>; 2],
    },
    /// An option or argument has a value that is not allowed.
    InvalidArgument {
        /// The option's name, e.g. `upsample_factor`.
        name: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// An axis (of a transform or convolution) is not an axis of the array.
    AxisOutOfRange {
        /// The axis asked for.
        axis: usize,
        /// The array's number of dimensions.
        ndim: usize,
    },
    /// An axis given to a ufunc method (`reduce`, `accumulate`) is not an axis of the array.
    MethodAxis {
        /// The ufunc's name.
        function: &'static str,
        /// The method, e.g. `reduce`.
        method: &'static str,
        /// The axis as given (negative counts from the end).
        axis: isize,
        /// The array's number of dimensions.
        ndim: usize,
    },
    /// An array given to `reduce`'s `out` has neither the reduced shape nor the reduced
    /// shape with the reduced axes kept (as length 1).
    ReducedShape {
        /// The ufunc's name.
        function: &'static str,
        /// The shape of the array that was given.
        found: Vec<usize>,
        /// The reduced shape.
        expected: Vec<usize>,
        /// The reduced shape with the reduced axes kept.
        keepdims: Vec<usize>,
    },
    /// An axis appears more than once among the axes of a reduction.
    MethodRepeatedAxis {
        /// The ufunc's name.
        function: &'static str,
        /// The axes as given.
        axes: Vec<isize>,
    },
    /// A reduction over several axes of a function that may not be regrouped (neither
    /// `associative = true` nor an identity), as NumPy refuses for a ufunc not reorderable.
    NotReorderable {
        /// The ufunc's name.
        function: &'static str,
        /// The axes that would be reduced (counted from 0).
        axes: Vec<usize>,
    },
    /// A reduction over an empty axis, of a function with no identity, would have a result.
    EmptyReduction {
        /// The ufunc's name.
        function: &'static str,
        /// The first empty reduced axis.
        axis: usize,
        /// The shape of the array reduced.
        shape: Vec<usize>,
    },
    /// An index given to a ufunc's `at` is outside its axis.
    IndexOutOfBounds {
        /// The ufunc's name.
        function: &'static str,
        /// The index as given.
        index: i128,
        /// The axis it indexes.
        axis: usize,
        /// The length of that axis.
        len: usize,
    },
    /// A transform would have no points along an axis (`n = 0`, an empty axis without `n`,
    /// or `irfft` of one point without `n`).
    FftLength {
        /// The axis.
        axis: usize,
        /// The shape of the input.
        shape: Vec<usize>,
    },
    /// The shapes of two convolution inputs do not fit together.
    ConvolveShapes {
        /// The shapes of `in1` and `in2`.
        shapes: [Vec<usize>; 2],
        /// The convolved axes.
        axes: Vec<usize>,
        /// What is wrong, and what is allowed.
        reason: &'static str,
    },
    /// An input holds NaN where the computation needs finite values.
    NotFinite {
        /// What was being done.
        context: &'static str,
        /// The input's name.
        name: &'static str,
    },
    /// The `cuda` target was asked for, but there is no usable CUDA device.
    NoCudaDevice {
        /// Why: no driver library, no device, ...
        reason: String,
    },
    /// A CUDA driver call failed.
    Cuda {
        /// What was being done, and the driver's error.
        what: String,
    },
    /// NVRTC (`libnvrtc.so.13`) could not be loaded.
    NvrtcUnavailable,
    /// The device's kernels cannot be built: a GPU older than every architecture NVRTC
    /// compiles for, or a driver too old for NVRTC's code.
    KernelTarget {
        /// The device, the driver and NVRTC, and what to update.
        reason: String,
    },
    /// NVRTC rejected a generated source.
    Nvrtc {
        /// The compiler's log.
        log: String,
        /// The source it compiled.
        source: String,
    },
    /// A device view operation that does not fit the view (an index out of bounds, a zero step,
    /// axes that are not a permutation).
    View {
        /// The shape of the view.
        shape: Vec<usize>,
        /// What was asked, and why it does not fit.
        what: String,
    },
    /// The CUDA simulator's host C++ compiler rejected a generated source (or could not run).
    SimCompile {
        /// The compiler command (`CXX`, else `c++`).
        compiler: String,
        /// Its messages.
        log: String,
        /// The source it compiled.
        source: String,
    },
    /// The function body panicked for some element (integer division by zero, an explicit
    /// `panic!`, an overflow in a debug build, ...). The output is left partially written.
    KernelPanic {
        /// The ufunc's name.
        function: &'static str,
        /// The panic message.
        message: String,
    },
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Writes a shape the way NumPy prints it: `(3,4)`, `(5,)`, `()`.
pub(crate) struct ShapeDisplay<'a>(pub &'a [usize]);

impl fmt::Display for ShapeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{n}")?;
        }
        if self.0.len() == 1 {
            f.write_str(",")?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Broadcast { shapes } => {
                f.write_str("operands could not be broadcast together with shapes")?;
                for s in shapes {
                    write!(f, " {}", ShapeDisplay(s))?;
                }
                Ok(())
            }
            Error::OutputShape {
                output,
                expected,
                found,
            } => write!(
                f,
                "output {output} has shape {} but the broadcast shape of the inputs is {}",
                ShapeDisplay(found),
                ShapeDisplay(expected)
            ),
            Error::InPlaceBroadcast {
                operand,
                shape,
                loop_shape,
            } => write!(
                f,
                "`{operand}` is written in place, so it cannot be broadcast: its shape is {} but \
                 the loop shape of the operands is {}",
                ShapeDisplay(shape),
                ShapeDisplay(loop_shape)
            ),
            Error::TooLarge { shape } => write!(
                f,
                "an array of shape {} is too large: its size overflows what one allocation may \
                 hold (isize::MAX bytes)",
                ShapeDisplay(shape)
            ),
            Error::OutOfMemory { shape, bytes } => write!(
                f,
                "cannot allocate {bytes} bytes for an array of shape {}",
                ShapeDisplay(shape)
            ),
            Error::TargetNotCompiled {
                function,
                target,
                compiled,
            } => {
                write!(
                    f,
                    "`{function}` was not compiled for target `{target}`; compiled for:"
                )?;
                for t in compiled.iter() {
                    write!(f, " `{t}`")?;
                }
                Ok(())
            }
            Error::CoreRank {
                operand,
                ndim,
                core,
                needed,
            } => write!(
                f,
                "`{operand}` has {ndim} dimension(s) but its core dimensions {core} need at least \
                 {needed}"
            ),
            Error::CoreDimMismatch {
                dim,
                first,
                first_size,
                operand,
                size,
            } => write!(
                f,
                "core dimension `{dim}` has size {first_size} in `{first}` but {size} in `{operand}`"
            ),
            Error::FixedCoreDim {
                operand,
                expected,
                found,
            } => write!(
                f,
                "`{operand}` has size {found} where its layout fixes a core dimension of size {expected}"
            ),
            Error::UnboundOutputDim { dim, output } => write!(
                f,
                "core dimension `{dim}` of `{output}` appears only in outputs: call `out` with an \
                 output array so that its size is known"
            ),
            Error::LoopBroadcast { shapes } => {
                f.write_str("loop dimensions could not be broadcast together:")?;
                for (name, s) in shapes {
                    write!(f, " `{name}` {}", ShapeDisplay(s))?;
                }
                Ok(())
            }
            Error::OperandCount {
                layout,
                kind,
                expected,
                found,
            } => write!(
                f,
                "layout `{layout}` has {expected} {kind}, but {found} were given"
            ),
            Error::ShapeMismatch {
                context,
                names,
                shapes,
            } => write!(
                f,
                "{context}: `{}` has shape {} but `{}` has shape {}",
                names[0],
                ShapeDisplay(&shapes[0]),
                names[1],
                ShapeDisplay(&shapes[1])
            ),
            Error::InvalidArgument { name, message } => write!(f, "invalid `{name}`: {message}"),
            Error::AxisOutOfRange { axis, ndim } => write!(
                f,
                "axis {axis} is out of bounds for an array of dimension {ndim}"
            ),
            Error::MethodAxis {
                function,
                method,
                axis,
                ndim,
            } => write!(
                f,
                "`{function}::{method}`: axis {axis} is out of bounds for an array of dimension \
                 {ndim}"
            ),
            Error::ReducedShape {
                function,
                found,
                expected,
                keepdims,
            } => write!(
                f,
                "`{function}::reduce`: `out` has shape {} but the reduction gives {} (or {} with \
                 the reduced axes kept)",
                ShapeDisplay(found),
                ShapeDisplay(expected),
                ShapeDisplay(keepdims)
            ),
            Error::MethodRepeatedAxis { function, axes } => {
                write!(f, "`{function}::reduce`: repeated axis in axes {axes:?}")
            }
            Error::NotReorderable { function, axes } => write!(
                f,
                "reduction operation `{function}` is not reorderable, so at most one axis may be \
                 reduced, not axes {axes:?}: declare the function `associative = true` if \
                 f(f(a, b), c) == f(a, f(b, c)) and f(a, b) == f(b, a), or give it an \
                 `identity = ...`"
            ),
            Error::EmptyReduction {
                function,
                axis,
                shape,
            } => write!(
                f,
                "zero-size array to reduction operation `{function}`, which has no identity: \
                 axis {axis} of shape {} is empty (give the function `identity = ...`)",
                ShapeDisplay(shape)
            ),
            Error::IndexOutOfBounds {
                function,
                index,
                axis,
                len,
            } => write!(
                f,
                "`{function}::at`: index {index} is out of bounds for axis {axis} with size {len}"
            ),
            Error::FftLength { axis, shape } => write!(
                f,
                "invalid number of data points (0) along axis {axis} of an array of shape {}; \
                 give `n` or `s` of at least 1",
                ShapeDisplay(shape)
            ),
            Error::ConvolveShapes {
                shapes,
                axes,
                reason,
            } => write!(
                f,
                "convolution inputs of shapes {} and {} (convolved axes {axes:?}) {reason}",
                ShapeDisplay(&shapes[0]),
                ShapeDisplay(&shapes[1])
            ),
            Error::NotFinite { context, name } => {
                write!(f, "{context}: `{name}` holds NaN values")
            }
            Error::NoCudaDevice { reason } => write!(f, "no CUDA device: {reason}"),
            Error::Cuda { what } => write!(f, "CUDA error while {what}"),
            Error::NvrtcUnavailable => f.write_str(
                "NVRTC (libnvrtc.so.13) could not be loaded; install the pip package \
                 nvidia-cuda-nvrtc==13.0.* and put its nvidia/cu13/lib on LD_LIBRARY_PATH",
            ),
            Error::KernelTarget { reason } => {
                write!(f, "cannot build CUDA kernels for this device: {reason}")
            }
            Error::Nvrtc { log, source } => {
                write!(f, "NVRTC failed to compile the generated CUDA source:\n{log}\n--- source ---\n{source}")
            }
            Error::View { shape, what } => {
                write!(f, "device view of shape {}: {what}", ShapeDisplay(shape))
            }
            Error::SimCompile {
                compiler,
                log,
                source,
            } => write!(
                f,
                "the CUDA simulator's compiler `{compiler}` failed on the generated source \
                 (set CXX to a C++17 compiler):\n{log}\n--- source ---\n{source}"
            ),
            Error::KernelPanic { function, message } => {
                write!(f, "the body of `{function}` panicked: {message}")
            }
        }
    }
}

impl std::error::Error for Error {}
