//! Device arrays: data that stays on the GPU between ufunc calls. `to_device` copies a host
//! array in, `copy_to_host` copies it back, `device_array` allocates one; views (`view`, `t`,
//! `slice`, `permuted_axes`, `broadcast`) give other shapes and strides over the same memory
//! without copying.

use super::args::HostBuffer;
use super::fft::FftInput;
use super::host::upload_host;
use super::operand::RawDeviceOperand;
use super::queue::{DeviceBuffer, Queue};
use super::stream::Stream;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::operand::Operand;
use crate::shape::{
    broadcast_strides_to, byte_size, c_order_bytes, c_strides, check_output_shapes,
    is_c_contiguous, Strides,
};
use ndarray::{
    Array, ArrayBase, ArrayViewMut2, Data, Dimension, IntoDimension, Ix2, IxDyn, SliceArg,
    SliceInfoElem,
};
use std::marker::PhantomData;

/// An n-d array in GPU memory, C order.
pub struct DeviceArray<T: Element, D: Dimension> {
    pub(crate) buf: DeviceBuffer,
    pub(crate) dim: D,
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

    /// The whole array as a view.
    pub fn view(&self) -> DeviceView<'_, T, D> {
        DeviceView {
            buf: &self.buf,
            geometry: Geometry {
                offset: 0,
                strides: c_strides(self.dim.slice()),
            },
            dim: self.dim.clone(),
            elem: PhantomData,
        }
    }

    /// The transpose (axes reversed), without copying.
    pub fn t(&self) -> DeviceView<'_, T, D> {
        self.view().reversed_axes()
    }

    /// Copies the array back into host memory (one transfer), after the work queued before.
    pub fn copy_to_host(&self) -> Result<Array<T, D>> {
        self.view().copy_to_host()
    }

    /// Copies `src`, of the same shape, over this array on the device (no host transfer), and
    /// waits for the copy.
    pub fn copy_from(&mut self, src: &DeviceArray<T, D>) -> Result<()> {
        check_output_shapes(std::iter::once(self.shape()), std::iter::once(src.shape()))?;
        let queue = Queue::default_queue()?;
        queue.copy_within(&src.buf.0, &mut self.buf.0)?;
        queue.wait()
    }
}

/// Wraps device memory as a device array of `dim`.
pub(crate) fn wrap<T: Element, D: Dimension>(buf: DeviceBuffer, dim: &D) -> DeviceArray<T, D> {
    DeviceArray {
        buf,
        dim: dim.clone(),
        elem: PhantomData,
    }
}

/// A view of device memory: a shape and element strides (any sign, 0 for a broadcast axis)
/// from a first element, made without copying by [`DeviceArray::view`] and the methods here.
///
/// ```
/// use ndarray::{array, s};
/// let a = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
/// match ufunc_runtime::to_device(&a) {
///     Ok(d) => {
///         let v = d.view().slice(s![.., 1..;2]).unwrap().t();
///         assert_eq!(v.copy_to_host().unwrap(), a.slice(s![.., 1..;2]).t());
///     }
///     Err(e) => assert!(matches!(e, ufunc_runtime::Error::NoCudaDevice { .. }), "{e}"),
/// }
/// ```
pub struct DeviceView<'a, T: Element, D: Dimension> {
    buf: &'a DeviceBuffer,
    geometry: Geometry,
    dim: D,
    elem: PhantomData<T>,
}

impl<T: Element, D: Dimension> Clone for DeviceView<'_, T, D> {
    fn clone(&self) -> Self {
        DeviceView {
            buf: self.buf,
            geometry: self.geometry.clone(),
            dim: self.dim.clone(),
            elem: PhantomData,
        }
    }
}

impl<T: Element, D: Dimension> std::fmt::Debug for DeviceView<'_, T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceView<{}>{:?} strides {:?}",
            T::NAME,
            self.dim.slice(),
            self.geometry.strides.as_slice()
        )
    }
}

/// Where a view's elements are: the first one's element offset, and the strides.
#[derive(Debug, Clone, PartialEq)]
struct Geometry {
    offset: usize,
    strides: Strides,
}

/// `index` (negative from the end) as a position in `0..=len`, as ndarray reads slice bounds.
fn position(index: isize, len: usize) -> Option<usize> {
    if index < 0 {
        len.checked_sub(index.unsigned_abs())
    } else {
        (index as usize <= len).then_some(index as usize)
    }
}

impl Geometry {
    /// Slices with ndarray's semantics (a negative step walks the range from its end); `None`
    /// where ndarray would panic. Returns the new shape.
    fn slice(&mut self, shape: &[usize], info: &[SliceInfoElem]) -> Option<Vec<usize>> {
        let mut offset = self.offset as isize;
        let (mut out_shape, mut out_strides) = (Vec::new(), Strides::new());
        let mut axis = 0;
        for elem in info {
            match *elem {
                SliceInfoElem::Slice { start, end, step } => {
                    let (n, stride) = (*shape.get(axis)?, self.strides[axis]);
                    let start = position(start, n)?;
                    let end = position(end.unwrap_or(n as isize), n)?.max(start);
                    if step == 0 {
                        return None;
                    }
                    let len = (end - start).div_ceil(step.unsigned_abs());
                    if len > 0 {
                        let first = if step > 0 { start } else { end - 1 };
                        offset += first as isize * stride;
                    }
                    out_shape.push(len);
                    out_strides.push(if len <= 1 { 0 } else { stride * step });
                    axis += 1;
                }
                SliceInfoElem::Index(i) => {
                    let n = *shape.get(axis)?;
                    let i = position(i, n).filter(|&i| i < n)?;
                    offset += i as isize * self.strides[axis];
                    axis += 1;
                }
                SliceInfoElem::NewAxis => {
                    out_shape.push(1);
                    out_strides.push(0);
                }
            }
        }
        if axis != shape.len() {
            return None;
        }
        self.offset = usize::try_from(offset).ok()?;
        self.strides = out_strides;
        Some(out_shape)
    }

    /// Strides broadcast from `shape` to `to` under NumPy's rules.
    fn broadcast(&mut self, shape: &[usize], to: &[usize]) -> Result<()> {
        self.strides = broadcast_strides_to(to, shape, &self.strides)?;
        Ok(())
    }
}

impl<'a, T: Element, D: Dimension> DeviceView<'a, T, D> {
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        self.dim.slice()
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.geometry.strides
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.dim.size()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn error(&self, what: String) -> Error {
        Error::View {
            shape: self.shape().to_vec(),
            what,
        }
    }

    /// The axes in reverse order.
    pub fn reversed_axes(mut self) -> Self {
        self.dim.slice_mut().reverse();
        self.geometry.strides.reverse();
        self
    }

    /// The transpose: [`reversed_axes`](Self::reversed_axes).
    pub fn t(self) -> Self {
        self.reversed_axes()
    }

    /// Axis `k` of the result is axis `axes[k]` of this view.
    pub fn permuted_axes<A: IntoDimension<Dim = D>>(mut self, axes: A) -> Result<Self> {
        let axes = axes.into_dimension();
        let axes = axes.slice();
        let n = self.dim.ndim();
        let mut seen = vec![false; n];
        if axes.len() != n
            || axes
                .iter()
                .any(|&a| a >= n || std::mem::replace(&mut seen[a], true))
        {
            return Err(self.error(format!("{axes:?} is not a permutation of its axes")));
        }
        let (shape, strides) = (self.dim.clone(), self.geometry.strides.clone());
        for (k, &a) in axes.iter().enumerate() {
            self.dim.slice_mut()[k] = shape[a];
            self.geometry.strides[k] = strides[a];
        }
        Ok(self)
    }

    /// A slice, as ndarray's `slice` with the `s![..]` macro (ranges, steps, indices, new axes).
    pub fn slice<I: SliceArg<D>>(&self, info: I) -> Result<DeviceView<'a, T, I::OutDim>> {
        let mut geometry = self.geometry.clone();
        let shape = geometry
            .slice(self.shape(), info.as_ref())
            .ok_or_else(|| self.error(format!("slice {:?} does not fit", info.as_ref())))?;
        let mut dim = I::OutDim::zeros(shape.len());
        dim.slice_mut().copy_from_slice(&shape);
        Ok(DeviceView {
            buf: self.buf,
            geometry,
            dim,
            elem: PhantomData,
        })
    }

    /// The view broadcast to `shape` under NumPy's rules (stride 0 along repeated axes).
    pub fn broadcast<E: IntoDimension>(&self, shape: E) -> Result<DeviceView<'a, T, E::Dim>> {
        let dim = shape.into_dimension();
        let mut geometry = self.geometry.clone();
        geometry.broadcast(self.shape(), dim.slice())?;
        Ok(DeviceView {
            buf: self.buf,
            geometry,
            dim,
            elem: PhantomData,
        })
    }

    /// Copies the viewed elements into a new host array (one transfer: of the elements
    /// where they are contiguous in C order, else of the whole buffer).
    pub fn copy_to_host(&self) -> Result<Array<T, D>> {
        let size = size_of::<T>();
        byte_size(self.shape(), size)?;
        let queue = Queue::default_queue()?;
        if is_c_contiguous(self.shape(), &self.geometry.strides) {
            // Straight into the result: no copy of the whole buffer on the way.
            let mut out = crate::alloc::try_zeroed::<T, D>(&self.dim)?;
            if let Some(values) = out.as_slice_mut().filter(|v| !v.is_empty()) {
                // SAFETY: the elements' bytes, overwritten by the copy below with bytes of the
                // buffer, which holds only valid `T`s (as below).
                let bytes = unsafe {
                    std::slice::from_raw_parts_mut(
                        values.as_mut_ptr() as *mut u8,
                        std::mem::size_of_val(values),
                    )
                };
                queue.download_into(&self.buf.0, self.geometry.offset * size, bytes)?;
            }
            return Ok(out);
        }
        let bytes = queue.download(&self.buf.0)?;
        let n = self.len();
        let mut v: Vec<T> = Vec::with_capacity(n);
        if n > 0 {
            // SAFETY: views are only made by the methods above, which keep every element they
            // address inside the buffer; the buffer holds valid `T`s (uploads, kernel stores of
            // `T`, or zeros, valid for every element type).
            unsafe {
                let first = bytes.as_ptr().add(self.geometry.offset * size);
                let elems = c_order_bytes(first, self.shape(), &self.geometry.strides, size);
                std::ptr::copy_nonoverlapping(elems.as_ptr(), v.as_mut_ptr() as *mut u8, n * size);
                v.set_len(n);
            }
        }
        Array::from_shape_vec(self.dim.clone(), v).map_err(|e| Error::Cuda {
            what: format!("shaping a device array copied back: {e}"),
        })
    }

    /// The view with a dynamic dimension.
    pub(crate) fn into_dyn(self) -> DeviceView<'a, T, IxDyn> {
        DeviceView {
            buf: self.buf,
            geometry: self.geometry,
            dim: IxDyn(self.dim.slice()),
            elem: PhantomData,
        }
    }

    /// The view as a transform's input.
    pub(crate) fn fft_input(&self) -> FftInput<'_> {
        FftInput {
            mem: &self.buf.0,
            offset: self.geometry.offset * size_of::<T>(),
            shape: self.dim.slice(),
            strides: &self.geometry.strides,
        }
    }

    /// The view as a kernel operand.
    pub(crate) fn operand(&self) -> RawDeviceOperand<'_> {
        RawDeviceOperand::Device {
            mem: self.buf,
            offset: self.geometry.offset * size_of::<T>(),
            shape: self.dim.slice(),
            strides: self.geometry.strides.clone(),
        }
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
    upload_on(Queue::default_queue()?, a)
}

/// [`to_device`] queued on `stream` (Numba's `cuda.to_device(a, stream=s)`): the copy is
/// ordered with the stream's other work, so uploads on one stream overlap kernels on another.
///
/// ```
/// use ndarray::array;
/// if let Ok(stream) = ufunc_runtime::Stream::new() {
///     let d = ufunc_runtime::to_device_on(&stream, &array![[1.0f32], [2.0]]).unwrap();
///     stream.synchronize().unwrap();
///     assert_eq!(d.copy_to_host().unwrap(), array![[1.0f32], [2.0]]);
/// }
/// ```
pub fn to_device_on<T: Element, S: Data<Elem = T>, D: Dimension>(
    stream: &Stream,
    a: &ArrayBase<S, D>,
) -> Result<DeviceArray<T, D>> {
    upload_on(&stream.queue, a)
}

fn upload_on<T: Element, S: Data<Elem = T>, D: Dimension>(
    queue: &Queue,
    a: &ArrayBase<S, D>,
) -> Result<DeviceArray<T, D>> {
    let raw = Operand::<T>::raw(&a);
    Ok(DeviceArray {
        buf: DeviceBuffer(upload_host(queue, &raw, size_of::<T>())?),
        dim: a.raw_dim(),
        elem: PhantomData,
    })
}

/// A 2-d `f32` image in page-locked host memory: filled on the host, then uploaded on a stream
/// without waiting, so that one frame's upload overlaps another stream's kernels.
pub(crate) struct PinnedImage {
    host: HostBuffer,
    dim: Ix2,
}

impl PinnedImage {
    pub(crate) fn new(stream: &Stream, (ny, nx): (usize, usize)) -> Result<PinnedImage> {
        let bytes = byte_size(&[ny, nx], size_of::<f32>())?;
        Ok(PinnedImage {
            host: stream.queue.alloc_host(bytes)?,
            dim: Ix2(ny, nx),
        })
    }

    /// The image, once the upload queued from it on `stream` is done.
    pub(crate) fn view_mut(&mut self, stream: &Stream) -> Result<ArrayViewMut2<'_, f32>> {
        let n = self.dim.size();
        let bytes = stream.queue.host_bytes(&mut self.host)?;
        // SAFETY: every bit pattern is an `f32`; `align_to_mut` keeps the alignment.
        let (head, floats, _) = unsafe { bytes.align_to_mut::<f32>() };
        match floats.get_mut(..n) {
            Some(floats) if head.is_empty() => {
                ArrayViewMut2::from_shape(self.dim, floats).map_err(|e| Error::Cuda {
                    what: format!("viewing page-locked host memory: {e}"),
                })
            }
            _ => Err(Error::Cuda {
                what: "page-locked host memory is misaligned or short".into(),
            }),
        }
    }

    /// A copy on the device, queued on `stream` (the memory is not written again before the
    /// copy is done: `view_mut` waits for it).
    pub(crate) fn upload(&self, stream: &Stream) -> Result<DeviceArray<f32, Ix2>> {
        let buf = stream.queue.upload_pinned(&self.host)?;
        Ok(wrap(DeviceBuffer(buf), &self.dim))
    }
}

/// A device array of `shape`, zero-filled (so that every element is a valid `T`).
pub fn device_array<T: Element, Sh: IntoDimension>(shape: Sh) -> Result<DeviceArray<T, Sh::Dim>> {
    let dim = shape.into_dimension();
    let bytes = byte_size(dim.slice(), size_of::<T>())?;
    Ok(DeviceArray {
        buf: DeviceBuffer(Queue::default_queue()?.alloc_zeroed(bytes)?),
        dim,
        elem: PhantomData,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{s, Array2, ArrayView, NewAxis};

    /// The elements a geometry addresses in `a`'s memory, in C order.
    fn gather(a: &Array2<i32>, shape: &[usize], g: &Geometry) -> Vec<i32> {
        // SAFETY: the geometries checked here stay inside `a`.
        let first = unsafe { a.as_ptr().add(g.offset) } as *const u8;
        unsafe { c_order_bytes(first, shape, &g.strides, 4) }
            .chunks_exact(4)
            .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    fn whole(a: &Array2<i32>) -> Geometry {
        Geometry {
            offset: 0,
            strides: c_strides(a.shape()),
        }
    }

    fn check<D: Dimension>(a: &Array2<i32>, info: &[SliceInfoElem], want: ArrayView<'_, i32, D>) {
        let mut g = whole(a);
        let shape = g.slice(a.shape(), info).expect("fits");
        assert_eq!(shape, want.shape(), "{info:?}");
        assert_eq!(
            gather(a, &shape, &g),
            want.iter().copied().collect::<Vec<_>>(),
            "{info:?}"
        );
    }

    #[test]
    fn slices_address_what_ndarray_slices_address() {
        let a = Array2::from_shape_fn((6, 7), |(i, j)| (i * 10 + j) as i32);
        check(&a, s![.., ..].as_ref(), a.view());
        check(&a, s![1..4, 2..].as_ref(), a.slice(s![1..4, 2..]));
        check(&a, s![..;2, ..;-1].as_ref(), a.slice(s![..;2, ..;-1]));
        check(&a, s![-3.., 1..6;-2].as_ref(), a.slice(s![-3.., 1..6;-2]));
        check(&a, s![2, ..;3].as_ref(), a.slice(s![2, ..;3]));
        check(&a, s![.., -1].as_ref(), a.slice(s![.., -1]));
        check(
            &a,
            s![NewAxis, 1..2, ..].as_ref(),
            a.slice(s![NewAxis, 1..2, ..]),
        );
        let (from, to) = (4, 2);
        check(&a, s![from..to, ..].as_ref(), a.slice(s![from..to, ..]));
        let mut g = whole(&a);
        assert!(
            g.slice(a.shape(), s![6, ..].as_ref()).is_none(),
            "index out of bounds"
        );
        assert!(
            g.slice(a.shape(), s![..8, ..].as_ref()).is_none(),
            "end out of bounds"
        );
        assert!(
            g.slice(a.shape(), s![..].as_ref()).is_none(),
            "too few axes"
        );
    }

    #[test]
    fn broadcasting_repeats_with_zero_strides() {
        let a = Array2::from_shape_fn((1, 3), |(_, j)| j as i32);
        let mut g = whole(&a);
        g.broadcast(&[1, 3], &[2, 4, 3]).expect("fits");
        let want: ArrayView<'_, i32, IxDyn> = a.broadcast(IxDyn(&[2, 4, 3])).unwrap();
        assert_eq!(
            gather(&a, &[2, 4, 3], &g),
            want.iter().copied().collect::<Vec<_>>()
        );
        assert!(whole(&a).broadcast(&[1, 3], &[3, 2]).is_err());
    }
}
