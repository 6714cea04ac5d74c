//! Collects spanned errors so the user sees every mistake at once.

use std::fmt::Display;

#[derive(Default)]
pub(crate) struct Errors {
    combined: Option<syn::Error>,
}

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.combined {
            Some(e) => e.combine(error),
            None => self.combined = Some(error),
        }
    }

    pub(crate) fn spanned(&mut self, tokens: impl quote::ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        match self.combined {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
