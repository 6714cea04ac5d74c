//! Code generation. Generated code names only `::ufunc::__private::...` paths and its own
//! identifiers start with `__ufunc` / `__Ufunc`.

use crate::attr::parse_vectorize_attr;
use crate::check::{check_kernel_fn, check_vectorize};
use crate::lane::{isa_ident, mentions_integers, rewrite, scalar_reason};
use crate::model::{Function, Vectorize};
use crate::types::{elem_kind, ElemKind};
use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::{ItemFn, Type};

/// `#[vectorize]`: parse, check, expand; on error, the errors plus the function unchanged.
pub(crate) fn vectorize(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item_fn: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => return fallback(e, item),
    };
    let attr = match parse_vectorize_attr(attr) {
        Ok(a) => a,
        Err(e) => return fallback(e, item),
    };
    let v = Vectorize {
        attr,
        func: Function::from_syn(&item_fn),
    };
    match check_vectorize(&v) {
        Ok(()) => expand_vectorize(&v),
        Err(e) => fallback(e, item),
    }
}

/// `#[kernel_fn]`: the helper unchanged, plus `mod name { fn __ufunc_lane }`.
pub(crate) fn kernel_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item_fn: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => return fallback(e, item),
    };
    if !attr.is_empty() {
        let e = syn::Error::new_spanned(attr, "#[kernel_fn] takes no arguments");
        return fallback(e, item);
    }
    let f = Function::from_syn(&item_fn);
    if let Err(e) = check_kernel_fn(&f) {
        return fallback(e, item);
    }
    let name = f.name();
    let vis = &item_fn.vis;
    let isa = isa_ident();
    let reason = scalar_reason(&item_fn.block);
    let speculate = reason.is_none() && panic_free(&f, None);
    let lane_block = rewrite(&item_fn.block, &isa, speculate);
    let params = f
        .params
        .iter()
        .map(|p| param_tokens(p.ident, p.ty, p.mutable));
    let output = &item_fn.sig.output;
    let reason_tokens = match &reason {
        None => quote!(::core::option::Option::None),
        Some(r) => {
            let r = format!("helper `{name}`: {r}");
            quote!(::core::option::Option::Some(#r))
        }
    };
    quote! {
        #[inline]
        #item_fn

        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports, unused_mut, unused_parens)]
        #vis mod #name {
            use super::*;
            /// Why the helper is not straight-line lane code, if it is not.
            pub const __UFUNC_SCALAR_REASON: ::core::option::Option<&str> = #reason_tokens;
            #[inline(always)]
            pub fn __ufunc_lane<#isa: ::ufunc::__private::Isa>(#(#params),*) #output #lane_block
        }
    }
}

fn fallback(error: syn::Error, item: TokenStream) -> TokenStream {
    let mut out = error.to_compile_error();
    out.extend(item);
    out
}

fn param_tokens(ident: &Ident, ty: &Type, mutable: bool) -> TokenStream {
    if mutable {
        quote!(mut #ident: #ty)
    } else {
        quote!(#ident: #ty)
    }
}

/// Whether no expression of the function can panic (see `lane::mentions_integers`): every
/// parameter and result is a float, complex or bool, and the body mentions no integer.
fn panic_free(f: &Function<'_>, generic_types: Option<&[Type]>) -> bool {
    let generic_ok = generic_types.is_none_or(|list| {
        list.iter().all(|t| {
            matches!(
                elem_kind(t, None),
                Some(ElemKind::Float | ElemKind::Complex)
            )
        })
    });
    let kind_ok = |ty: &Type| match elem_kind(ty, f.generic) {
        Some(ElemKind::Float | ElemKind::Complex | ElemKind::Bool) => true,
        Some(ElemKind::Generic) => generic_ok,
        _ => false,
    };
    f.params.iter().all(|p| kind_ok(p.ty))
        && f.outputs.iter().all(|t| kind_ok(t))
        && !mentions_integers(&f.item.block)
}

/// Replaces the identifier `from` by `to` everywhere in `tokens` (the type parameter in types).
fn replace_ident(tokens: TokenStream, from: &Ident, to: &TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .flat_map(|tt| match tt {
            TokenTree::Ident(i) if i == *from => to.clone(),
            TokenTree::Group(g) => {
                let mut ng =
                    proc_macro2::Group::new(g.delimiter(), replace_ident(g.stream(), from, to));
                ng.set_span(g.span());
                TokenTree::Group(ng).into_token_stream()
            }
            tt => tt.into_token_stream(),
        })
        .collect()
}

/// A module-name fragment for an element type: `f32`, `complex_f64`.
fn type_slug(ty: &Type) -> Ident {
    let s: String = ty
        .to_token_stream()
        .to_string()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let s = s
        .split('_')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    format_ident!("__ufunc_{}", s)
}

fn target_variant(name: &str) -> TokenStream {
    match name {
        "parallel" => quote!(::ufunc::Target::Parallel),
        _ => quote!(::ufunc::Target::Cpu),
    }
}

/// How the generated API is typed: by concrete element types, or by the type parameter `T`
/// bound by the generated `Elem` trait.
struct Typing {
    /// Generic parameters that come first (`T: Elem,`), as seen inside the module.
    lead_inner: TokenStream,
    /// The same, as seen beside the module (`T: name::Elem,`).
    lead_outer: TokenStream,
    /// Turbofish forwarding the lead parameters (`T,`).
    lead_args: TokenStream,
    /// The body type inside the module and beside it.
    body_inner: TokenStream,
    body_outer: TokenStream,
    /// A body type nameable at module level, for `KERNEL_PATH` (the same for every type).
    body_const: TokenStream,
}

fn expand_vectorize(v: &Vectorize<'_>) -> TokenStream {
    let f = &v.func;
    let item = f.item;
    let name = f.name();
    let vis = &item.vis;
    let attrs = &item.attrs;
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
    let targets: Vec<String> = if v.attr.targets.is_empty() {
        vec!["cpu".into()]
    } else {
        v.attr.targets.iter().map(|t| t.value()).collect()
    };
    let target_list = targets.iter().map(|t| target_variant(t));
    let default_target = target_variant(&targets[0]);
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

    let (typing, per_type) = match (&v.attr.types, f.generic) {
        (Some((_, types)), Some(generic)) => {
            let typing = Typing {
                lead_inner: quote!(#generic: Elem,),
                lead_outer: quote!(#generic: #name::Elem,),
                lead_args: quote!(#generic,),
                body_inner: quote!(<#generic as Elem>::__UfuncBody),
                body_outer: quote!(<#generic as #name::Elem>::__UfuncBody),
                body_const: {
                    let first = &types[0];
                    quote!(<#first as Elem>::__UfuncBody)
                },
            };
            (
                typing,
                expand_generic_parts(v, generic, types, &in_tuple, &out_ty),
            )
        }
        _ => {
            let typing = Typing {
                lead_inner: quote!(),
                lead_outer: quote!(),
                lead_args: quote!(),
                body_inner: quote!(__UfuncBody),
                body_outer: quote!(#name::__UfuncBody),
                body_const: quote!(__UfuncBody),
            };
            let scalar_fn = scalar_fn(f, quote!(pub fn scalar));
            let body = body_impl(v, None, &in_tuple, &out_ty);
            (typing, quote!(#scalar_fn #body))
        }
    };
    let Typing {
        lead_inner,
        lead_outer,
        lead_args,
        body_inner,
        body_outer,
        body_const,
    } = typing;
    let private = quote!(::ufunc::__private);
    let doc_on = format!(
        "Applies `{name}` element-wise on the chosen target (one of [`TARGETS`]); \
         [`Error::TargetNotCompiled`](::ufunc::Error::TargetNotCompiled) for any other."
    );
    let doc_out = format!(
        "Writes `{name}` of the inputs into existing arrays or mutable views (any strides), which \
         must have exactly the broadcast shape of the inputs."
    );
    let outs_tuple = quote!((#(#out_tys,)*));
    let outs_values = quote!((#(#out_params,)*));
    quote! {
        #(#attrs)*
        ///
        /// *Generated by `#[vectorize]`*: applies the function element-wise to arrays, views and
        /// scalars with NumPy broadcasting, on the default target, and returns new arrays. The
        /// module of the same name has `out`, `on`, `out_on`, `scalar` and `KERNEL_PATH`.
        #vis fn #name<#lead_outer #(#arg_tys),*>(#(#params: #arg_tys),*)
            -> ::ufunc::Result<#private::ArraysOf<#body_outer, (#(#arg_tys,)*)>>
        where
            (#(#arg_tys,)*): #private::Operands<#in_tuple>,
        {
            #name::on::<#lead_args #(#arg_tys),*>(#name::DEFAULT_TARGET, #(#params),*)
        }

        #[doc = concat!("Companions of the ufunc [`", stringify!(#name), "()`].")]
        #[allow(non_snake_case, unused_imports, unused_mut, unused_parens, clippy::all)]
        #vis mod #name {
            use super::*;

            #[doc = #targets_doc]
            pub const TARGETS: &[::ufunc::Target] = &[#(#target_list),*];
            /// The target the plain call and `out` use.
            pub const DEFAULT_TARGET: ::ufunc::Target = #default_target;

            #[doc = #doc_on]
            pub fn on<#lead_inner #(#arg_tys),*>(target: ::ufunc::Target, #(#params: #arg_tys),*)
                -> ::ufunc::Result<#private::ArraysOf<#body_inner, (#(#arg_tys,)*)>>
            where
                (#(#arg_tys,)*): #private::Operands<#in_tuple>,
            {
                #private::call::<#body_inner, _>(target, TARGETS, (#(#params,)*))
            }

            #[doc = #doc_out]
            pub fn out<#lead_inner #(#arg_tys,)* #(#out_tys),*>(
                #(#params: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                (#(#arg_tys,)*): #private::Operands<#in_tuple>,
                #outs_tuple: #private::OutOperands<#out_ty>,
            {
                out_on::<#lead_args #(#arg_tys,)* #(#out_tys),*>(
                    DEFAULT_TARGET, #(#params,)* #(#out_params),*
                )
            }

            /// [`out`] on the chosen target.
            pub fn out_on<#lead_inner #(#arg_tys,)* #(#out_tys),*>(
                target: ::ufunc::Target, #(#params: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                (#(#arg_tys,)*): #private::Operands<#in_tuple>,
                #outs_tuple: #private::OutOperands<#out_ty>,
            {
                #private::call_out::<#body_inner, _, _>(
                    target, TARGETS, (#(#params,)*), #outs_values
                )
            }

            /// Whether the loops run the rewritten lane body (`Simd`) or call the scalar
            /// function per element (`Scalar`, with the reason).
            pub const KERNEL_PATH: ::ufunc::KernelPath = <#body_const as #private::Body>::PATH;

            #per_type
        }
    }
}

/// `scalar`: the user's function, verbatim, under a new name.
fn scalar_fn(f: &Function<'_>, head: TokenStream) -> TokenStream {
    let item = f.item;
    let params = f
        .params
        .iter()
        .map(|p| param_tokens(p.ident, p.ty, p.mutable));
    let output = &item.sig.output;
    let block = &item.block;
    let attrs = item.attrs.iter().filter(|a| !a.path().is_ident("doc"));
    quote! {
        /// The original scalar function, unchanged.
        #(#attrs)*
        #[inline]
        #head(#(#params),*) #output #block
    }
}

/// `struct __UfuncBody` and its `Body` impl: the lane body, or a call of `scalar`.
fn body_impl(
    v: &Vectorize<'_>,
    generic_types: Option<&[Type]>,
    in_tuple: &TokenStream,
    out_ty: &TokenStream,
) -> TokenStream {
    let f = &v.func;
    let name = f.name().to_string();
    let isa = isa_ident();
    let reason = scalar_reason(&f.item.block);
    let pat_names = f.params.iter().map(|p| {
        let ident = p.ident;
        if p.mutable {
            quote!(mut #ident)
        } else {
            quote!(#ident)
        }
    });
    let args = f.params.iter().map(|p| p.ident);
    let helpers = helper_calls(&f.item.block);
    let path = match &reason {
        Some(r) => quote!(::ufunc::KernelPath::Scalar { reason: #r }),
        None => {
            quote!(::ufunc::__private::path_with_helpers(&[#(#helpers::__UFUNC_SCALAR_REASON),*]))
        }
    };
    let call_body = match &reason {
        Some(_) => quote!({ scalar(#(#args),*) }),
        None => {
            let speculate = panic_free(f, generic_types);
            let lane = rewrite(&f.item.block, &isa, speculate);
            let args2 = f.params.iter().map(|p| p.ident);
            quote!({
                if <Self as ::ufunc::__private::Body>::PATH.is_simd() #lane else { scalar(#(#args2),*) }
            })
        }
    };
    quote! {
        #[doc(hidden)]
        pub struct __UfuncBody;

        impl ::ufunc::__private::Body for __UfuncBody {
            type In = #in_tuple;
            type Out = #out_ty;
            const NAME: &'static str = #name;
            const PATH: ::ufunc::KernelPath = #path;
            #[inline(always)]
            fn call<#isa: ::ufunc::__private::Isa>((#(#pat_names,)*): Self::In) -> Self::Out
                #call_body
        }
    }
}

/// The helpers (`name(..)` calls to plain lower-case functions) a body calls.
fn helper_calls(block: &syn::Block) -> Vec<Ident> {
    struct Finder(Vec<Ident>);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func {
                if p.qself.is_none() && p.path.leading_colon.is_none() && p.path.segments.len() == 1
                {
                    let ident = &p.path.segments[0].ident;
                    if ident.to_string().starts_with(|c: char| c.is_lowercase())
                        && !self.0.contains(ident)
                    {
                        self.0.push(ident.clone());
                    }
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut f = Finder(vec![]);
    syn::visit::Visit::visit_block(&mut f, block);
    f.0
}

/// For `types = [..]`: the `Elem` trait, the generic `scalar`, and one module per type holding
/// the function with `type T = <that type>`.
fn expand_generic_parts(
    v: &Vectorize<'_>,
    generic: &Ident,
    types: &[Type],
    in_tuple: &TokenStream,
    out_ty: &TokenStream,
) -> TokenStream {
    let f = &v.func;
    let self_ty = quote!(Self);
    let in_self = replace_ident(in_tuple.clone(), generic, &self_ty);
    let out_self = replace_ident(out_ty.clone(), generic, &self_ty);
    let params: Vec<&Ident> = f.params.iter().map(|p| p.ident).collect();
    let param_tys_self: Vec<TokenStream> = f
        .params
        .iter()
        .map(|p| replace_ident(p.ty.to_token_stream(), generic, &self_ty))
        .collect();
    let param_tys: Vec<&Type> = f.params.iter().map(|p| p.ty).collect();
    let types_doc = format!(
        "The element types this ufunc was instantiated for: `{}`.",
        types
            .iter()
            .map(|t| t.to_token_stream().to_string().replace(' ', ""))
            .collect::<Vec<_>>()
            .join("`, `")
    );
    let per_type = types.iter().map(|ty| {
        let module = type_slug(ty);
        let scalar = scalar_fn(f, quote!(pub fn scalar));
        let body = body_impl(v, Some(types), in_tuple, out_ty);
        quote! {
            #[doc(hidden)]
            pub mod #module {
                use super::*;
                pub type #generic = #ty;
                #scalar
                #body
            }
            impl Elem for #ty {
                type __UfuncBody = #module::__UfuncBody;
                #[inline]
                fn __ufunc_scalar(#(#params: #param_tys_self),*) -> #out_self {
                    #module::scalar(#(#params),*)
                }
            }
        }
    });
    quote! {
        #[doc = #types_doc]
        pub trait Elem: ::ufunc::__private::Element + ::ufunc::__private::Outputs {
            #[doc(hidden)]
            type __UfuncBody: ::ufunc::__private::Body<In = #in_self, Out = #out_self>;
            #[doc(hidden)]
            fn __ufunc_scalar(#(#params: #param_tys_self),*) -> #out_self;
        }

        /// The original scalar function, for any of the instantiated types.
        #[inline]
        pub fn scalar<#generic: Elem>(#(#params: #param_tys),*) -> #out_ty {
            <#generic as Elem>::__ufunc_scalar(#(#params),*)
        }

        #(#per_type)*
    }
}
