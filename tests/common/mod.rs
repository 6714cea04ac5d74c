//! What the integration tests share.

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
