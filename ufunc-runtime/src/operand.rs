//! What a ufunc accepts as arguments: arrays, views and scalars as inputs; arrays and mutable
//! views as outputs. Each is reduced to a [`RawOperand`]: a pointer, a shape and element strides.

use crate::body::{Inputs, Outputs};
use crate::element::Element;
use ndarray::{ArrayBase, ArrayView, ArrayViewMut, Data, DataMut, DimMax, Dimension, Ix0};

/// An input seen by the engine: base pointer, shape, and strides in elements (any sign, 0 for a
/// broadcast axis).
#[derive(Debug, Clone, Copy)]
pub struct RawOperand<'a> {
    pub(crate) ptr: *const u8,
    pub(crate) shape: &'a [usize],
    pub(crate) strides: &'a [isize],
}

/// An output seen by the engine.
#[derive(Debug)]
pub struct RawOutOperand<'a> {
    pub(crate) ptr: *mut u8,
    pub(crate) shape: &'a [usize],
    pub(crate) strides: &'a [isize],
}

impl<'a> RawOutOperand<'a> {
    /// The output seen as an input (a gufunc's core may read its outputs).
    pub(crate) fn as_input(&self) -> RawOperand<'a> {
        RawOperand {
            ptr: self.ptr as *const u8,
            shape: self.shape,
            strides: self.strides,
        }
    }
}

/// The inputs of one call, on the stack for up to 8.
pub type RawOperands<'a> = smallvec::SmallVec<[RawOperand<'a>; 8]>;
/// The outputs of one call.
pub type RawOutOperands<'a> = smallvec::SmallVec<[RawOutOperand<'a>; 4]>;

/// A ufunc input of element type `T`: `&Array`, `&ArrayView` (any `&ArrayBase`), `ArrayView`, or
/// a plain scalar `T`.
///
/// ```
/// use ndarray::array;
/// use ufunc_runtime::Operand;
/// let a = array![[1.0f32, 2.0], [3.0, 4.0]];
/// assert_eq!(Operand::<f32>::shape(&&a), &[2, 2]);
/// assert_eq!(Operand::<f32>::shape(&a.t()), &[2, 2]);
/// assert_eq!(Operand::<f32>::shape(&1.5f32), &[] as &[usize]);
/// ```
pub trait Operand<T: Element> {
    /// The dimension type of the operand (`Ix0` for a scalar).
    type Dim: Dimension;
    /// Pointer, shape and strides of the operand.
    fn raw(&self) -> RawOperand<'_>;
    /// The operand's shape.
    fn shape(&self) -> &[usize] {
        self.raw().shape
    }
}

impl<T: Element, S: Data<Elem = T>, D: Dimension> Operand<T> for &ArrayBase<S, D> {
    type Dim = D;
    #[inline]
    fn raw(&self) -> RawOperand<'_> {
        RawOperand {
            ptr: self.as_ptr() as *const u8,
            shape: ArrayBase::shape(*self),
            strides: ArrayBase::strides(*self),
        }
    }
}

impl<'x, T: Element, D: Dimension> Operand<T> for ArrayView<'x, T, D> {
    type Dim = D;
    #[inline]
    fn raw(&self) -> RawOperand<'_> {
        RawOperand {
            ptr: self.as_ptr() as *const u8,
            shape: ArrayBase::shape(self),
            strides: ArrayBase::strides(self),
        }
    }
}

macro_rules! scalar_operands {
    ($($t:ty),*) => {$(
        impl Operand<$t> for $t {
            type Dim = Ix0;
            #[inline]
            fn raw(&self) -> RawOperand<'_> {
                RawOperand { ptr: self as *const $t as *const u8, shape: &[], strides: &[] }
            }
        }
    )*};
}

crate::element::for_each_element!(scalar_operands);

/// A ufunc output of element type `T`: `&mut Array` (any `&mut ArrayBase` with mutable data) or
/// an `ArrayViewMut`, of any strides.
pub trait OutOperand<T: Element> {
    /// Pointer, shape and strides of the output.
    fn raw_mut(&mut self) -> RawOutOperand<'_>;
}

impl<T: Element, S: DataMut<Elem = T>, D: Dimension> OutOperand<T> for &mut ArrayBase<S, D> {
    #[inline]
    fn raw_mut(&mut self) -> RawOutOperand<'_> {
        let ptr = self.as_mut_ptr() as *mut u8;
        RawOutOperand {
            ptr,
            shape: ArrayBase::shape(*self),
            strides: ArrayBase::strides(*self),
        }
    }
}

impl<'x, T: Element, D: Dimension> OutOperand<T> for ArrayViewMut<'x, T, D> {
    #[inline]
    fn raw_mut(&mut self) -> RawOutOperand<'_> {
        let ptr = self.as_mut_ptr() as *mut u8;
        RawOutOperand {
            ptr,
            shape: ArrayBase::shape(self),
            strides: ArrayBase::strides(self),
        }
    }
}

/// All inputs of a call, as a tuple matching the body's parameter tuple `In`. `Dim` is the
/// co-broadcast dimension type (static where ndarray's `DimMax` can tell, else `IxDyn`).
pub trait Operands<In: Inputs> {
    /// The dimension type of the result.
    type Dim: Dimension;
    /// The raw view of every input, in order.
    fn raws(&self) -> RawOperands<'_>;
}

/// All outputs of an `out` call, as a tuple matching the body's result type.
pub trait OutOperands<Out: Outputs> {
    /// The raw view of every output, in order.
    fn raws_mut(&mut self) -> RawOutOperands<'_>;
}

impl<T: Element + Outputs, O: OutOperand<T>> OutOperands<T> for (O,) {
    fn raws_mut(&mut self) -> RawOutOperands<'_> {
        smallvec::smallvec![self.0.raw_mut()]
    }
}

macro_rules! impl_operands {
    ($($a:ident $t:ident $i:tt),+) => {
        impl<$($a: Operand<$t>, $t: Element),+> Operands<($($t,)+)> for ($($a,)+)
        where
            ($(<$a as Operand<$t>>::Dim,)+): DimFold,
        {
            type Dim = <($(<$a as Operand<$t>>::Dim,)+) as DimFold>::Out;
            #[inline]
            fn raws(&self) -> RawOperands<'_> {
                smallvec::smallvec![$(self.$i.raw()),+]
            }
        }
    };
}

/// `DimMax` folded over a tuple of dimension types: the dimension type of their broadcast.
pub trait DimFold {
    /// The broadcast dimension type.
    type Out: Dimension;
}

impl<D0: Dimension> DimFold for (D0,) {
    type Out = D0;
}

macro_rules! impl_dim_fold {
    ($d0:ident $(, $d:ident)+) => {
        impl<$d0: Dimension $(, $d: Dimension)+> DimFold for ($d0, $($d,)+)
        where
            ($($d,)+): DimFold,
            $d0: DimMax<<($($d,)+) as DimFold>::Out>,
        {
            type Out = <$d0 as DimMax<<($($d,)+) as DimFold>::Out>>::Output;
        }
    };
}

impl_dim_fold!(D0, D1);
impl_dim_fold!(D0, D1, D2);
impl_dim_fold!(D0, D1, D2, D3);
impl_dim_fold!(D0, D1, D2, D3, D4);
impl_dim_fold!(D0, D1, D2, D3, D4, D5);
impl_dim_fold!(D0, D1, D2, D3, D4, D5, D6);
impl_dim_fold!(D0, D1, D2, D3, D4, D5, D6, D7);
impl_dim_fold!(D0, D1, D2, D3, D4, D5, D6, D7, D8);
impl_dim_fold!(D0, D1, D2, D3, D4, D5, D6, D7, D8, D9);
impl_dim_fold!(D0, D1, D2, D3, D4, D5, D6, D7, D8, D9, D10);
impl_dim_fold!(D0, D1, D2, D3, D4, D5, D6, D7, D8, D9, D10, D11);

macro_rules! impl_out_operands {
    ($($o:ident $t:ident $i:tt),+) => {
        impl<$($o: OutOperand<$t>, $t: Element),+> OutOperands<($($t,)+)> for ($($o,)+) {
            fn raws_mut(&mut self) -> RawOutOperands<'_> {
                smallvec::smallvec![$(self.$i.raw_mut()),+]
            }
        }
    };
}

impl_out_operands!(O0 T0 0, O1 T1 1);
impl_out_operands!(O0 T0 0, O1 T1 1, O2 T2 2);
impl_out_operands!(O0 T0 0, O1 T1 1, O2 T2 2, O3 T3 3);

impl_operands!(A0 T0 0);
impl_operands!(A0 T0 0, A1 T1 1);
impl_operands!(A0 T0 0, A1 T1 1, A2 T2 2);
impl_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3);
impl_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4);
impl_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4, A5 T5 5);
impl_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4, A5 T5 5, A6 T6 6);
impl_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4, A5 T5 5, A6 T6 6, A7 T7 7);
impl_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4, A5 T5 5, A6 T6 6, A7 T7 7, A8 T8 8);
impl_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4, A5 T5 5, A6 T6 6, A7 T7 7, A8 T8 8, A9 T9 9);
impl_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4, A5 T5 5, A6 T6 6, A7 T7 7, A8 T8 8, A9 T9 9, A10 T10 10);
impl_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4, A5 T5 5, A6 T6 6, A7 T7 7, A8 T8 8, A9 T9 9, A10 T10 10, A11 T11 11);
