//! Numba's own test kernels (`tests/numba_kernels/mod.rs`, issue 13) on `cuda`: the same
//! checks as `tests/numba_ports.rs` runs on the CPU targets, against Numba's expected values;
//! every kernel's source is compiled by NVRTC in `every_kernel_compiles_with_nvrtc`.

use super::numba_kernels as k;
use super::on_gpu;
use ufunc::prelude::*;

pub(crate) fn sources() -> Vec<(&'static str, String)> {
    vec![
        ("add_multiple_args", k::add_multiple_args::cuda_source()),
        ("scaled_sinc", k::scaled_sinc::cuda_source()),
        ("equals", k::equals::cuda_source()),
        ("mul", k::mul::cuda_source()),
        ("guadd_no_output", k::guadd_no_output::cuda_source()),
        ("guadd_scalar", k::guadd_scalar::cuda_source()),
        ("double_gu", k::double_gu::cuda_source()),
        ("axpy", k::axpy::cuda_source()),
        ("my_cumsum", k::my_cumsum::cuda_source()),
        ("copy_and_double", k::copy_and_double::cuda_source()),
        ("copy_and_multiply", k::copy_and_multiply::cuda_source()),
        ("output_scalar", k::output_scalar::cuda_source()),
        ("sum_and_shift", k::sum_and_shift::cuda_source()),
        (
            "scalar_input_core_type",
            k::scalar_input_core_type::cuda_source(),
        ),
        ("scalar_cast_foo", k::scalar_cast_foo::cuda_source()),
        ("py_update_3", k::py_update_3::cuda_source()),
        ("g", k::g::cuda_source()),
        ("g_scalar_return", k::g_scalar_return::cuda_source()),
        ("move_mean", k::move_mean::cuda_source()),
        ("cu_ufunc", k::cu_ufunc::cuda_source()),
        ("vcomp", k::vcomp::cuda_source()),
        ("fngpu", k::fngpu::cuda_source()),
        ("gu_reduce", k::gu_reduce::cuda_source()),
        ("copy2d", k::copy2d::cuda_source()),
        ("numba_dist_cuda", k::numba_dist_cuda::cuda_source()),
        ("saxpy", k::saxpy::cuda_source()),
        ("duadd", k::duadd::cuda_source()),
        ("dumul", k::dumul::cuda_source()),
        ("dumin", k::dumin::cuda_source()),
        ("dusub", k::dusub::cuda_source()),
        ("dudiv", k::dudiv::cuda_source()),
        ("np_minimum", k::np_minimum::cuda_source()),
        ("np_maximum", k::np_maximum::cuda_source()),
        ("np_divide", k::np_divide::cuda_source()),
        ("np_add", k::np_add::cuda_source()),
        ("vector_add_i32", k::__ufunc_vector_add_i32::cuda_source()),
        ("vector_add_u32", k::__ufunc_vector_add_u32::cuda_source()),
        ("vector_add_i64", k::__ufunc_vector_add_i64::cuda_source()),
        ("vector_add_f32", k::__ufunc_vector_add_f32::cuda_source()),
        ("vector_add_f64", k::__ufunc_vector_add_f64::cuda_source()),
        (
            "vector_add_complex_f32",
            k::__ufunc_vector_add_complex_f32::cuda_source(),
        ),
        ("sinc_f32", k::__ufunc_sinc_f32::cuda_source()),
        ("sinc_f64", k::__ufunc_sinc_f64::cuda_source()),
        ("guadd_i32", k::__ufunc_guadd_i32::cuda_source()),
        (
            "guadd_complex_f32",
            k::__ufunc_guadd_complex_f32::cuda_source(),
        ),
        ("new_ufunc_i64", k::__ufunc_new_ufunc_i64::cuda_source()),
        ("new_ufunc_f64", k::__ufunc_new_ufunc_f64::cuda_source()),
        ("matmulcore_f32", k::__ufunc_matmulcore_f32::cuda_source()),
        ("matmulcore_f64", k::__ufunc_matmulcore_f64::cuda_source()),
        ("matmulcore_i64", k::__ufunc_matmulcore_i64::cuda_source()),
        (
            "py_replace_2nd_f32",
            k::__ufunc_py_replace_2nd_f32::cuda_source(),
        ),
        (
            "py_replace_2nd_f64",
            k::__ufunc_py_replace_2nd_f64::cuda_source(),
        ),
        (
            "cu_discriminant_f32",
            k::__ufunc_cu_discriminant_f32::cuda_source(),
        ),
        (
            "cu_discriminant_f64",
            k::__ufunc_cu_discriminant_f64::cuda_source(),
        ),
    ]
}

/// A `#[test]` per check of `numba_kernels`, run on `cuda` (the simulator without a GPU).
macro_rules! on_cuda {
    ($($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            on_gpu(stringify!($check), || k::$check(Target::Cuda));
        }
    )*};
}

numba_checks!(on_cuda);
