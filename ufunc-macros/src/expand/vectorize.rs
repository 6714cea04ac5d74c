//! `#[vectorize]`: the array function `foo`, and `struct foo` with its companions (`out`, `on`,
//! `out_on`, `scalar`, `KERNEL_PATH`, `TARGETS`, `DEFAULT_TARGET`).

use super::body::{body_impl, Instantiation};
use super::{fallback, param_tokens, parse_fn, replace_ident, target_tokens};
use crate::attr::parse_vectorize_attr;
use crate::check::check_vectorize;
use crate::model::{Function, Vectorize};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::Type;

/// Parse, check, expand; on error, the errors plus the function unchanged.
pub(crate) fn vectorize(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item_fn = match parse_fn(&item, "#[vectorize]") {
        Ok(f) => f,
        Err(e) => return fallback(e, item),
    };
    let attr = match parse_vectorize_attr(attr, "#[vectorize]") {
        Ok(a) => a,
        Err(e) => return fallback(e, item),
    };
    let v = Vectorize {
        attr,
        func: Function::from_syn(&item_fn),
    };
    match check_vectorize(&v).and_then(|()| expand(&v)) {
        Ok(tokens) => tokens,
        Err(e) => fallback(e, item),
    }
}

/// A type-name fragment for an element type: `f32`, `complex_f64`.
fn type_slug(ty: &Type) -> String {
    let s: String = ty
        .to_token_stream()
        .to_string()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    s.split('_')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

/// How the generated API is typed: by concrete element types, or by the function's type
/// parameter bound by a generated trait listing the instantiated types.
struct Typing {
    /// Generic parameters that come first (`T: __ufunc_types_foo,`).
    lead: TokenStream,
    /// Turbofish forwarding them (`T,`).
    lead_args: TokenStream,
    /// The `Body` type of a call.
    body: TokenStream,
    /// A `Body` type nameable without the type parameter, for `KERNEL_PATH`.
    body_const: TokenStream,
    /// Items that depend on the typing: `scalar`, the bodies, the types trait.
    items: TokenStream,
    /// Associated items of `struct foo` that depend on it (the generic `scalar`).
    assoc: TokenStream,
}

fn expand(v: &Vectorize<'_>) -> syn::Result<TokenStream> {
    let f = &v.func;
    let item = f.item;
    let name = f.name();
    let vis = &item.vis;
    let attrs = item.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let params: Vec<&Ident> = f.params.iter().map(|p| p.ident).collect();
    let arg_tys: Vec<Ident> = (0..params.len())
        .map(|i| format_ident!("__UfuncA{}", i))
        .collect();
    let out_params: Vec<Ident> = match f.outputs.len() {
        1 => vec![format_ident!("out")],
        n => (0..n).map(|i| format_ident!("out{}", i)).collect(),
    };
    let out_tys: Vec<Ident> = (0..out_params.len())
        .map(|i| format_ident!("__UfuncO{}", i))
        .collect();
    let targets = v.attr.target_names();
    let target_list = targets.iter().map(|t| target_tokens(t));
    let default_target = target_tokens(&targets[0]);
    let targets_doc = format!(
        "The targets `{name}` was compiled for: `{}`. The first is the default.",
        targets.join("`, `")
    );
    let in_types: Vec<&Type> = f.params.iter().map(|p| p.ty).collect();
    let in_tuple = quote!((#(#in_types,)*));
    let out_ty = match &item.sig.output {
        syn::ReturnType::Type(_, ty) => ty.to_token_stream(),
        syn::ReturnType::Default => quote!(()),
    };
    let Typing {
        lead,
        lead_args,
        body,
        body_const,
        items,
        assoc,
    } = match (&v.attr.types, f.generic) {
        (Some((_, types)), Some(generic)) => generic_typing(v, generic, types, &in_tuple, &out_ty)?,
        _ => Typing {
            lead: quote!(),
            lead_args: quote!(),
            body: quote!(#name),
            body_const: quote!(#name),
            items: body_impl(v, name, None)?,
            assoc: quote!(),
        },
    };
    let p = quote!(::ufunc::__private);
    let doc_on = format!(
        "Applies `{name}` element-wise on the chosen target, one of [`Self::TARGETS`] \
         (`Error::TargetNotCompiled` for any other)."
    );
    let doc_out = format!(
        "Writes `{name}` of the inputs into existing arrays or mutable views (any strides), which \
         must have exactly the broadcast shape of the inputs."
    );
    let companions_doc = format!(
        "Companions of the ufunc [`{name}()`]: `{name}::out`, `{name}::on`, `{name}::out_on`, \
         `{name}::scalar`, `{name}::KERNEL_PATH`."
    );
    let outs_tuple = quote!((#(#out_tys,)*));
    let device_fns = if v.attr.wants_cuda() {
        quote! {
            /// Applies the function on the GPU and leaves the results there: device arrays and
            /// views are used in place, host arrays and scalars are copied in. Waits for the
            /// kernel, so that a panic in the body is this call's `Err`.
            pub fn on_device<#lead #(#arg_tys),*>(#(#params: #arg_tys),*)
                -> ::ufunc::Result<#p::DeviceArraysOf<#body, (#(#arg_tys,)*)>>
            where
                (#(#arg_tys,)*): #p::DeviceOperands<#in_tuple>,
            {
                #p::call_device::<#body, _>(Self::TARGETS, None, (#(#params,)*))
            }

            /// As `on_device`, queued on `stream` without waiting: read the results after
            /// `stream.synchronize()`, which reports a panic in the body.
            pub fn on_stream<#lead #(#arg_tys),*>(
                stream: &::ufunc::cuda::Stream, #(#params: #arg_tys),*
            ) -> ::ufunc::Result<#p::DeviceArraysOf<#body, (#(#arg_tys,)*)>>
            where
                (#(#arg_tys,)*): #p::DeviceOperands<#in_tuple>,
            {
                #p::call_device::<#body, _>(Self::TARGETS, Some(stream), (#(#params,)*))
            }

            /// Writes into existing device arrays of exactly the broadcast shape.
            pub fn out_device<#lead #(#arg_tys,)* #(#out_tys),*>(
                #(#params: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                (#(#arg_tys,)*): #p::DeviceOperands<#in_tuple>,
                #outs_tuple: #p::DeviceOutOperands<#out_ty>,
            {
                #p::call_out_device::<#body, _, _>(
                    Self::TARGETS, None, (#(#params,)*), (#(#out_params,)*)
                )
            }

            /// As `out_device`, queued on `stream` without waiting.
            pub fn out_stream<#lead #(#arg_tys,)* #(#out_tys),*>(
                stream: &::ufunc::cuda::Stream, #(#params: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                (#(#arg_tys,)*): #p::DeviceOperands<#in_tuple>,
                #outs_tuple: #p::DeviceOutOperands<#out_ty>,
            {
                #p::call_out_device::<#body, _, _>(
                    Self::TARGETS, Some(stream), (#(#params,)*), (#(#out_params,)*)
                )
            }
        }
    } else {
        quote!()
    };
    Ok(quote! {
        #(#attrs)*
        ///
        /// *Generated by `#[vectorize]`*: applies the function element-wise to arrays, views and
        /// scalars with NumPy broadcasting, on the default target, and returns new arrays in
        /// standard layout. The struct of the same name holds `out`, `on`, `out_on`, `scalar`.
        #vis fn #name<#lead #(#arg_tys),*>(#(#params: #arg_tys),*)
            -> ::ufunc::Result<#p::ArraysOf<#body, (#(#arg_tys,)*)>>
        where
            (#(#arg_tys,)*): #p::Operands<#in_tuple>,
        {
            #name::on::<#lead_args #(#arg_tys),*>(#name::DEFAULT_TARGET, #(#params),*)
        }

        #[doc = #companions_doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {
            _private: (),
        }

        #[allow(clippy::all)]
        impl #name {
            #[doc = #targets_doc]
            pub const TARGETS: &'static [::ufunc::Target] = &[#(#target_list),*];
            /// The target the plain call and `out` use.
            pub const DEFAULT_TARGET: ::ufunc::Target = #default_target;
            /// Whether the loops run the rewritten lane body (`Simd`) or call the scalar
            /// function per element (`Scalar`, with the reason).
            pub const KERNEL_PATH: ::ufunc::KernelPath = <#body_const as #p::Body>::PATH;

            #[doc = #doc_on]
            pub fn on<#lead #(#arg_tys),*>(target: ::ufunc::Target, #(#params: #arg_tys),*)
                -> ::ufunc::Result<#p::ArraysOf<#body, (#(#arg_tys,)*)>>
            where
                (#(#arg_tys,)*): #p::Operands<#in_tuple>,
            {
                #p::call::<#body, _>(target, Self::TARGETS, (#(#params,)*))
            }

            #[doc = #doc_out]
            pub fn out<#lead #(#arg_tys,)* #(#out_tys),*>(
                #(#params: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                (#(#arg_tys,)*): #p::Operands<#in_tuple>,
                #outs_tuple: #p::OutOperands<#out_ty>,
            {
                Self::out_on::<#lead_args #(#arg_tys,)* #(#out_tys),*>(
                    Self::DEFAULT_TARGET, #(#params,)* #(#out_params),*
                )
            }

            /// `out` on the chosen target.
            pub fn out_on<#lead #(#arg_tys,)* #(#out_tys),*>(
                target: ::ufunc::Target, #(#params: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                (#(#arg_tys,)*): #p::Operands<#in_tuple>,
                #outs_tuple: #p::OutOperands<#out_ty>,
            {
                #p::call_out::<#body, _, _>(
                    target, Self::TARGETS, (#(#params,)*), (#(#out_params,)*)
                )
            }

            #assoc

            #device_fns
        }

        #items
    })
}

/// For `types = [..]`: a trait implemented by each listed type, naming its body; one body
/// struct per type; and a generic `scalar` dispatching on the type.
fn generic_typing(
    v: &Vectorize<'_>,
    generic: &Ident,
    types: &[Type],
    in_tuple: &TokenStream,
    out_ty: &TokenStream,
) -> syn::Result<Typing> {
    let f = &v.func;
    let name = f.name();
    let vis = &f.item.vis;
    let types_trait = format_ident!("__ufunc_types_{}", name);
    let self_ty = quote!(Self);
    let in_self = replace_ident(in_tuple.clone(), generic, &self_ty);
    let out_self = replace_ident(out_ty.clone(), generic, &self_ty);
    let params: Vec<&Ident> = f.params.iter().map(|p| p.ident).collect();
    let param_tys_self: Vec<TokenStream> = f
        .params
        .iter()
        .map(|p| replace_ident(p.ty.to_token_stream(), generic, &self_ty))
        .collect();
    let scalar_params = f.params.iter().map(|p| param_tokens(p.ident, p.ty, false));
    let types_doc = format!(
        "The element types `{name}` was instantiated for: `{}`.",
        types
            .iter()
            .map(|t| t.to_token_stream().to_string().replace(' ', ""))
            .collect::<Vec<_>>()
            .join("`, `")
    );
    let per_type = types.iter().map(|ty| -> syn::Result<TokenStream> {
        let body_ty = format_ident!("__ufunc_{}_{}", name, type_slug(ty));
        let inst = Instantiation {
            generic,
            concrete: ty,
            all_types: types,
        };
        let body = body_impl(v, &body_ty, Some(&inst))?;
        Ok(quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code)]
            #vis struct #body_ty {
                _private: (),
            }
            #body
            impl #types_trait for #ty {
                type __UfuncBody = #body_ty;
                #[inline]
                fn __ufunc_scalar(#(#params: #param_tys_self),*) -> #out_self {
                    #body_ty::scalar(#(#params),*)
                }
            }
        })
    });
    let per_type: Vec<TokenStream> = per_type.collect::<syn::Result<_>>()?;
    let first = &types[0];
    Ok(Typing {
        lead: quote!(#generic: #types_trait,),
        lead_args: quote!(#generic,),
        body: quote!(<#generic as #types_trait>::__UfuncBody),
        body_const: quote!(<#first as #types_trait>::__UfuncBody),
        items: quote! {
            #[doc = #types_doc]
            #[allow(non_camel_case_types)]
            #vis trait #types_trait: ::ufunc::__private::Element + ::ufunc::__private::DeviceOutputs {
                #[doc(hidden)]
                type __UfuncBody: ::ufunc::__private::Body<In = #in_self, Out = #out_self>
                    + ::ufunc::__private::DeviceKernel;
                #[doc(hidden)]
                fn __ufunc_scalar(#(#params: #param_tys_self),*) -> #out_self;
            }
            #(#per_type)*
        },
        assoc: quote! {
            /// The original scalar function, for any of the instantiated types.
            #[inline]
            pub fn scalar<#generic: #types_trait>(#(#scalar_params),*) -> #out_ty {
                <#generic as #types_trait>::__ufunc_scalar(#(#params),*)
            }
        },
    })
}
