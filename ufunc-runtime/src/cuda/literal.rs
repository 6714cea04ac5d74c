//! Captured constants as exact CUDA C++ literals: hexadecimal floats, typed integers, complex
//! values, and the guarded declaration a translated body includes.

/// A value written as an exact CUDA C++ expression of its type.
pub trait CudaLiteral {
    /// The C++ type name (as the prelude spells it).
    const CUDA_TYPE: &'static str;
    /// An expression of exactly this value.
    fn cuda_literal(&self) -> String;
}

macro_rules! int_literals {
    ($suffix:literal: $($t:ident),*) => {$(
        impl CudaLiteral for $t {
            const CUDA_TYPE: &'static str = stringify!($t);
            fn cuda_literal(&self) -> String {
                if *self as i128 == i64::MIN as i128 {
                    // -9223372036854775808LL does not parse: the literal overflows before `-`.
                    return "((i64)(-9223372036854775807LL - 1))".into();
                }
                format!("(({})({}{}))", stringify!($t), self, $suffix)
            }
        }
    )*};
}

int_literals!("LL": i8, i16, i32, i64, isize);
int_literals!("ULL": u8, u16, u32, u64, usize);

/// A hexadecimal float literal (exact, and a constant expression, unlike bit casts):
/// `frac_hex_digits` digits of fraction, `bias` and `min_exp` of the format.
fn hex_float(
    negative: bool,
    exp_bits: i64,
    frac: u64,
    frac_digits: usize,
    bias: i64,
    suffix: &str,
) -> String {
    let sign = if negative { "-" } else { "" };
    let (lead, exp) = if exp_bits == 0 {
        (0, 1 - bias)
    } else {
        (1, exp_bits - bias)
    };
    if exp_bits == 0 && frac == 0 {
        return format!("{sign}0x0p+0{suffix}");
    }
    format!("{sign}0x{lead}.{frac:0frac_digits$x}p{exp:+}{suffix}")
}

impl CudaLiteral for f32 {
    const CUDA_TYPE: &'static str = "f32";
    fn cuda_literal(&self) -> String {
        if self.is_nan() {
            return "__builtin_nanf(\"\")".into();
        }
        if self.is_infinite() {
            let sign = if *self < 0.0 { "-" } else { "" };
            return format!("{sign}__builtin_huge_valf()");
        }
        let b = self.to_bits();
        // 23 fraction bits, shifted to 24 to fill 6 hex digits.
        hex_float(
            b >> 31 == 1,
            ((b >> 23) & 0xff) as i64,
            ((b & 0x7f_ffff) << 1) as u64,
            6,
            127,
            "f",
        )
    }
}

impl CudaLiteral for f64 {
    const CUDA_TYPE: &'static str = "f64";
    fn cuda_literal(&self) -> String {
        if self.is_nan() {
            return "__builtin_nan(\"\")".into();
        }
        if self.is_infinite() {
            let sign = if *self < 0.0 { "-" } else { "" };
            return format!("{sign}__builtin_huge_val()");
        }
        let b = self.to_bits();
        hex_float(
            b >> 63 == 1,
            ((b >> 52) & 0x7ff) as i64,
            b & 0xf_ffff_ffff_ffff,
            13,
            1023,
            "",
        )
    }
}

impl CudaLiteral for bool {
    const CUDA_TYPE: &'static str = "bool";
    fn cuda_literal(&self) -> String {
        self.to_string()
    }
}

impl CudaLiteral for num_complex::Complex<f32> {
    const CUDA_TYPE: &'static str = "c32";
    fn cuda_literal(&self) -> String {
        format!(
            "c32{{{}, {}}}",
            self.re.cuda_literal(),
            self.im.cuda_literal()
        )
    }
}

impl CudaLiteral for num_complex::Complex<f64> {
    const CUDA_TYPE: &'static str = "c64";
    fn cuda_literal(&self) -> String {
        format!(
            "c64{{{}, {}}}",
            self.re.cuda_literal(),
            self.im.cuda_literal()
        )
    }
}

/// The C++ declaration of a captured constant, guarded so that a helper and a body that both
/// use it declare it once.
///
/// ```
/// let decl = ufunc_runtime::cuda_const("__ufunc_const_HALF", &0.5f32);
/// assert!(decl.contains("static __device__ const f32 __ufunc_const_HALF = 0x1.000000p-1f;"));
/// ```
pub fn cuda_const<T: CudaLiteral>(cpp_name: &str, value: &T) -> String {
    format!(
        "#ifndef {cpp_name}_DEFINED\n#define {cpp_name}_DEFINED\nstatic __device__ const {} {cpp_name} = {};\n#endif\n",
        T::CUDA_TYPE,
        value.cuda_literal()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses what `hex_float` writes, to check that it is exact.
    fn parse_hex(s: &str) -> f64 {
        let s = s.trim_end_matches('f');
        let (neg, s) = s.strip_prefix('-').map_or((false, s), |r| (true, r));
        let s = s.strip_prefix("0x").unwrap();
        let (mant, exp) = s.split_once('p').unwrap();
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        let mut v = u64::from_str_radix(int, 16).unwrap() as f64;
        for (k, c) in frac.chars().enumerate() {
            v += c.to_digit(16).unwrap() as f64 * 16f64.powi(-(k as i32 + 1));
        }
        let v = v * 2f64.powi(exp.parse::<i32>().unwrap());
        if neg {
            -v
        } else {
            v
        }
    }

    #[test]
    fn literals_are_exact() {
        assert_eq!(1.0f32.cuda_literal(), "0x1.000000p+0f");
        assert_eq!((-2.5f64).cuda_literal(), "-0x1.4000000000000p+1");
        for x in [
            2.506_628_3f32,
            f32::MIN_POSITIVE,
            1e-45,
            f32::MAX,
            -0.1,
            0.0,
        ] {
            assert_eq!(parse_hex(&x.cuda_literal()) as f32, x, "{x}");
        }
        for x in [0.1f64, f64::MIN_POSITIVE, 5e-324, f64::MAX, -1e300] {
            assert_eq!(parse_hex(&x.cuda_literal()), x, "{x}");
        }
        assert_eq!(f32::INFINITY.cuda_literal(), "__builtin_huge_valf()");
        assert_eq!((-1i8).cuda_literal(), "((i8)(-1LL))");
        assert_eq!(7u32.cuda_literal(), "((u32)(7ULL))");
        assert_eq!(
            i64::MIN.cuda_literal(),
            "((i64)(-9223372036854775807LL - 1))"
        );
    }
}
