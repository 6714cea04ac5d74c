//! Shapes and strides, shared by every path (CPU engine, gufunc runner, CUDA host path, device
//! views): NumPy co-broadcasting and the stride-0 views it implies (`broadcast`), C-order
//! strides, contiguity and checked sizes (`layout`), and the one n-d walk with the strided
//! copies built on it (`walk`), and NumPy's overlap rule between inputs and outputs
//! (`overlap`).

mod broadcast;
mod layout;
mod overlap;
mod walk;

pub(crate) use broadcast::{broadcast_shape, broadcast_strides_to, check_output_shapes};
pub use broadcast::{broadcast_shapes, broadcast_strides};
pub use layout::element_count;
#[allow(unused_imports)] // reductions (issue 12) are its first caller
pub(crate) use layout::select_axes;
pub(crate) use layout::{byte_size, c_strides, is_c_contiguous, Shape, Strides};
pub(crate) use overlap::InputCopies;
pub(crate) use walk::{
    byte_strides, c_order_bytes, copy_strided, scatter_c_order, walk_rows, RowPtrs,
};
