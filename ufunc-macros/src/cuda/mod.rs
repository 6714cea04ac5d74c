//! The CUDA target: the body of a `#[vectorize]` function (and of the `#[kernel_fn]` helpers it
//! calls) translated to self-contained CUDA C++, plus the kernels that apply it element-wise.
//! What cannot be translated is a compile error at its span.

mod emit;
mod types;

pub(crate) use emit::Captures;
use emit::{ty_of, Emitter};
use syn::{Block, Ident, ReturnType, Type};
use types::Ty;

/// A device function and what it captures from the Rust side.
pub(crate) struct DeviceFn {
    pub code: String,
    pub captures: Captures,
}

/// `__device__ inline R name(params) { body }` for a Rust function body.
pub(crate) fn emit_device_fn(
    cpp_name: &str,
    params: &[(&Ident, &Type)],
    output: &ReturnType,
    block: &Block,
) -> syn::Result<DeviceFn> {
    let ReturnType::Type(_, ret) = output else {
        return Err(syn::Error::new_spanned(
            output,
            "a cuda function returns a value",
        ));
    };
    let ret_ty = ty_of(ret).ok_or_else(|| {
        syn::Error::new_spanned(
            ret,
            "a cuda function returns element types or tuples of them",
        )
    })?;
    let param_tys: Vec<Ty> = params
        .iter()
        .map(|(_, t)| {
            ty_of(t)
                .ok_or_else(|| syn::Error::new_spanned(t, "a cuda parameter is an element type"))
        })
        .collect::<syn::Result<_>>()?;
    // Pass 1 learns the types of literal-initialised bindings; pass 2 writes the code.
    let mut learn = Emitter::new(ret_ty.clone());
    learn.env.push();
    for ((ident, _), ty) in params.iter().zip(&param_tys) {
        learn.env.declare(&ident.to_string(), ty.clone(), None);
    }
    learn.emit_fn_body(block)?;
    let mut emitter = Emitter::new(ret_ty.clone());
    emitter.env.learned = std::mem::take(&mut learn.env.learned);
    emitter.env.push();
    for ((ident, _), ty) in params.iter().zip(&param_tys) {
        emitter.env.declare(&ident.to_string(), ty.clone(), None);
    }
    let body = emitter.emit_fn_body(block)?;
    let params_cpp: Vec<String> = params
        .iter()
        .zip(&param_tys)
        .map(|((ident, _), ty)| format!("{} r_{ident}", ty.cpp()))
        .collect();
    let code = format!(
        "__device__ inline {} {cpp_name}({}) {{\n{body}}}\n",
        ret_ty.cpp(),
        params_cpp.join(", ")
    );
    Ok(DeviceFn {
        code,
        captures: emitter.captures,
    })
}

/// The element-wise kernels of a ufunc whose scalar device function is `body_fn`: `<name>_contig`
/// over contiguous operands and `<name>_strided` over any shape and strides (64-bit indexing).
pub(crate) fn emit_kernels(
    name: &str,
    body_fn: &str,
    inputs: &[&Type],
    outputs: &[&Type],
) -> String {
    let cpp = |t: &Type| ty_of(t).map(|t| t.cpp()).unwrap_or_default();
    let in_params: Vec<String> = inputs
        .iter()
        .enumerate()
        .map(|(k, t)| format!("const {}* __restrict__ in{k}", cpp(t)))
        .collect();
    let out_params: Vec<String> = outputs
        .iter()
        .enumerate()
        .map(|(k, t)| format!("{}* __restrict__ out{k}", cpp(t)))
        .collect();
    let params = in_params
        .iter()
        .chain(&out_params)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let nops = inputs.len() + outputs.len();
    let args = |index: &dyn Fn(usize) -> String| -> String {
        (0..inputs.len())
            .map(|k| format!("in{k}[{}]", index(k)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let stores = |index: &dyn Fn(usize) -> String| -> String {
        if outputs.len() == 1 {
            format!("out0[{}] = r;", index(inputs.len()))
        } else {
            (0..outputs.len())
                .map(|k| format!("out{k}[{}] = r.f{k};", index(inputs.len() + k)))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    let contig_args = args(&|_| "i".into());
    let contig_stores = stores(&|_| "i".into());
    let strided_args = args(&|k| format!("off[{k}]"));
    let strided_stores = stores(&|k| format!("off[{k}]"));
    format!(
        r#"extern "C" __global__ void {name}_contig(long long n, {params}) {{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {{
        auto r = {body_fn}({contig_args});
        {contig_stores}
    }}
}}
extern "C" __global__ void {name}_strided(long long n, int ndim, const long long* __restrict__ shape,
                                          const long long* __restrict__ strides, {params}) {{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {{
        long long off[{nops}] = {{0}};
        long long rest = i;
        for (int d = ndim - 1; d >= 0; --d) {{
            long long idx = rest % shape[d];
            rest /= shape[d];
            for (int k = 0; k < {nops}; ++k) off[k] += idx * strides[k * ndim + d];
        }}
        auto r = {body_fn}({strided_args});
        {strided_stores}
    }}
}}
"#
    )
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
        emit_device_fn("body", &params, &f.sig.output, &f.block).map(|d| d.code)
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
}
