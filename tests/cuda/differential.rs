//! What the generated differential tests (`generated.rs`, written by `scripts/kernelgen.py`)
//! share: deterministic inputs for every element type, and the comparison of a cpu result with
//! a cuda one (exact for integers and booleans; floats within a tolerance, NaN equal to NaN).

use ndarray::{Array, Array1, Array2, Dimension};
use ufunc::prelude::*;

/// Element types with a fixed pool of test values, edge cases included.
pub(crate) trait Sample: Copy + std::fmt::Debug {
    fn pool() -> Vec<Self>;
    /// Whether two results agree.
    fn agrees(a: Self, b: Self) -> bool;
}

macro_rules! int_sample {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            fn pool() -> Vec<Self> {
                let mut v: Vec<$t> = [0i64, 1, -1, 3, -7, 42, -100, 5, -2, 17, 99, -55, 2]
                    .iter()
                    .map(|&x| x as $t)
                    .collect();
                v.extend([<$t>::MIN, <$t>::MAX]);
                v
            }
            fn agrees(a: Self, b: Self) -> bool {
                a == b
            }
        }
    )*};
}
int_sample!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_sample {
    ($($t:ty: $tol:expr),*) => {$(
        impl Sample for $t {
            fn pool() -> Vec<Self> {
                vec![0.0, -0.0, 1.0, -1.5, 2.25, 0.1, -3.7, 10.0, 1e-3, 123.456, <$t>::NAN,
                     <$t>::INFINITY, <$t>::NEG_INFINITY, 0.5, -8.0, 1e6, 0.75]
            }
            fn agrees(a: Self, b: Self) -> bool {
                a == b
                    || (a.is_nan() && b.is_nan())
                    || (a - b).abs() <= $tol * a.abs().max(b.abs()).max(1.0)
            }
        }
    )*};
}
float_sample!(f32: 1e-4, f64: 1e-10);

impl Sample for bool {
    fn pool() -> Vec<Self> {
        vec![true, false, false, true, true, false, true]
    }
    fn agrees(a: Self, b: Self) -> bool {
        a == b
    }
}

macro_rules! complex_sample {
    ($($t:ty),*) => {$(
        impl Sample for Complex<$t> {
            fn pool() -> Vec<Self> {
                let re = <$t>::pool();
                let n = re.len();
                (0..n).map(|k| Complex::new(re[k], re[(k * 5 + 3) % n])).collect()
            }
            fn agrees(a: Self, b: Self) -> bool {
                <$t>::agrees(a.re, b.re) && <$t>::agrees(a.im, b.im)
            }
        }
    )*};
}
complex_sample!(f32, f64);

/// `len` values of `T`, starting at an offset that differs per operand.
pub(crate) fn sample<T: Sample>(operand: usize, len: usize) -> Array1<T> {
    let pool = T::pool();
    Array1::from_shape_fn(len, |i| {
        pool[(i * (operand + 1) + operand * 3) % pool.len()]
    })
}

/// A (4, 6) batch of gufunc core rows.
pub(crate) fn sample2<T: Sample>(operand: usize) -> Array2<T> {
    let flat = sample::<T>(operand, 24);
    flat.into_shape_with_order((4, 6)).expect("24 elements")
}

/// Compares a cpu result with a cuda one (an error on cpu must be an error on cuda too).
pub(crate) fn agree<T: Sample, D: Dimension>(
    name: &str,
    cpu: ufunc::Result<Array<T, D>>,
    cuda: ufunc::Result<Array<T, D>>,
) {
    match (cpu, cuda) {
        (Ok(c), Ok(g)) => {
            assert_eq!(c.shape(), g.shape(), "{name}: shapes");
            for (k, (a, b)) in c.iter().zip(g.iter()).enumerate() {
                assert!(
                    T::agrees(*a, *b),
                    "{name}: element {k}: cpu {a:?}, cuda {b:?}"
                );
            }
        }
        (Err(_), Err(_)) => {}
        (c, g) => panic!("{name}: cpu {}, cuda {}", outcome(c), outcome(g)),
    }
}

/// `agree` for kernels with two outputs.
pub(crate) fn agree2<T: Sample, U: Sample, D: Dimension>(
    name: &str,
    cpu: ufunc::Result<(Array<T, D>, Array<U, D>)>,
    cuda: ufunc::Result<(Array<T, D>, Array<U, D>)>,
) {
    match (cpu, cuda) {
        (Ok((c0, c1)), Ok((g0, g1))) => {
            agree(&format!("{name}.0"), Ok(c0), Ok(g0));
            agree(&format!("{name}.1"), Ok(c1), Ok(g1));
        }
        (Err(_), Err(_)) => {}
        (c, g) => panic!("{name}: cpu {}, cuda {}", outcome(c), outcome(g)),
    }
}

/// `ok`, or the error's first lines (a compile error carries the whole source).
fn outcome<T>(r: ufunc::Result<T>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => format!("{e:?}").chars().take(1500).collect(),
    }
}

/// Runs every check, then fails naming each one that failed (each also prints its panic).
pub(crate) fn run_all(checks: &[(&str, fn())]) {
    let failed: Vec<&str> = checks
        .iter()
        .filter(|(_, check)| std::panic::catch_unwind(check).is_err())
        .map(|(name, _)| *name)
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} failed: {failed:?}",
        failed.len(),
        checks.len()
    );
}
