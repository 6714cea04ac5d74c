//! How the generated API of either ufunc kind is typed for `types = [...]`: a trait implemented
//! by each listed type that names the type's body, one body struct per type, and the generic
//! form of the function as written (`scalar` of `#[vectorize]`, `core` of `#[guvectorize]`)
//! dispatching on the type.

use super::param_tokens;
use crate::model::{replace_ident, Instance, Ufunc};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::Type;

/// How the generated API is typed: by concrete element types, or by the function's type
/// parameter bound by a generated trait listing the instantiated types.
pub(super) struct Typing {
    /// Generic parameters that come first (`T: __ufunc_types_foo,`).
    pub lead: TokenStream,
    /// Turbofish forwarding them (`T,`).
    pub lead_args: TokenStream,
    /// The `Body` / `GuBody` type of a call.
    pub body: TokenStream,
    /// A body type nameable without the type parameter, for `KERNEL_PATH`.
    pub body_const: TokenStream,
    /// Items that depend on the typing: the bodies, the types trait.
    pub items: TokenStream,
    /// Associated items of `struct foo` that depend on it (the generic `scalar` or `core`).
    pub assoc: TokenStream,
}

/// What differs between the kinds: the trait each body implements and the name of the
/// function as written, which every body type has as an associated function.
pub(super) struct GenericKind {
    /// `::ufunc::__private::Body` or `::ufunc::__private::GuBody`.
    pub body_trait: TokenStream,
    /// `scalar` or `core`.
    pub fn_name: Ident,
    pub fn_doc: &'static str,
}

/// The typing of `f`: by `types = [..]` if given, else by the concrete types, with the body type
/// being the function's name.
pub(super) fn typing(
    f: &Ufunc<'_>,
    kind: &GenericKind,
    instances: &[Instance<'_>],
    bodies: Vec<TokenStream>,
) -> Typing {
    match (&f.attr.types, f.generic) {
        (Some((_, types)), Some(generic)) => {
            generic_typing(f, kind, generic, types, instances, bodies)
        }
        _ => {
            let name = f.name();
            Typing {
                lead: quote!(),
                lead_args: quote!(),
                body: quote!(#name),
                body_const: quote!(#name),
                items: quote!(#(#bodies)*),
                assoc: quote!(),
            }
        }
    }
}

/// For `types = [..]`: the types trait, one body struct per type (around its `bodies`, which
/// implement the body trait and the function as written), and the generic function.
fn generic_typing(
    f: &Ufunc<'_>,
    kind: &GenericKind,
    generic: &Ident,
    types: &[Type],
    instances: &[Instance<'_>],
    bodies: Vec<TokenStream>,
) -> Typing {
    let name = f.name();
    let vis = &f.item.vis;
    let types_trait = format_ident!("__ufunc_types_{}", name);
    let (body_trait, fn_name) = (&kind.body_trait, &kind.fn_name);
    let hidden_fn = format_ident!("__ufunc_{}", fn_name);
    let self_ty = quote!(Self);
    let in_self = replace_ident(f.input_tuple(), generic, &self_ty);
    let out_ty = match &f.item.sig.output {
        syn::ReturnType::Type(_, ty) => ty.to_token_stream(),
        syn::ReturnType::Default => quote!(()),
    };
    let out_self = replace_ident(out_ty.clone(), generic, &self_ty);
    let body_out_self = replace_ident(f.output_type(), generic, &self_ty);
    let params: Vec<&Ident> = f.params.iter().map(|p| p.ident).collect();
    let param_tys_self: Vec<TokenStream> = f
        .params
        .iter()
        .map(|p| replace_ident(p.ty.to_token_stream(), generic, &self_ty))
        .collect();
    let generic_params = f.params.iter().map(|p| param_tokens(p.ident, p.ty, false));
    // A gufunc's views may name lifetimes of the function.
    let lifetimes: Vec<_> = f.item.sig.generics.lifetimes().collect();
    let types_doc = format!(
        "The element types `{name}` was instantiated for: `{}`.",
        types
            .iter()
            .map(|t| t.to_token_stream().to_string().replace(' ', ""))
            .collect::<Vec<_>>()
            .join("`, `")
    );
    let per_type = instances
        .iter()
        .zip(types)
        .zip(bodies)
        .map(|((inst, ty), body)| {
            let body_ty = &inst.body_ty;
            quote! {
                #[doc(hidden)]
                #[allow(non_camel_case_types, dead_code)]
                #vis struct #body_ty {
                    _private: (),
                }
                #body
                impl #types_trait for #ty {
                    type __UfuncBody = #body_ty;
                    #[inline]
                    fn #hidden_fn<#(#lifetimes),*>(#(#params: #param_tys_self),*) -> #out_self {
                        #body_ty::#fn_name(#(#params),*)
                    }
                }
            }
        });
    let first = &types[0];
    let doc = kind.fn_doc;
    Typing {
        lead: quote!(#generic: #types_trait,),
        lead_args: quote!(#generic,),
        body: quote!(<#generic as #types_trait>::__UfuncBody),
        body_const: quote!(<#first as #types_trait>::__UfuncBody),
        items: quote! {
            #[doc = #types_doc]
            #[allow(non_camel_case_types)]
            #vis trait #types_trait: ::ufunc::__private::Element + ::ufunc::__private::DeviceOutputs {
                #[doc(hidden)]
                type __UfuncBody: #body_trait<In = #in_self, Out = #body_out_self>
                    + ::ufunc::__private::DeviceKernel;
                #[doc(hidden)]
                fn #hidden_fn<#(#lifetimes),*>(#(#params: #param_tys_self),*) -> #out_self;
            }
            #(#per_type)*
        },
        assoc: quote! {
            #[doc = #doc]
            #[inline]
            pub fn #fn_name<#(#lifetimes,)* #generic: #types_trait>(#(#generic_params),*) -> #out_ty {
                <#generic as #types_trait>::#hidden_fn(#(#params),*)
            }
        },
    }
}
