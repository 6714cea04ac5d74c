//! Compile-fail tests: every diagnostic of `#[vectorize]`, `#[guvectorize]` and `#[kernel_fn]`,
//! one per file in `tests/ui/`, with the expected compiler output in the `.stderr` file beside it.
//! Regenerate with `TRYBUILD=overwrite cargo test --test compile_fail` and review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}

/// Code that must build with warnings denied: generated code raises no lint on the user's
/// spans.
#[test]
fn ui_pass() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui-pass/*.rs");
}
