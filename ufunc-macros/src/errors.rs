//! The error context every pass records into, as serde_derive's `Ctxt`: attribute parsing, the
//! model's checks and the CUDA translation all go on after a mistake and record it here, so the
//! user sees every mistake of one function in one compile. [`Errors::check`] hands back the
//! combined error (or `Ok`) and consumes the context; dropping a context that was never checked
//! is a bug in the macro, and panics, so no pass can lose what another recorded.

use std::cell::RefCell;
use std::fmt::Display;

/// Spanned errors recorded by the passes of one macro invocation. Recording takes `&self`, so
/// one context is shared by every pass, including the ones that hold other borrows of it.
pub(crate) struct Errors {
    /// `None` once checked.
    recorded: RefCell<Option<Vec<syn::Error>>>,
}

impl Errors {
    pub(crate) fn new() -> Self {
        Errors {
            recorded: RefCell::new(Some(Vec::new())),
        }
    }

    /// Records `error` (which may itself combine several).
    pub(crate) fn push(&self, error: syn::Error) {
        self.recorded
            .borrow_mut()
            .as_mut()
            .expect("an error recorded after the context was checked")
            .push(error);
    }

    /// Records `message` at the span of `tokens`.
    pub(crate) fn spanned(&self, tokens: impl quote::ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records `message` at `span`.
    pub(crate) fn at(&self, span: proc_macro2::Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records the error of `result`, if it has one, and returns its value.
    pub(crate) fn record<T>(&self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    /// The end of the passes: every recorded error combined in the order recorded, or `Ok`.
    pub(crate) fn check(self) -> syn::Result<()> {
        let recorded = self
            .recorded
            .borrow_mut()
            .take()
            .expect("the context is checked once");
        let mut errors = recorded.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            combined.combine(e);
        }
        Err(combined)
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.recorded.borrow().is_some() {
            panic!("an error context was dropped without `check()`: its errors would be lost");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::Span;

    #[test]
    fn every_recorded_error_comes_back_in_order() {
        let errors = Errors::new();
        errors.at(Span::call_site(), "first");
        errors.spanned(quote::quote!(x), "second");
        assert_eq!(
            errors.record::<()>(Err(syn::Error::new(Span::call_site(), "third"))),
            None
        );
        assert_eq!(errors.record(Ok(7)), Some(7));
        let messages: Vec<String> = errors
            .check()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(messages, ["first", "second", "third"]);
    }

    #[test]
    fn a_clean_context_checks_ok() {
        assert!(Errors::new().check().is_ok());
    }

    #[test]
    #[should_panic(expected = "without `check()`")]
    fn dropping_an_unchecked_context_is_a_bug() {
        let errors = Errors::new();
        errors.at(Span::call_site(), "lost");
    }
}
