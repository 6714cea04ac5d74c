//! Shapes: NumPy co-broadcasting and the stride-0 views it implies.

mod broadcast;

pub use broadcast::{broadcast_shapes, broadcast_strides, element_count};
