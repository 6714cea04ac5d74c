//! The SIMD lane code against the scalar function, on every instruction set this CPU has:
//! bit-identical for bodies without transcendental functions, within the stated ulp bound
//! (lane math <= 1-2 ulp from correctly rounded, the platform libm about as far) for each math
//! method; independent of an element's position (vector body or tail) and of the target.

mod common;
use common::ulps;
use ndarray::{Array1, ArrayView1};
use std::sync::Mutex;
use ufunc::prelude::*;
use ufunc::IsaLevel;

/// The instruction-set level is process-wide; tests that change it take this lock.
static ISA: Mutex<()> = Mutex::new(());

fn each_isa(mut f: impl FnMut(IsaLevel)) {
    let _guard = ISA.lock().unwrap_or_else(|e| e.into_inner());
    let before = ufunc::active_isa();
    for level in IsaLevel::supported() {
        assert!(ufunc::set_active_isa(level));
        f(level);
    }
    ufunc::set_active_isa(before);
}

macro_rules! unary_f32 {
    ($($name:ident => |$x:ident| $body:expr, $bound:expr;)*) => {
        $(
            #[vectorize(targets = ["cpu", "parallel"])]
            fn $name($x: f32) -> f32 {
                $body
            }
        )*
        fn unary_cases() -> Vec<(&'static str, fn(ArrayView1<f32>, Target) -> Array1<f32>, fn(f32) -> f32, u32)> {
            vec![$((
                stringify!($name),
                |a, t| $name::on(t, a, ).unwrap(),
                $name::scalar,
                $bound,
            )),*]
        }
    };
}

unary_f32! {
    v_exp => |x| x.exp(), 2;
    v_exp2 => |x| x.exp2(), 2;
    v_ln => |x| x.abs().ln(), 2;
    v_log2 => |x| x.abs().log2(), 2;
    v_log10 => |x| x.abs().log10(), 2;
    v_sin => |x| x.sin(), 2;
    v_cos => |x| x.cos(), 2;
    v_tan => |x| x.tan(), 3;
    v_tanh => |x| x.tanh(), 3;
    v_powf => |x| x.abs().powf(1.7), 2;
    v_powi => |x| x.powi(5), 0;
    v_sqrt => |x| x.sqrt(), 0;
    v_abs_min_max => |x| x.abs().min(3.0).max(-x), 0;
    v_mul_add => |x| x.mul_add(1.5, -0.25), 0;
    v_select => |x| if x > 0.5 { x * 3.0 } else if x < -0.5 { -x } else { x / 7.0 }, 0;
    v_floor_round => |x| x.floor() + x.ceil() * 0.5 + x.trunc() * 0.25, 0;
}

/// Inputs spread over several decades, with special values, huge values, and lengths that are
/// not a multiple of any vector width.
fn inputs() -> Array1<f32> {
    let mut v: Vec<f32> = (0..4001)
        .map(|i| {
            let t = i as f32 / 4000.0;
            let mag = 10f32.powf(t * 8.0 - 4.0);
            if i % 2 == 0 {
                mag
            } else {
                -mag * 0.37
            }
        })
        .collect();
    v.extend([
        0.0,
        -0.0,
        1.0,
        -1.0,
        88.0,
        -87.0,
        1e-40,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ]);
    // Every binade up to f32::MAX: trigonometric arguments far past any short reduction.
    v.extend((20..128).map(|e| {
        let x = 2f32.powi(e) * (1.0 + (e as f32 * 0.618).fract());
        if e % 2 == 0 {
            x
        } else {
            -x
        }
    }));
    Array1::from(v)
}

#[test]
fn every_math_method_is_within_its_bound_on_every_isa() {
    let x = inputs();
    each_isa(|level| {
        for (name, lane, scalar, bound) in unary_cases() {
            let got = lane(x.view(), Target::Cpu);
            for (i, (&g, &xi)) in got.iter().zip(&x).enumerate() {
                let want = scalar(xi);
                let d = ulps(g, want);
                assert!(
                    d <= bound,
                    "{name} at {level:?}: x[{i}] = {xi:e} gave {g:e}, scalar {want:e} ({d} ulp > {bound})"
                );
            }
        }
    });
}

#[test]
fn results_do_not_depend_on_position_target_or_length() {
    let x = inputs();
    each_isa(|level| {
        for (name, lane, _, _) in unary_cases() {
            let whole = lane(x.view(), Target::Cpu);
            let par = lane(x.view(), Target::Parallel);
            assert_eq!(
                whole.mapv(f32::to_bits),
                par.mapv(f32::to_bits),
                "{name} at {level:?}: cpu and parallel differ"
            );
            // Every length from 1 to 70 puts elements in vector bodies and scalar tails.
            for len in 1..=70 {
                let part = lane(x.slice(ndarray::s![3..3 + len]), Target::Cpu);
                for j in 0..len {
                    assert_eq!(
                        part[j].to_bits(),
                        whole[3 + j].to_bits(),
                        "{name} at {level:?}: element {j} of a length-{len} call differs"
                    );
                }
            }
        }
    });
}

#[vectorize(targets = ["cpu", "parallel"])]
fn gaussian(x: f32, mean: f32, sigma: f32) -> f32 {
    (-0.5 * ((x - mean) / sigma).powi(2)).exp() / (sigma * 2.506_628_3)
}

#[test]
fn large_parallel_calls_are_bit_identical_to_cpu() {
    let x = Array1::from_shape_fn(1_000_003, |i| (i as f32 * 1e-5) - 5.0);
    each_isa(|level| {
        let a = gaussian::on(Target::Cpu, &x, 0.5f32, 1.5f32).unwrap();
        let b = gaussian::on(Target::Parallel, &x, 0.5f32, 1.5f32).unwrap();
        assert!(
            a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
            "cpu and parallel differ at {level:?}"
        );
    });
}

#[test]
fn levels_agree_exactly_without_transcendentals() {
    let x = inputs();
    let mut first: Option<Array1<u32>> = None;
    each_isa(|_| {
        let r = v_select(&x).unwrap().mapv(f32::to_bits);
        match &first {
            None => first = Some(r),
            Some(f) => assert_eq!(f, &r),
        }
    });
}

#[vectorize(fastmath = true, targets = ["cpu", "parallel"])]
fn fused(a: f32, b: f32, c: f32) -> f32 {
    a * b + c
}

#[vectorize(targets = ["cpu", "parallel"])]
fn unfused(a: f32, b: f32, c: f32) -> f32 {
    a * b + c
}

#[test]
fn fastmath_contracts_only_where_asked_and_the_cpu_has_fma() {
    let a = Array1::from_shape_fn(1001, |i| 0.1f32 + i as f32 * 1e-3);
    let b = Array1::from_shape_fn(1001, |i| 10.0f32 - i as f32 * 1e-3);
    let c = -(&a * &b);
    each_isa(|level| {
        let f = fused(&a, &b, &c).unwrap();
        let u = unfused(&a, &b, &c).unwrap();
        let with_fma = !matches!(level, IsaLevel::Baseline);
        let mut differs = 0;
        for i in 0..a.len() {
            let (x, y, z) = (a[i], b[i], c[i]);
            assert_eq!(
                u[i].to_bits(),
                (x * y + z).to_bits(),
                "unfused at {level:?}"
            );
            let want = if with_fma { x.mul_add(y, z) } else { x * y + z };
            assert_eq!(f[i].to_bits(), want.to_bits(), "fused at {level:?}");
            differs += usize::from(f[i] != u[i]);
        }
        // The residual of a*b - a*b is exactly what a fused multiply-add exposes.
        assert_eq!(differs > 0, with_fma, "at {level:?}");
        let par = fused::on(Target::Parallel, &a, &b, &c).unwrap();
        assert_eq!(par.mapv(f32::to_bits), f.mapv(f32::to_bits));
    });
}
