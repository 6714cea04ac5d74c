//! The CUDA target: the body of a `#[vectorize]` function (and of the `#[kernel_fn]` helpers it
//! calls) translated to self-contained CUDA C++, plus the kernels that apply it element-wise.
//! What cannot be translated is a compile error at its span.

mod emit;
mod mapping;
mod types;

pub(crate) use mapping::mapped_loops;

pub(crate) use emit::ty_of;
pub(crate) use emit::Captures;
use emit::Emitter;
use syn::{Block, Ident, ReturnType, Type};
pub(crate) use types::Ty;

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
    let typed: Vec<(&Ident, Ty)> = params
        .iter()
        .map(|(ident, t)| {
            ty_of(t)
                .map(|ty| (*ident, ty))
                .ok_or_else(|| syn::Error::new_spanned(t, "a cuda parameter is an element type"))
        })
        .collect::<syn::Result<_>>()?;
    emit_function(cpp_name, &typed, ret_ty, block, &[])
}

/// A device function from typed parameters (views and `&mut` outputs included) and a return
/// type (`Ty::Unit` for `void`). `mapped` loops of `block` take their index from the extra
/// parameters `__ufunc_mapped` and `__ufunc_mapped_len` (one thread per index).
pub(crate) fn emit_function(
    cpp_name: &str,
    params: &[(&Ident, Ty)],
    ret_ty: Ty,
    block: &Block,
    mapped: &[&syn::ExprForLoop],
) -> syn::Result<DeviceFn> {
    let declare = |e: &mut Emitter| {
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
    let mut learn = Emitter::new(ret_ty.clone());
    declare(&mut learn);
    learn.emit_fn_body(block)?;
    let mut emitter = Emitter::new(ret_ty.clone());
    emitter.env.learned = std::mem::take(&mut learn.env.learned);
    declare(&mut emitter);
    let body = emitter.emit_fn_body(block)?;
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
    let strided_loop = grid_stride_offsets("i", nops, "ndim", "shape", "strides");
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
{strided_loop}
        auto r = {body_fn}({strided_args});
        {strided_stores}
    }}
}}
"#
    )
}

/// The head of a grid-stride loop over `n` items (`index`), computing the operands' offsets
/// of each (see [`offsets_of`]). The loop's body follows; the caller closes it.
fn grid_stride_offsets(index: &str, nops: usize, ndim: &str, shape: &str, strides: &str) -> String {
    format!(
        "{}\n{}",
        grid_stride_head(index, "n"),
        offsets_of(index, nops, ndim, shape, strides)
    )
}

/// `for (long long index = ...; index < total; ...) {`, spread over the whole grid.
fn grid_stride_head(index: &str, total: &str) -> String {
    format!(
        r#"    for (long long {index} = blockIdx.x * (long long)blockDim.x + threadIdx.x; {index} < {total};
         {index} += (long long)gridDim.x * blockDim.x) {{"#
    )
}

/// `off[k]`, the element offset of operand `k`, from the C-order multi-index of item `index`
/// over `shape` and per-operand `strides` (`strides[k * ndim + d]`).
fn offsets_of(index: &str, nops: usize, ndim: &str, shape: &str, strides: &str) -> String {
    format!(
        r#"        long long off[{nops}] = {{0}};
        long long rest = {index};
        for (int d = {ndim} - 1; d >= 0; --d) {{
            long long idx = rest % {shape}[d];
            rest /= {shape}[d];
            for (int k = 0; k < {nops}; ++k) off[k] += idx * {strides}[k * {ndim} + d];
        }}"#
    )
}

/// One operand of a gufunc kernel, in operand order (inputs, output parameters, returns).
pub(crate) enum GuOperand {
    /// A core view of `rank` dimensions.
    View {
        elem: Ty,
        rank: usize,
        mutable: bool,
    },
    /// A `()` input, passed by value.
    ScalarIn(Ty),
    /// A `()` output taken as `&mut T`.
    ScalarOut(Ty),
    /// A `()` output returned by the core function.
    Return(Ty),
}

/// `<name>_gufunc`: one thread per loop item (grid-stride), each building its operands' views
/// from the loop and core strides and calling the core function `core_fn`, whose parameters
/// are the operands `call_order` lists. With `mapped_axes > 0` (see `mapping.rs`), one thread
/// per loop item and index of the output view's first `mapped_axes` axes, passed to the core.
pub(crate) fn emit_gufunc_kernel(
    name: &str,
    core_fn: &str,
    operands: &[GuOperand],
    call_order: &[usize],
    mapped_axes: usize,
) -> String {
    let nops = operands.len();
    let mut params = Vec::new();
    let mut setup = String::new();
    let mut core_base = 0usize;
    let mut mapped_base = 0usize;
    let mut returns = Vec::new();
    for (k, op) in operands.iter().enumerate() {
        match op {
            GuOperand::View {
                elem,
                rank,
                mutable,
            } => {
                if *mutable {
                    mapped_base = core_base;
                }
                let c = if *mutable { "" } else { "const " };
                let t = elem.cpp();
                params.push(format!("{c}{t}* __restrict__ p{k}"));
                setup.push_str(&format!(
                    "        __ufunc_view<{c}{t}, {rank}> a{k};\n        a{k}.ptr = p{k} + off[{k}];\n"
                ));
                for d in 0..*rank {
                    let j = core_base + d;
                    setup.push_str(&format!(
                        "        a{k}.shape[{d}] = core_shapes[{j}];\n        a{k}.strides[{d}] = core_strides[{j}];\n"
                    ));
                }
                core_base += rank;
            }
            GuOperand::ScalarIn(t) => {
                params.push(format!("const {}* __restrict__ p{k}", t.cpp()));
                setup.push_str(&format!("        {} a{k} = p{k}[off[{k}]];\n", t.cpp()));
            }
            GuOperand::ScalarOut(t) => {
                params.push(format!("{}* __restrict__ p{k}", t.cpp()));
                setup.push_str(&format!("        {}* a{k} = p{k} + off[{k}];\n", t.cpp()));
            }
            GuOperand::Return(t) => {
                params.push(format!("{}* __restrict__ p{k}", t.cpp()));
                returns.push(k);
            }
        }
    }
    let mut args = call_order
        .iter()
        .map(|k| format!("a{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    if mapped_axes > 0 {
        args.push_str(", mapped, mapped_len");
    }
    let call = match returns.as_slice() {
        [] => format!("        {core_fn}({args});\n"),
        [k] => format!("        p{k}[off[{k}]] = {core_fn}({args});\n"),
        ks => {
            let mut c = format!("        auto r = {core_fn}({args});\n");
            for (i, k) in ks.iter().enumerate() {
                c.push_str(&format!("        p{k}[off[{k}]] = r.f{i};\n"));
            }
            c
        }
    };
    let params = params.join(", ");
    let item_loop = if mapped_axes == 0 {
        grid_stride_offsets("item", nops, "loop_ndim", "loop_shape", "loop_strides")
    } else {
        // Thread `t` is loop item `t / inner` and output index `t % inner` (C order).
        format!(
            r#"    const long long* out_core = core_shapes + {mapped_base};
    long long inner = 1;
    for (int k = 0; k < {mapped_axes}; ++k) inner *= out_core[k];
    const long long threads = n * inner;
{head}
        long long item = t / inner;
        long long mapped[{mapped_axes}], mapped_len[{mapped_axes}];
        for (long long k = {mapped_axes} - 1, m = t % inner; k >= 0; --k) {{
            mapped_len[k] = out_core[k];
            mapped[k] = m % out_core[k];
            m /= out_core[k];
        }}
{offsets}"#,
            head = grid_stride_head("t", "threads"),
            offsets = offsets_of("item", nops, "loop_ndim", "loop_shape", "loop_strides")
        )
    };
    format!(
        r#"extern "C" __global__ void {name}_gufunc(long long n, int loop_ndim,
        const long long* __restrict__ loop_shape, const long long* __restrict__ loop_strides,
        const long long* __restrict__ core_shapes, const long long* __restrict__ core_strides,
        {params}) {{
{item_loop}
{setup}{call}    }}
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
