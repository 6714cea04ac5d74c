//! What device calls accept: one input (`DeviceOperand`: a device array or view used in place,
//! or a host array, view or scalar copied in), all inputs as a tuple (`DeviceOperands`), the
//! outputs of `f::out_device` (`DeviceOutOperands`), and what a device call returns
//! (`DeviceOutputs`: device arrays per result type). They mirror the host side's `Operand`,
//! `Operands`, `OutOperands` and `Outputs`.

use super::array::{wrap, DeviceArray, DeviceView};
use super::queue::DeviceBuffer;
use crate::body::{Inputs, Outputs};
use crate::element::Element;
use crate::operand::{DimFold, Operand, RawOperand};
use crate::shape::{c_strides, Strides};
use ndarray::{ArrayBase, ArrayView, Data, Dimension, Ix0};

/// One input of a device call as given: device memory, used in place, or a host value that is
/// copied in (the device side's `RawOperand`).
pub enum RawDeviceOperand<'a> {
    /// Data already on the device: the byte offset of the first element, shape and strides.
    Device {
        /// The memory.
        mem: &'a DeviceBuffer,
        /// Byte offset of the first element.
        offset: usize,
        /// The shape.
        shape: &'a [usize],
        /// Element strides.
        strides: Strides,
    },
    /// Host data, copied in for the call.
    Host(RawOperand<'a>),
}

impl RawDeviceOperand<'_> {
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            RawDeviceOperand::Device { shape, .. } => shape,
            RawDeviceOperand::Host(r) => r.shape,
        }
    }
}

/// An input of `f::on_device`: a `&DeviceArray`, a `DeviceView`, a host array or view, or a
/// scalar.
pub trait DeviceOperand<T: Element> {
    /// Its dimension type.
    type Dim: Dimension;
    /// Where its data is.
    fn raw_device(&self) -> RawDeviceOperand<'_>;
}

impl<T: Element, D: Dimension> DeviceOperand<T> for &DeviceArray<T, D> {
    type Dim = D;
    fn raw_device(&self) -> RawDeviceOperand<'_> {
        RawDeviceOperand::Device {
            mem: &self.buf,
            offset: 0,
            shape: self.dim.slice(),
            strides: c_strides(self.dim.slice()),
        }
    }
}

impl<T: Element, D: Dimension> DeviceOperand<T> for DeviceView<'_, T, D> {
    type Dim = D;
    fn raw_device(&self) -> RawDeviceOperand<'_> {
        self.operand()
    }
}

impl<T: Element, D: Dimension> DeviceOperand<T> for &DeviceView<'_, T, D> {
    type Dim = D;
    fn raw_device(&self) -> RawDeviceOperand<'_> {
        self.operand()
    }
}

impl<T: Element, S: Data<Elem = T>, D: Dimension> DeviceOperand<T> for &ArrayBase<S, D> {
    type Dim = D;
    fn raw_device(&self) -> RawDeviceOperand<'_> {
        RawDeviceOperand::Host(Operand::<T>::raw(self))
    }
}

impl<T: Element, D: Dimension> DeviceOperand<T> for ArrayView<'_, T, D> {
    type Dim = D;
    fn raw_device(&self) -> RawDeviceOperand<'_> {
        RawDeviceOperand::Host(Operand::<T>::raw(self))
    }
}

macro_rules! scalar_device_operands {
    ($($t:ty),*) => {$(
        impl DeviceOperand<$t> for $t {
            type Dim = Ix0;
            fn raw_device(&self) -> RawDeviceOperand<'_> {
                RawDeviceOperand::Host(Operand::<$t>::raw(self))
            }
        }
    )*};
}

crate::element::for_each_element!(scalar_device_operands);

/// All inputs of a device call, as a tuple matching the body's parameters.
pub trait DeviceOperands<In: Inputs> {
    /// The dimension type of the result.
    type Dim: Dimension;
    /// Every input, in order.
    fn raw_devices(&self) -> Vec<RawDeviceOperand<'_>>;
}

macro_rules! impl_device_operands {
    ($($a:ident $t:ident $i:tt),+) => {
        impl<$($a: DeviceOperand<$t>, $t: Element),+> DeviceOperands<($($t,)+)> for ($($a,)+)
        where
            ($(<$a as DeviceOperand<$t>>::Dim,)+): DimFold,
        {
            type Dim = <($(<$a as DeviceOperand<$t>>::Dim,)+) as DimFold>::Out;
            fn raw_devices(&self) -> Vec<RawDeviceOperand<'_>> {
                vec![$(self.$i.raw_device()),+]
            }
        }
    };
}

impl_device_operands!(A0 T0 0);
impl_device_operands!(A0 T0 0, A1 T1 1);
impl_device_operands!(A0 T0 0, A1 T1 1, A2 T2 2);
impl_device_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3);
impl_device_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4);
impl_device_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4, A5 T5 5);
impl_device_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4, A5 T5 5, A6 T6 6);
impl_device_operands!(A0 T0 0, A1 T1 1, A2 T2 2, A3 T3 3, A4 T4 4, A5 T5 5, A6 T6 6, A7 T7 7);

/// The outputs of `f::out_device`: one `&mut DeviceArray` per result.
pub trait DeviceOutOperands<Out: Outputs> {
    /// Each output's memory and shape.
    fn device_outputs(&mut self) -> Vec<(&mut DeviceBuffer, &[usize])>;
}

impl<T: Element + Outputs, D: Dimension> DeviceOutOperands<T> for (&mut DeviceArray<T, D>,) {
    fn device_outputs(&mut self) -> Vec<(&mut DeviceBuffer, &[usize])> {
        vec![(&mut self.0.buf, self.0.dim.slice())]
    }
}

macro_rules! impl_device_out_operands {
    ($($t:ident $d:ident $i:tt),+) => {
        impl<$($t: Element, $d: Dimension),+> DeviceOutOperands<($($t,)+)> for ($(&mut DeviceArray<$t, $d>,)+) {
            fn device_outputs(&mut self) -> Vec<(&mut DeviceBuffer, &[usize])> {
                vec![$((&mut self.$i.buf, self.$i.dim.slice())),+]
            }
        }
    };
}

impl_device_out_operands!(T0 D0 0, T1 D1 1);
impl_device_out_operands!(T0 D0 0, T1 D1 1, T2 D2 2);
impl_device_out_operands!(T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3);

/// What a device call returns per result type: `DeviceArray<T, D>`, or a tuple of them.
pub trait DeviceOutputs: Outputs {
    /// The device arrays.
    type DeviceArrays<D: Dimension>;
    /// Wraps one device buffer per output, each with its dimension.
    fn wrap_device<D: Dimension>(bufs: Vec<DeviceBuffer>, dims: &[D]) -> Self::DeviceArrays<D>;
}

macro_rules! impl_single_device_output {
    ($($t:ty),*) => {$(
        impl DeviceOutputs for $t {
            type DeviceArrays<D: Dimension> = DeviceArray<$t, D>;
            fn wrap_device<D: Dimension>(bufs: Vec<DeviceBuffer>, dims: &[D]) -> Self::DeviceArrays<D> {
                let buf = bufs.into_iter().next().expect("one buffer per output");
                wrap(buf, &dims[0])
            }
        }
    )*};
}

crate::element::for_each_element!(impl_single_device_output);

macro_rules! impl_tuple_device_outputs {
    ($($t:ident $i:tt),+) => {
        impl<$($t: Element),+> DeviceOutputs for ($($t,)+) {
            type DeviceArrays<Dm: Dimension> = ($(DeviceArray<$t, Dm>,)+);
            fn wrap_device<Dm: Dimension>(bufs: Vec<DeviceBuffer>, dims: &[Dm]) -> Self::DeviceArrays<Dm> {
                let mut bufs = bufs.into_iter();
                ($(wrap(bufs.next().expect("one buffer per output"), &dims[$i]),)+)
            }
        }
    };
}

impl_tuple_device_outputs!(A 0, B 1);
impl_tuple_device_outputs!(A 0, B 1, C 2);
impl_tuple_device_outputs!(A 0, B 1, C 2, D 3);
