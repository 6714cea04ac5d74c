//! Inside-polygon mask with `#[guvectorize("(),(),(n,2)->()")]`: for each pixel of a
//! 1024x1024 grid, a ray-crossing test against a 24-vertex polygon. The pixel coordinates are a
//! (1,1024) row and a (1024,1) column; the loop dimensions broadcast them, and the polygon, to
//! the whole grid without building coordinate arrays.
//!
//! Run with `cargo run --release --example polygon_mask`.

use ndarray::{Array1, Array2, Axis};
use std::time::Instant;
use ufunc::prelude::*;

/// Even-odd rule: a horizontal ray from (x, y) crosses the polygon's edges an odd number of
/// times exactly when the point is inside.
#[guvectorize("(),(),(n,2)->()", targets = ["parallel", "cpu"])]
pub fn inside(x: f32, y: f32, poly: ArrayView2<f32>) -> bool {
    let Some(points) = poly.as_slice() else {
        // A non-contiguous polygon: the same test through indexing.
        let n = poly.nrows();
        let mut inside = false;
        let mut j = n.wrapping_sub(1);
        for i in 0..n {
            let (xi, yi, xj, yj) = (poly[[i, 0]], poly[[i, 1]], poly[[j, 0]], poly[[j, 1]]);
            if (yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi {
                inside = !inside;
            }
            j = i;
        }
        return inside;
    };
    let mut inside = false;
    let (mut xj, mut yj) = match points {
        [.., xl, yl] => (*xl, *yl),
        _ => return false,
    };
    for p in points.chunks_exact(2) {
        let (xi, yi) = (p[0], p[1]);
        if (yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi {
            inside = !inside;
        }
        (xj, yj) = (xi, yi);
    }
    inside
}

/// A 24-vertex star centred in the grid.
fn star(size: f32) -> Array2<f32> {
    Array2::from_shape_fn((24, 2), |(k, c)| {
        let angle = k as f32 * std::f32::consts::TAU / 24.0;
        let radius = if k % 2 == 0 { 0.45 } else { 0.2 } * size;
        let centre = size / 2.0;
        if c == 0 {
            centre + radius * angle.cos()
        } else {
            centre + radius * angle.sin()
        }
    })
}

fn main() -> Result<(), ufunc::Error> {
    let n = 1024;
    let poly = star(n as f32);
    let xs = Array1::from_shape_fn(n, |i| i as f32 + 0.5).insert_axis(Axis(0)); // (1, n)
    let ys = Array1::from_shape_fn(n, |i| i as f32 + 0.5).insert_axis(Axis(1)); // (n, 1)
    let mask = inside(&xs, &ys, &poly)?;
    assert_eq!(mask.shape(), &[n, n]);
    // Check against the scalar core on a sample of pixels.
    for (r, c) in [
        (512, 512),
        (0, 0),
        (512, 100),
        (300, 700),
        (1023, 1023),
        (512, 970),
    ] {
        let want = inside::core(xs[[0, c]], ys[[r, 0]], poly.view());
        assert_eq!(mask[[r, c]], want, "pixel ({r}, {c})");
    }
    assert!(mask[[512, 512]] && !mask[[0, 0]]);
    let area = mask.iter().filter(|&&b| b).count();
    println!("{n}x{n} mask, 24-vertex star: {area} pixels inside");
    for target in [Target::Cpu, Target::Parallel] {
        let best = (0..5)
            .map(|_| {
                let t = Instant::now();
                drop(inside::on(target, &xs, &ys, &poly).unwrap());
                t.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::INFINITY, f64::min);
        println!("  {target:>8}: {best:7.2} ms");
    }
    Ok(())
}
