//! The CUDA target: the body of a `#[vectorize]` function, the core of a `#[guvectorize]`
//! function and the `#[kernel_fn]` helpers they call, translated to CUDA C++ device functions.
//! The runtime adds the prelude and the `__global__` kernel skeletons
//! (`ufunc-runtime/src/cuda/skeleton/`).
//!
//! The translation (`translate`) is a pass of the front end, run beside the checks: every node
//! it cannot translate is recorded at its span in the invocation's error context, so one compile
//! reports them all, and code generation only reads its result.

mod emit;
mod mapping;
mod translate;
mod types;

pub(crate) use emit::helper_site_offset;
pub(crate) use translate::{elementwise, gufunc, helper, ElementwiseKernel, GufuncKernel};
pub(crate) use types::Ty;

use crate::errors::Errors;
use emit::{ty_of, Emitter};
use syn::{Block, Ident, ReturnType, Type};

pub(crate) use emit::Captures;

/// A device function and what it captures from the Rust side.
#[derive(Default)]
pub(crate) struct DeviceFn {
    pub code: String,
    pub captures: Captures,
}

/// `__device__ inline R name(params) { body }` for a function over elements. Parameter and
/// result types that are not element types are the checks' to report: here they are
/// `Ty::Unsupported`, so that their uses report nothing more. `site_base`: see
/// `Emitter::site_base`.
fn emit_device_fn(
    cpp_name: &str,
    params: &[(&Ident, &Type)],
    output: &ReturnType,
    block: &Block,
    site_base: &str,
    errors: &Errors,
) -> DeviceFn {
    let ret_ty = match output {
        ReturnType::Default => Ty::Unit,
        ReturnType::Type(_, ret) => ty_of(ret).unwrap_or(Ty::Unsupported),
    };
    let typed: Vec<(&Ident, Ty)> = params
        .iter()
        .map(|(ident, t)| (*ident, ty_of(t).unwrap_or(Ty::Unsupported)))
        .collect();
    emit_function(cpp_name, &typed, ret_ty, block, &[], site_base, errors)
}

/// A device function from typed parameters (views and `&mut` outputs included) and a return
/// type (`Ty::Unit` for `void`). `mapped` loops of `block` take their index from the extra
/// parameters `__ufunc_mapped` and `__ufunc_mapped_len` (one thread per index). What cannot be
/// translated is recorded in `errors`.
fn emit_function(
    cpp_name: &str,
    params: &[(&Ident, Ty)],
    ret_ty: Ty,
    block: &Block,
    mapped: &[&syn::ExprForLoop],
    site_base: &str,
    errors: &Errors,
) -> DeviceFn {
    let declare = |e: &mut Emitter| {
        e.site_base = site_base.to_string();
        e.mapped = mapped
            .iter()
            .map(|&f| f as *const syn::ExprForLoop)
            .collect();
        e.env.push();
        for (ident, ty) in params {
            e.env.declare(&ident.to_string(), ty.clone(), None);
        }
    };
    // Pass 1 learns the types of literal-initialised bindings; pass 2 writes the code.
    let mut learn = Emitter::new(ret_ty.clone(), errors, false);
    declare(&mut learn);
    learn.emit_fn_body(block);
    let mut emitter = Emitter::new(ret_ty.clone(), errors, true);
    emitter.env.learned = std::mem::take(&mut learn.env.learned);
    declare(&mut emitter);
    let body = emitter.emit_fn_body(block);
    let mut params_cpp: Vec<String> = params
        .iter()
        .map(|(ident, ty)| format!("{} r_{ident}", ty.cpp()))
        .collect();
    if !mapped.is_empty() {
        params_cpp.push("const long long* __ufunc_mapped".into());
        params_cpp.push("const long long* __ufunc_mapped_len".into());
    }
    let ret = if ret_ty == Ty::Unit {
        "void".to_string()
    } else {
        ret_ty.cpp()
    };
    let code = format!(
        "__device__ inline {ret} {cpp_name}({}) {{\n{body}}}\n",
        params_cpp.join(", ")
    );
    DeviceFn {
        code,
        captures: emitter.captures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(src: &str) -> syn::Result<String> {
        let f: syn::ItemFn = syn::parse_str(src).unwrap();
        let params: Vec<(&Ident, &Type)> = f
            .sig
            .inputs
            .iter()
            .map(|a| match a {
                syn::FnArg::Typed(pt) => match &*pt.pat {
                    syn::Pat::Ident(pi) => (&pi.ident, &*pt.ty),
                    _ => unreachable!(),
                },
                _ => unreachable!(),
            })
            .collect();
        let errors = Errors::new();
        let code = emit_device_fn(
            "body",
            &params,
            &f.sig.output,
            &f.block,
            emit::BODY_SITE_BASE,
            &errors,
        )
        .code;
        errors.check().map(|()| code)
    }

    fn messages(src: &str) -> Vec<String> {
        device(src)
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .map(|m| {
                m.split(" is not supported")
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn f32_literals_stay_single_precision() {
        let code = device("fn f(a: f32, b: f32) -> f32 { (a + b) * (a + b) * 0.5 }").unwrap();
        assert_eq!(
            code,
            "__device__ inline f32 body(f32 r_a, f32 r_b) {\nreturn (r_a + r_b) * (r_a + r_b) * 0.5f;\n}\n"
        );
        let code =
            device("fn f(x: f32) -> f32 { let mut acc = 0.0; acc += x; acc * 2.0 }").unwrap();
        assert!(code.contains("f32 r_acc = 0.0f;"), "{code}");
        assert!(code.contains("r_acc * 2.0f"), "{code}");
    }

    #[test]
    fn integers_wrap_and_division_panics() {
        let code = device("fn f(a: i32, b: i32) -> i32 { a * 3 + a / b }").unwrap();
        assert!(
            code.contains("__ufunc_add(__ufunc_mul(r_a, ((i32)3)), __ufunc_div(r_a, r_b))"),
            "{code}"
        );
    }

    #[test]
    fn control_flow_and_math() {
        let code = device(
            "fn f(x: f64, n: u32) -> f64 {
                let mut s = 0.0;
                for k in 0..n { if k % 2 == 0 { s += x.sin(); } else { s -= 1.0; } }
                let r = if s > 0.0 { s.sqrt() } else { -s };
                match n { 0 => r, 1 | 2 => r * 2.0, _ => r.powi(2) }
            }",
        )
        .unwrap();
        assert!(
            code.contains("for (u32 r_k = ((u32)0), __end_r_k = r_n;"),
            "{code}"
        );
        assert!(code.contains("__ufunc_sin(r_x)"), "{code}");
        assert!(
            code.contains("f64 r_r = (r_s > 0.0 ? (__ufunc_sqrt(r_s)) : (-r_s));"),
            "{code}"
        );
        assert!(code.contains("__ufunc_powi(r_r, ((i32)2))"), "{code}");
    }

    #[test]
    fn unsupported_constructs_point_at_their_span() {
        let err = device("fn f(x: f32) -> f32 { let v = vec![x]; v[0] }").unwrap_err();
        assert!(
            err.to_string()
                .contains("the macro `vec!` is not supported in a cuda kernel"),
            "{err}"
        );
        let err = device("fn f(x: f32) -> f32 { let c = |y: f32| y; c(x) }").unwrap_err();
        assert!(
            err.to_string().starts_with("a closure is not supported"),
            "{err}"
        );
    }

    #[test]
    fn every_unsupported_node_is_reported_once() {
        assert_eq!(
            messages(
                "fn f(x: f32) -> f32 {
                    let v = vec![x];
                    let c = |y: f32| y;
                    let r = &x;
                    'outer: loop { break 'outer; }
                    for i in v.iter() { let s = String::new(); }
                    x.frobnicate() + 1.0
                }"
            ),
            [
                "the macro `vec!`",
                "a closure",
                "a reference",
                "a labelled loop",
                "`break` with a label or value",
                // `v` is reported already; its loop's body is still searched.
                "calling a function that is not a #[kernel_fn] helper",
                "the method `frobnicate`",
            ]
        );
        let err =
            device("fn f(x: f32) -> f32 { self::plain(x) + i64::abs(-2) as f32 }").unwrap_err();
        let all: Vec<String> = err.into_iter().map(|e| e.to_string()).collect();
        assert!(
            all[0].starts_with(
                "calling `self::plain` is not supported in a cuda kernel: only the \
                 body of a #[kernel_fn] helper called by its plain name can be translated to CUDA; \
                 mark `plain` #[kernel_fn]"
            ),
            "{all:?}"
        );
        assert!(
            all[1].starts_with("calling a function that is not"),
            "{all:?}"
        );
        // Operands emitted again to retype a literal report once.
        assert_eq!(
            messages("fn f(x: f32) -> f32 { if x > 0.0 { 1.0 + vec![1.0][0] } else { x } }"),
            ["the macro `vec!`"]
        );
        assert_eq!(
            messages("fn f(x: f32) -> f32 { 2.0 * [x][0] }"),
            ["an array"]
        );
        assert_eq!(
            messages("fn f(x: f32) -> f32 { for y in x.iter() {} x }"),
            ["`for` over the iterator of anything but a view"]
        );
        // Nothing that uses an untranslatable value reports again.
        assert_eq!(
            messages("fn f(x: f32) -> f32 { vec![x].iter().sum::<f32>() + *&x }"),
            ["the macro `vec!`", "a reference"]
        );
    }
}
