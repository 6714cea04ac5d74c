//! Shapes: NumPy co-broadcasting and the stride-0 views it implies.

mod broadcast;

pub(crate) use broadcast::{broadcast_shape, c_strides, check_output_shapes, Shape};
pub use broadcast::{broadcast_shapes, broadcast_strides, element_count};
