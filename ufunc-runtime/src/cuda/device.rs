//! Device arrays: data that stays on the GPU between ufunc calls. `to_device` copies a host
//! array in, `copy_to_host` copies it back, `device_array` allocates one; `f::on_device` and
//! `f::out_device` of a cuda ufunc take device arrays (and host operands or scalars, which are
//! copied in) and leave their results on the device.

use super::kernel_of;
use super::launch::{
    alloc_zeroed, device, driver_error, launch_elementwise, upload, DEVICE_TO_HOST,
};
use crate::body::{Inputs, Outputs};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::operand::{DimFold, Operand, RawOperand};
use crate::shape::{broadcast_shape, element_count};
use crate::Target;
use cudarc::driver::CudaSlice;
use ndarray::{Array, ArrayBase, ArrayView, Data, Dimension, IntoDimension, Ix0};
use std::marker::PhantomData;
use std::sync::atomic::Ordering;

/// An n-d array in GPU memory, C order.
pub struct DeviceArray<T: Element, D: Dimension> {
    buf: CudaSlice<u8>,
    dim: D,
    elem: PhantomData<T>,
}

impl<T: Element, D: Dimension> std::fmt::Debug for DeviceArray<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceArray<{}>{:?}", T::NAME, self.dim.slice())
    }
}

impl<T: Element, D: Dimension> DeviceArray<T, D> {
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        self.dim.slice()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.dim.size()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies the array back into host memory (one transfer).
    pub fn copy_to_host(&self) -> Result<Array<T, D>> {
        let dev = device()?;
        let bytes = dev
            .stream
            .clone_dtoh(&self.buf)
            .map_err(|e| driver_error("copy_to_host", "copying a device array", e))?;
        DEVICE_TO_HOST.fetch_add(1, Ordering::Relaxed);
        let n = self.len();
        let mut v: Vec<T> = Vec::with_capacity(n);
        // SAFETY: the buffer holds `n` elements of `T` in C order, written from valid `T`s
        // (uploads or kernels storing `T`), or zeros, which are valid for every element type.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                v.as_mut_ptr() as *mut u8,
                n * size_of::<T>(),
            );
            v.set_len(n);
        }
        Array::from_shape_vec(self.dim.clone(), v).map_err(|e| Error::Cuda {
            what: format!("shaping a device array copied back: {e}"),
        })
    }
}

/// Copies a host array (any strides) to the device.
///
/// ```
/// use ndarray::array;
/// match ufunc_runtime::to_device(&array![1.0f32, 2.0]) {
///     Ok(d) => assert_eq!(d.copy_to_host().unwrap(), array![1.0f32, 2.0]),
///     Err(e) => assert!(matches!(e, ufunc_runtime::Error::NoCudaDevice { .. }), "{e}"),
/// }
/// ```
pub fn to_device<T: Element, S: Data<Elem = T>, D: Dimension>(
    a: &ArrayBase<S, D>,
) -> Result<DeviceArray<T, D>> {
    let dev = device()?;
    let raw = Operand::<T>::raw(&a);
    Ok(DeviceArray {
        buf: upload(dev, "to_device", &raw, size_of::<T>())?,
        dim: a.raw_dim(),
        elem: PhantomData,
    })
}

/// A device array of `shape`, zero-filled (so that every element is a valid `T`).
pub fn device_array<T: Element, Sh: IntoDimension>(shape: Sh) -> Result<DeviceArray<T, Sh::Dim>> {
    let dim = shape.into_dimension();
    let bytes = element_count(dim.slice())?
        .checked_mul(size_of::<T>())
        .ok_or_else(|| Error::TooLarge {
            shape: dim.slice().to_vec(),
        })?;
    Ok(DeviceArray {
        buf: alloc_zeroed(device()?, "device_array", bytes)?,
        dim,
        elem: PhantomData,
    })
}

/// An input of a device call: a device array, used in place, or a host value copied in.
pub enum DeviceInput<'a> {
    /// Data already on the device, with its shape.
    Device(&'a CudaSlice<u8>, &'a [usize]),
    /// Host data, copied in for the call.
    Host(RawOperand<'a>),
}

/// An input of `f::on_device`: a `&DeviceArray`, a host array or view, or a scalar.
pub trait DeviceOperand<T: Element> {
    /// Its dimension type.
    type Dim: Dimension;
    /// Where its data is.
    fn device_input(&self) -> DeviceInput<'_>;
}

impl<T: Element, D: Dimension> DeviceOperand<T> for &DeviceArray<T, D> {
    type Dim = D;
    fn device_input(&self) -> DeviceInput<'_> {
        DeviceInput::Device(&self.buf, self.dim.slice())
    }
}

impl<T: Element, S: Data<Elem = T>, D: Dimension> DeviceOperand<T> for &ArrayBase<S, D> {
    type Dim = D;
    fn device_input(&self) -> DeviceInput<'_> {
        DeviceInput::Host(Operand::<T>::raw(self))
    }
}

impl<T: Element, D: Dimension> DeviceOperand<T> for ArrayView<'_, T, D> {
    type Dim = D;
    fn device_input(&self) -> DeviceInput<'_> {
        DeviceInput::Host(Operand::<T>::raw(self))
    }
}

macro_rules! scalar_device_operands {
    ($($t:ty),*) => {$(
        impl DeviceOperand<$t> for $t {
            type Dim = Ix0;
            fn device_input(&self) -> DeviceInput<'_> {
                DeviceInput::Host(Operand::<$t>::raw(self))
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
    fn device_inputs(&self) -> Vec<DeviceInput<'_>>;
}

macro_rules! impl_device_operands {
    ($($a:ident $t:ident $i:tt),+) => {
        impl<$($a: DeviceOperand<$t>, $t: Element),+> DeviceOperands<($($t,)+)> for ($($a,)+)
        where
            ($(<$a as DeviceOperand<$t>>::Dim,)+): DimFold,
        {
            type Dim = <($(<$a as DeviceOperand<$t>>::Dim,)+) as DimFold>::Out;
            fn device_inputs(&self) -> Vec<DeviceInput<'_>> {
                vec![$(self.$i.device_input()),+]
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
    /// Each output's buffer and shape.
    fn device_outputs(&mut self) -> Vec<(&mut CudaSlice<u8>, &[usize])>;
}

impl<T: Element + Outputs, D: Dimension> DeviceOutOperands<T> for (&mut DeviceArray<T, D>,) {
    fn device_outputs(&mut self) -> Vec<(&mut CudaSlice<u8>, &[usize])> {
        vec![(&mut self.0.buf, self.0.dim.slice())]
    }
}

macro_rules! impl_device_out_operands {
    ($($t:ident $d:ident $i:tt),+) => {
        impl<$($t: Element, $d: Dimension),+> DeviceOutOperands<($($t,)+)> for ($(&mut DeviceArray<$t, $d>,)+) {
            fn device_outputs(&mut self) -> Vec<(&mut CudaSlice<u8>, &[usize])> {
                vec![$((&mut self.$i.buf, self.$i.dim.slice())),+]
            }
        }
    };
}

impl_device_out_operands!(T0 D0 0, T1 D1 1);
impl_device_out_operands!(T0 D0 0, T1 D1 1, T2 D2 2);
impl_device_out_operands!(T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3);

/// Device buffers of one call's inputs: borrowed device arrays, or host values copied in.
fn device_inputs<'a>(
    function: &'static str,
    inputs: &'a [DeviceInput<'a>],
    sizes: &[usize],
    uploads: &'a mut Vec<CudaSlice<u8>>,
) -> Result<Vec<(&'a CudaSlice<u8>, &'a [usize])>> {
    let dev = device()?;
    for (input, &size) in inputs.iter().zip(sizes) {
        if let DeviceInput::Host(raw) = input {
            uploads.push(upload(dev, function, raw, size)?);
        }
    }
    let mut uploaded = uploads.iter();
    Ok(inputs
        .iter()
        .map(|input| match input {
            DeviceInput::Device(buf, shape) => (*buf, *shape),
            DeviceInput::Host(raw) => (
                uploaded.next().expect("one upload per host input"),
                raw.shape,
            ),
        })
        .collect())
}

/// The broadcast shape of a device call's inputs.
fn broadcast_inputs(inputs: &[DeviceInput<'_>]) -> Result<crate::shape::Shape> {
    broadcast_shape(inputs.len(), |i| match &inputs[i] {
        DeviceInput::Device(_, s) => s,
        DeviceInput::Host(r) => r.shape,
    })
}

/// `f::on_device`: runs `B` on the GPU and leaves the results there.
pub fn call_device<B: crate::body::Body, Ops: DeviceOperands<B::In>>(
    compiled: &'static [Target],
    ops: Ops,
) -> Result<<B::Out as Outputs>::DeviceArrays<Ops::Dim>> {
    let kernel = kernel_of(B::NAME, B::CUDA, compiled)?;
    let inputs = ops.device_inputs();
    let shape = broadcast_inputs(&inputs)?;
    let dev = device()?;
    let total = element_count(&shape)?;
    let mut bufs = B::Out::SIZES
        .iter()
        .map(|&size| alloc_zeroed(dev, B::NAME, total * size))
        .collect::<Result<Vec<_>>>()?;
    let mut uploads = Vec::new();
    let ins = device_inputs(B::NAME, &inputs, B::In::SIZES, &mut uploads)?;
    let mut outs: Vec<&mut CudaSlice<u8>> = bufs.iter_mut().collect();
    launch_elementwise(dev, B::NAME, &kernel, &ins, &mut outs, &shape)?;
    let mut dim = <Ops::Dim as Dimension>::zeros(shape.len());
    dim.slice_mut().copy_from_slice(&shape);
    Ok(B::Out::wrap_device(bufs, &dim))
}

/// `f::out_device`: runs `B` on the GPU into existing device arrays of the broadcast shape.
pub fn call_out_device<
    B: crate::body::Body,
    Ops: DeviceOperands<B::In>,
    Outs: DeviceOutOperands<B::Out>,
>(
    compiled: &'static [Target],
    ops: Ops,
    mut outs: Outs,
) -> Result<()> {
    let kernel = kernel_of(B::NAME, B::CUDA, compiled)?;
    let inputs = ops.device_inputs();
    let shape = broadcast_inputs(&inputs)?;
    let mut outputs = outs.device_outputs();
    for (i, (_, s)) in outputs.iter().enumerate() {
        if *s != shape.as_slice() {
            return Err(Error::OutputShape {
                output: i,
                expected: shape.to_vec(),
                found: s.to_vec(),
            });
        }
    }
    let dev = device()?;
    let mut uploads = Vec::new();
    let ins = device_inputs(B::NAME, &inputs, B::In::SIZES, &mut uploads)?;
    let mut outs: Vec<&mut CudaSlice<u8>> = outputs.iter_mut().map(|(b, _)| &mut **b).collect();
    launch_elementwise(dev, B::NAME, &kernel, &ins, &mut outs, &shape)
}

/// Wraps device buffers as the device arrays of one output element type.
pub(crate) fn wrap<T: Element, D: Dimension>(buf: CudaSlice<u8>, dim: &D) -> DeviceArray<T, D> {
    DeviceArray {
        buf,
        dim: dim.clone(),
        elem: PhantomData,
    }
}
