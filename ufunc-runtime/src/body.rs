//! The contract between a `#[vectorize]` function and the loop engine.
//!
//! The macro turns the user's function into a type implementing [`Body`]: its inputs as a tuple of
//! [`Element`]s, its outputs as one element or a tuple of them, and an `#[inline(always)]` `call`
//! generic over the instruction set. Everything else (broadcasting, loops, threads) is generic
//! code in this crate, instantiated once per body.

use crate::element::Element;
use crate::isa::Isa;
use ndarray::{Array, Dimension, IxDyn};
use std::mem::MaybeUninit;

/// A scalar function lifted by `#[vectorize]`: what the engine calls for each element.
pub trait Body: 'static {
    /// The parameters, as a tuple (`(f32,)` for one parameter).
    type In: Inputs;
    /// The result: one element type or a tuple of them.
    type Out: Outputs;
    /// The function's name, for error messages.
    const NAME: &'static str;
    /// Whether the body was rewritten into branch-free lane code, or runs the scalar function.
    const PATH: KernelPath;
    /// The result of reducing no elements (`identity = ...` on the attribute), if any.
    const IDENTITY: Option<Self::Out> = None;
    /// Whether `f` was declared associative and commutative (`associative = true`), so that
    /// `accumulate` may regroup it (and `reduce`, which also regroups a function with an
    /// identity); otherwise they apply `f` strictly in order, as NumPy.
    const ASSOCIATIVE: bool = false;
    /// Computes one element. Inlined into loops compiled for the instruction set `M`.
    fn call<M: Isa>(args: Self::In) -> Self::Out;
}

/// Which code a ufunc's loops run, as decided by the macro (`f::KERNEL_PATH`).
///
/// ```
/// use ufunc_runtime::KernelPath;
/// let p = KernelPath::Scalar { reason: "the body contains a `while` loop" };
/// assert!(!p.is_simd());
/// assert_eq!(p.to_string(), "scalar (the body contains a `while` loop)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelPath {
    /// The body was rewritten into straight-line lane code (vector math functions, `if`/`else`
    /// as a select) that the compiler vectorizes in the loops of every instruction set.
    Simd,
    /// The body is called as the original scalar function for each element.
    Scalar {
        /// Why the body could not be rewritten.
        reason: &'static str,
    },
}

impl KernelPath {
    /// `true` for [`KernelPath::Simd`].
    pub const fn is_simd(self) -> bool {
        matches!(self, KernelPath::Simd)
    }
}

impl std::fmt::Display for KernelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelPath::Simd => f.write_str("simd"),
            KernelPath::Scalar { reason } => write!(f, "scalar ({reason})"),
        }
    }
}

/// What a call `name(..)` in a body resolves to when `name` is a plain function rather than a
/// `#[kernel_fn]` helper: the macros glob-import it under the callee's name, and a helper's own
/// `struct name` shadows the glob. The plain function is then called as it is.
///
/// ```
/// use ufunc_runtime::{NoFma, PlainHelper};
/// fn halve(x: f32) -> f32 { x * 0.5 }
/// assert_eq!(PlainHelper::__ufunc_lane_of::<NoFma, _>(halve)(3.0), 1.5);
/// assert!(!PlainHelper::__UFUNC_KERNEL_FN);
/// ```
#[derive(Debug)]
pub struct PlainHelper {
    _private: (),
}

impl PlainHelper {
    /// Not a `#[kernel_fn]` helper (those say `true`).
    pub const __UFUNC_KERNEL_FN: bool = false;
    /// No reason to leave the lane path: the plain function is inlined into the lane code like
    /// one reached by a path (`self::f`), and vectorizes where its own code does (its math
    /// methods are the standard library's, not the vector versions of `#[kernel_fn]` helpers).
    pub const __UFUNC_SCALAR_REASON: Option<&'static str> = None;
    /// A plain function has no CUDA translation.
    pub const __UFUNC_CUDA_ERROR: Option<&'static str> =
        Some("a plain function: only #[kernel_fn] helpers are translated to CUDA");
    /// No device code, so no panic sites.
    pub const __UFUNC_PANICS: crate::cuda::PanicTable = crate::cuda::PanicTable::EMPTY;
    /// The function to call for a lane: the plain function itself.
    #[inline(always)]
    pub fn __ufunc_lane_of<M: Isa, F>(f: F) -> F {
        f
    }
    /// No device code (the `cuda` target rejects the call at compile time).
    pub fn __ufunc_cuda_fragment() -> String {
        String::new()
    }
}

/// The path of a body whose own code is straight-line: `Simd` unless a helper it calls reports
/// a reason to stay scalar (`#[kernel_fn]` helpers export theirs).
///
/// ```
/// use ufunc_runtime::{path_with_helpers, KernelPath};
/// assert_eq!(path_with_helpers(&[None, None]), KernelPath::Simd);
/// assert!(!path_with_helpers(&[None, Some("helper `h`: the body contains a `loop`")]).is_simd());
/// ```
pub const fn path_with_helpers(helper_reasons: &[Option<&'static str>]) -> KernelPath {
    match first_reason(helper_reasons) {
        Some(reason) => KernelPath::Scalar { reason },
        None => KernelPath::Simd,
    }
}

/// The first reason given, in a const context (helpers' reasons to stay scalar, or not to
/// translate to CUDA).
///
/// ```
/// use ufunc_runtime::first_reason;
/// assert_eq!(first_reason(&[None, Some("a"), Some("b")]), Some("a"));
/// assert_eq!(first_reason(&[None]), None);
/// ```
pub const fn first_reason(reasons: &[Option<&'static str>]) -> Option<&'static str> {
    let mut i = 0;
    while i < reasons.len() {
        if reasons[i].is_some() {
            return reasons[i];
        }
        i += 1;
    }
    None
}

/// Data pointers of freshly allocated outputs.
pub type OutPtrs = smallvec::SmallVec<[*mut u8; 4]>;

/// A tuple of input elements, read from typed pointers.
pub trait Inputs: Copy {
    /// `size_of` of each element.
    const SIZES: &'static [usize];
    /// Typed base pointers, one per input.
    type Ptrs: Copy;
    /// Casts the engine's byte pointers to typed pointers.
    ///
    /// # Safety
    /// `ptrs` holds at least one pointer per input, each to elements of that input's type.
    unsafe fn ptrs(ptrs: &[*const u8]) -> Self::Ptrs;
    /// Reads element `i` of every input.
    ///
    /// # Safety
    /// Element `i` is in bounds for every pointer.
    unsafe fn load(p: Self::Ptrs, i: usize) -> Self;
}

/// One output element or a tuple of them, written through typed pointers; also knows how to
/// allocate its arrays.
pub trait Outputs: Copy {
    /// `size_of` of each element.
    const SIZES: &'static [usize];
    /// Typed base pointers, one per output.
    type Ptrs: Copy;
    /// The arrays a call returns: `Array<T, D>` or a tuple of them.
    type Arrays<D: Dimension>;
    /// The same, uninitialised.
    type Uninit<D: Dimension>;
    /// Casts the engine's byte pointers to typed pointers.
    ///
    /// # Safety
    /// `ptrs` holds at least one pointer per output, each to elements of that output's type.
    unsafe fn ptrs(ptrs: &[*mut u8]) -> Self::Ptrs;
    /// Writes element `i` of every output.
    ///
    /// # Safety
    /// Element `i` is in bounds and writable for every pointer.
    unsafe fn store(p: Self::Ptrs, i: usize, v: Self);
    /// Allocates standard-layout outputs of shape `dim` and pushes their data pointers;
    /// `OutOfMemory` (or `TooLarge`) where the memory cannot be had.
    fn alloc<D: Dimension>(dim: &D, ptrs: &mut OutPtrs) -> crate::Result<Self::Uninit<D>>;
    /// # Safety
    /// Every element of every array has been written.
    unsafe fn assume_init<D: Dimension>(u: Self::Uninit<D>) -> Self::Arrays<D>;
    /// Allocates outputs of the given shapes (one per output) filled with the default value
    /// (zero, `false`), and pushes their data pointers.
    fn alloc_default(
        shapes: &[Vec<usize>],
        ptrs: &mut OutPtrs,
    ) -> crate::Result<Self::Arrays<IxDyn>>;
}

/// Runs `B` over `n` contiguous elements. `#[inline(always)]` so that the loop is compiled for the
/// instruction set of the entry function it is inlined into.
///
/// # Safety
/// Every pointer addresses `n` elements of its operand's type; outputs do not overlap inputs.
#[inline(always)]
pub(crate) unsafe fn run_contiguous<B: Body, M: Isa>(
    n: usize,
    ins: &[*const u8],
    outs: &[*mut u8],
) {
    // SAFETY: the caller's contract: `n` elements behind every pointer.
    unsafe {
        let ip = B::In::ptrs(ins);
        let op = B::Out::ptrs(outs);
        for i in 0..n {
            B::Out::store(op, i, B::call::<M>(B::In::load(ip, i)));
        }
    }
}

macro_rules! impl_inputs {
    ($($t:ident $i:tt),+) => {
        impl<$($t: Element),+> Inputs for ($($t,)+) {
            const SIZES: &'static [usize] = &[$(size_of::<$t>()),+];
            type Ptrs = ($(*const $t,)+);
            #[inline(always)]
            unsafe fn ptrs(ptrs: &[*const u8]) -> Self::Ptrs {
                ($(ptrs[$i] as *const $t,)+)
            }
            #[inline(always)]
            unsafe fn load(p: Self::Ptrs, i: usize) -> Self {
                // SAFETY: the caller's contract: element `i` is in bounds.
                unsafe { ($(*p.$i.add(i),)+) }
            }
        }
    };
}

impl_inputs!(A 0);
impl_inputs!(A 0, B 1);
impl_inputs!(A 0, B 1, C 2);
impl_inputs!(A 0, B 1, C 2, D 3);
impl_inputs!(A 0, B 1, C 2, D 3, E 4);
impl_inputs!(A 0, B 1, C 2, D 3, E 4, F 5);
impl_inputs!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
impl_inputs!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
impl_inputs!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
impl_inputs!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
impl_inputs!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
impl_inputs!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// Allocates one zero-filled standard-layout array of `shape` and pushes its data pointer.
fn alloc_default_one<T: Element>(
    shape: &[usize],
    ptrs: &mut OutPtrs,
) -> crate::Result<Array<T, IxDyn>> {
    let mut a = crate::alloc::try_zeroed::<T, IxDyn>(&IxDyn(shape))?;
    ptrs.push(a.as_mut_ptr() as *mut u8);
    Ok(a)
}

/// Allocates one uninitialised standard-layout array and pushes its data pointer.
fn alloc_one<T, D: Dimension>(
    dim: &D,
    ptrs: &mut OutPtrs,
) -> crate::Result<Array<MaybeUninit<T>, D>> {
    let mut a = crate::alloc::try_uninit::<T, D>(dim)?;
    ptrs.push(a.as_mut_ptr() as *mut u8);
    Ok(a)
}

macro_rules! impl_single_output {
    ($($t:ty),*) => {$(
        impl Outputs for $t {
            const SIZES: &'static [usize] = &[size_of::<$t>()];
            type Ptrs = *mut $t;
            type Arrays<D: Dimension> = Array<$t, D>;
            type Uninit<D: Dimension> = Array<MaybeUninit<$t>, D>;
            #[inline(always)]
            unsafe fn ptrs(ptrs: &[*mut u8]) -> Self::Ptrs {
                ptrs[0] as *mut $t
            }
            #[inline(always)]
            unsafe fn store(p: Self::Ptrs, i: usize, v: Self) {
                // SAFETY: the caller's contract: element `i` is in bounds and writable.
                unsafe { *p.add(i) = v };
            }
            fn alloc<D: Dimension>(dim: &D, ptrs: &mut OutPtrs) -> crate::Result<Self::Uninit<D>> {
                alloc_one::<$t, D>(dim, ptrs)
            }
            unsafe fn assume_init<D: Dimension>(u: Self::Uninit<D>) -> Self::Arrays<D> {
                // SAFETY: the caller's contract: every element was written.
                unsafe { u.assume_init() }
            }
            fn alloc_default(
                shapes: &[Vec<usize>],
                ptrs: &mut OutPtrs,
            ) -> crate::Result<Self::Arrays<IxDyn>> {
                alloc_default_one::<$t>(&shapes[0], ptrs)
            }
        }
    )*};
}

crate::element::for_each_element!(impl_single_output);

macro_rules! impl_tuple_outputs {
    ($($t:ident $i:tt),+) => {
        impl<$($t: Element),+> Outputs for ($($t,)+) {
            const SIZES: &'static [usize] = &[$(size_of::<$t>()),+];
            type Ptrs = ($(*mut $t,)+);
            type Arrays<Dm: Dimension> = ($(Array<$t, Dm>,)+);
            type Uninit<Dm: Dimension> = ($(Array<MaybeUninit<$t>, Dm>,)+);
            #[inline(always)]
            unsafe fn ptrs(ptrs: &[*mut u8]) -> Self::Ptrs {
                ($(ptrs[$i] as *mut $t,)+)
            }
            #[inline(always)]
            unsafe fn store(p: Self::Ptrs, i: usize, v: Self) {
                // SAFETY: the caller's contract: element `i` is in bounds and writable.
                unsafe { $(*p.$i.add(i) = v.$i;)+ }
            }
            fn alloc<Dm: Dimension>(dim: &Dm, ptrs: &mut OutPtrs) -> crate::Result<Self::Uninit<Dm>> {
                Ok(($(alloc_one::<$t, Dm>(dim, ptrs)?,)+))
            }
            unsafe fn assume_init<Dm: Dimension>(u: Self::Uninit<Dm>) -> Self::Arrays<Dm> {
                // SAFETY: the caller's contract: every element was written.
                unsafe { ($(u.$i.assume_init(),)+) }
            }
            fn alloc_default(
                shapes: &[Vec<usize>],
                ptrs: &mut OutPtrs,
            ) -> crate::Result<Self::Arrays<IxDyn>> {
                Ok(($(alloc_default_one::<$t>(&shapes[$i], ptrs)?,)+))
            }
        }
    };
}

impl_tuple_outputs!(A 0, B 1);
impl_tuple_outputs!(A 0, B 1, C 2);
impl_tuple_outputs!(A 0, B 1, C 2, D 3);
