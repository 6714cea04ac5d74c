//! What the integration tests share (each test crate uses part of it).
#![allow(dead_code)]

/// Distance between two f32 in representable values (0 for equal values or two NaNs).
pub fn ulps(a: f32, b: f32) -> u32 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    let key = |x: f32| {
        let i = x.to_bits() as i32;
        (if i < 0 { i32::MIN - i } else { i }) as i64
    };
    (key(a) - key(b)).unsigned_abs().min(u32::MAX as u64) as u32
}

/// A deterministic pseudo-random stream (a 64-bit LCG), for test data.
pub struct Lcg(pub u64);

impl Lcg {
    /// The next value, uniform in [0, 1).
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A Poisson sample of `mean` (Knuth's method: fine for the small means of low-dose data).
    pub fn poisson(&mut self, mean: f64) -> f64 {
        let limit = (-mean).exp();
        let (mut k, mut p) = (0.0, 1.0);
        loop {
            p *= self.next();
            if p <= limit {
                return k;
            }
            k += 1.0;
        }
    }
}

/// A fixture array (`{"shape": [...], "values": [...]}`, complex values as `[re, im]` pairs)
/// as its shape and complex f64 values.
pub fn fixture_values(v: &serde_json::Value) -> (Vec<usize>, Vec<num_complex::Complex<f64>>) {
    let shape = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap() as usize)
        .collect();
    let vals = v["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| match x.as_array() {
            Some(p) => num_complex::Complex::new(p[0].as_f64().unwrap(), p[1].as_f64().unwrap()),
            None => num_complex::Complex::new(x.as_f64().unwrap(), 0.0),
        })
        .collect();
    (shape, vals)
}
