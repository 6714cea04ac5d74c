//! The translation pass: what each attribute's CUDA side needs, computed before generation so
//! that generation cannot fail. Every untranslatable node goes to the error context; types the
//! checks reject are `Ty::Unsupported` here, so that one mistake gives one error.

use super::emit::{helper_site_offset, BODY_SITE_BASE, HELPER_SITES};
use super::{emit_device_fn, emit_function, mapping::mapped_loops, ty_of, DeviceFn, Ty};
use crate::errors::Errors;
use crate::model::{Instance, Role, Ufunc};
use syn::{Block, Ident, ReturnType, Type};

/// The device function of one instantiation of a `#[vectorize]` body.
pub(crate) struct ElementwiseKernel {
    /// The kernel's name: the function's, with the instantiated type (`foo_f32`).
    pub kernel: String,
    /// The device function's C++ name.
    pub body_fn: String,
    pub device: DeviceFn,
    /// The C++ element types of the inputs and the outputs.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

/// The device function of one instantiation of a `#[guvectorize]` core.
pub(crate) struct GufuncKernel {
    /// The kernel's name: the function's, with the instantiated type (`foo_f32`).
    pub kernel: String,
    /// The device function's C++ name.
    pub core_fn: String,
    pub device: DeviceFn,
    /// Each parameter's type, in order.
    pub params: Vec<Ty>,
    /// The returned values' types.
    pub returns: Vec<Ty>,
    /// How many leading loops of the core run one thread per index (see `mapping`).
    pub mapped_axes: usize,
}

/// With the `cuda` target, one kernel per instance of the body (`None`s without it).
pub(crate) fn elementwise(
    f: &Ufunc<'_>,
    instances: &[Instance<'_>],
    errors: &Errors,
) -> Vec<Option<ElementwiseKernel>> {
    per_instance(f, instances, errors, elementwise_instance)
}

/// With the `cuda` target, one core per instance of a `#[guvectorize]` function (`None`s
/// without it).
pub(crate) fn gufunc(
    f: &Ufunc<'_>,
    instances: &[Instance<'_>],
    errors: &Errors,
) -> Vec<Option<GufuncKernel>> {
    per_instance(f, instances, errors, gufunc_instance)
}

/// `translate` of each instance, with the `cuda` target. Where several instances fail, the
/// errors of the first are reported: the others repeat them.
fn per_instance<K>(
    f: &Ufunc<'_>,
    instances: &[Instance<'_>],
    errors: &Errors,
    translate: impl Fn(&Ufunc<'_>, &Instance<'_>, &Errors) -> K,
) -> Vec<Option<K>> {
    let mut reported = false;
    instances
        .iter()
        .map(|inst| {
            if !f.attr.wants_cuda() {
                return None;
            }
            let own = Errors::new();
            let kernel = translate(f, inst, &own);
            if let Err(e) = own.check() {
                if !reported {
                    errors.push(e);
                    reported = true;
                }
            }
            Some(kernel)
        })
        .collect()
}

/// The kernel's name for an instance: the function's, with the instantiated type (`foo_f32`).
fn kernel_name(inst: &Instance<'_>) -> String {
    inst.body_ty
        .to_string()
        .trim_start_matches("__ufunc_")
        .to_string()
}

fn elementwise_instance(f: &Ufunc<'_>, inst: &Instance<'_>, errors: &Errors) -> ElementwiseKernel {
    let block: Block = errors
        .record(inst.apply_to(&*f.item.block))
        .unwrap_or_else(|| (*f.item.block).clone());
    let param_tys: Vec<Type> = f
        .params
        .iter()
        .map(|p| {
            errors
                .record(inst.apply_to(p.ty))
                .unwrap_or_else(|| p.ty.clone())
        })
        .collect();
    let output: ReturnType = errors
        .record(inst.apply_to(&f.item.sig.output))
        .unwrap_or_else(|| f.item.sig.output.clone());
    let params: Vec<(&Ident, &Type)> = f.params.iter().map(|p| p.ident).zip(&param_tys).collect();
    let kernel = kernel_name(inst);
    let body_fn = format!("__ufunc_body_{kernel}");
    let device = emit_device_fn(&body_fn, &params, &output, &block, BODY_SITE_BASE, errors);
    let outputs: Vec<Type> = match &output {
        ReturnType::Type(_, t) => match &**t {
            Type::Tuple(tt) => tt.elems.iter().cloned().collect(),
            t => vec![t.clone()],
        },
        ReturnType::Default => vec![],
    };
    let cpp = |t: &Type| ty_of(t).map(|t| t.cpp()).unwrap_or_default();
    ElementwiseKernel {
        kernel,
        body_fn,
        device,
        inputs: param_tys.iter().map(cpp).collect(),
        outputs: outputs.iter().map(cpp).collect(),
    }
}

/// The core of one instance as a device function over fixed-rank views.
/// `a: ArrayViewD<f32>` -> "a dynamic-rank view is not supported on cuda; give the rank ...".
fn gufunc_instance(f: &Ufunc<'_>, inst: &Instance<'_>, errors: &Errors) -> GufuncKernel {
    let elem = |t: &Type| {
        inst.apply_to(t)
            .ok()
            .and_then(|t| ty_of(&t))
            .unwrap_or(Ty::Unsupported)
    };
    let block: Block = errors
        .record(inst.apply_to(&*f.item.block))
        .unwrap_or_else(|| (*f.item.block).clone());
    let params: Vec<Ty> = f
        .params
        .iter()
        .map(|p| {
            let mutable = !p.role.is_input();
            match p.role {
                Role::InView { rank: Some(rank) } | Role::OutView { rank: Some(rank) } => {
                    Ty::View {
                        elem: Box::new(elem(p.elem)),
                        rank,
                        mutable,
                    }
                }
                Role::InView { rank: None } | Role::OutView { rank: None } => {
                    errors.spanned(
                        p.ty,
                        "a dynamic-rank view is not supported on cuda; give the rank, as in \
                         `ArrayView2<f32>`",
                    );
                    Ty::Unsupported
                }
                Role::InScalar => elem(p.elem),
                Role::OutScalar => Ty::Ptr(Box::new(elem(p.elem))),
            }
        })
        .collect();
    let returns: Vec<Ty> = f.returns.iter().map(|t| elem(t)).collect();
    let ret = match returns.as_slice() {
        [] => Ty::Unit,
        [t] => t.clone(),
        ts => Ty::Tuple(ts.to_vec()),
    };
    // One output view and no returned values: its leading loops may run a thread per element.
    let outs: Vec<_> = f.output_params().collect();
    let mapped = match (outs.as_slice(), f.returns.is_empty()) {
        ([out], true) => match out.role {
            Role::OutView { rank: Some(rank) } => mapped_loops(&block, out.ident, rank),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let kernel = kernel_name(inst);
    let core_fn = format!("__ufunc_core_{kernel}");
    let typed: Vec<(&Ident, Ty)> = f
        .params
        .iter()
        .map(|p| p.ident)
        .zip(params.clone())
        .collect();
    let device = emit_function(
        &core_fn,
        &typed,
        ret,
        &block,
        &mapped,
        BODY_SITE_BASE,
        errors,
    );
    GufuncKernel {
        kernel,
        core_fn,
        device,
        params,
        returns,
        mapped_axes: mapped.len(),
    }
}

/// A `#[kernel_fn]` helper as a device function, or why it cannot be one. Not a compile error:
/// only a cuda ufunc that calls the helper fails, naming it.
pub(crate) fn helper(f: &Ufunc<'_>) -> Result<DeviceFn, String> {
    let own = Errors::new();
    let params: Vec<(&Ident, &Type)> = f.params.iter().map(|p| (p.ident, p.ty)).collect();
    let cpp_name = format!("__ufunc_helper_{}", f.name());
    let block = &f.item.block;
    let offset = helper_site_offset(&f.name().to_string());
    let base = format!("__UFUNC_HELPER_SITE_BASE + {offset}");
    let device = emit_device_fn(&cpp_name, &params, &f.item.sig.output, block, &base, &own);
    if device.captures.panics.len() > HELPER_SITES {
        own.push(syn::Error::new_spanned(
            f.name(),
            format!("a #[kernel_fn] helper may have at most {HELPER_SITES} panic sites on cuda"),
        ));
    }
    match own.check() {
        Ok(()) => Ok(device),
        Err(e) => Err(e
            .into_iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")),
    }
}
