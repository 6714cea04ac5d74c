//! Every generated kernel compiled by a real NVRTC, and the translation checked on its text.

use super::kernels::*;
use super::required;
use ndarray::array;

#[test]
fn every_kernel_compiles_with_nvrtc() {
    if !ufunc::cuda::nvrtc_available() {
        assert!(
            !required("UFUNC_REQUIRE_NVRTC"),
            "NVRTC is required here but libnvrtc.so.13 cannot be loaded: run `bash scripts/test.sh`"
        );
        eprintln!("SKIPPED every_kernel_compiles_with_nvrtc: libnvrtc.so.13 not found (run `bash scripts/test.sh`, which installs it)");
        return;
    }
    for (name, src) in sources() {
        let ptx = ufunc::cuda::compile(
            &src,
            "compute_90",
            &["--fmad=false"],
            ufunc::cuda::NvrtcOutput::Ptx,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ptx = String::from_utf8(ptx.image).unwrap();
        assert!(
            ptx.contains(&format!(".entry {name}_")),
            "{name}: a kernel named after the function"
        );
        let cubin = ufunc::cuda::compile(
            &src,
            "sm_90",
            &["--fmad=false", "--ptxas-options=-v"],
            ufunc::cuda::NvrtcOutput::Cubin,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            cubin.image.starts_with(b"\x7fELF"),
            "{name}: a cubin is an ELF image"
        );
        for line in cubin
            .log
            .lines()
            .filter(|l| l.contains("registers") || l.contains("spill"))
        {
            eprintln!("{name}: {}", line.trim());
        }
        assert!(
            !cubin
                .log
                .lines()
                .any(|l| l.contains("bytes spill stores") && !l.contains(" 0 bytes spill stores")),
            "{name} spills registers:\n{}",
            cubin.log
        );
    }
}

#[test]
fn the_cpu_side_of_the_new_bodies_works() {
    // Bodies written for cuda are ordinary ufuncs on the CPU too.
    let x = array![0.3f32, -2.0, 5.5];
    let z = math_zoo(&x, 1.5f32).unwrap();
    for (i, &v) in x.iter().enumerate() {
        let want = math_zoo::scalar(v, 1.5);
        assert!(
            (z[i] - want).abs() <= 1e-5 * (1.0 + want.abs()),
            "{} vs {want}",
            z[i]
        );
    }
    assert_eq!(nested_helpers(&array![2.0f32]).unwrap()[0], 0.5 + 0.5 + 0.5);
    assert_eq!(
        bytes_and_bools(&array![200u8], 3u8, true).unwrap().0[0],
        200u8.wrapping_mul(3) ^ 0x5a
    );
    assert!((fused_poly(&array![0.5f64]).unwrap()[0] - fused_poly::scalar(0.5)).abs() < 1e-15);
}

#[test]
fn translation_keeps_single_precision_and_exact_constants() {
    let src = gaussian_pdf::cuda_source();
    assert!(
        src.contains(
            "__device__ inline f32 __ufunc_body_gaussian_pdf(f32 r_x, f32 r_mean, f32 r_sigma)"
        ),
        "{src}"
    );
    let body_start = src.find("__ufunc_body_gaussian_pdf(f32").unwrap();
    let body = &src[body_start..body_start + src[body_start..].find("}\n").unwrap()];
    assert!(body.contains("-0.5f * "), "{body}");
    assert!(!body.contains("double") && !body.contains("f64"), "{body}");
    // The constant is captured by value, bit for bit.
    assert!(
        src.contains(&format!(
            "__ufunc_const_SQRT_2PI = {};",
            ufunc::__private::CudaLiteral::cuda_literal(&SQRT_2PI)
        )),
        "{src}"
    );
    let src = series::cuda_source();
    assert!(
        src.contains("__ufunc_const_OFFSET = 0x1.999999999999ap-4;"),
        "{src}"
    );
    assert!(src.contains("f64 r_sum = 0.0;"), "{src}");
    let src = polar_distance::cuda_source();
    assert!(src.contains("__ufunc_helper_polar_to_cartesian"), "{src}");
    assert_eq!(
        src.matches("#define __UFUNC_HELPER_polar_to_cartesian")
            .count(),
        1
    );
    let src = nested_helpers::cuda_source();
    // A helper reached twice is included twice, behind an include guard (NVRTC compiles it once:
    // see every_kernel_compiles_with_nvrtc).
    assert!(src.contains("#ifndef __UFUNC_HELPER_scaled\n"), "{src}");
    assert!(src.contains("#ifndef __ufunc_const_SCALE_DEFINED"), "{src}");
    let src = int_ops::cuda_source();
    assert!(
        src.contains("__ufunc_div(r_a, r_b)") && src.contains("__ufunc_rem(r_a, r_b)"),
        "{src}"
    );
}
