//! The record a launch's first panic leaves in its status word, and the message the host makes
//! of it: the runtime's own panics (division by zero, index out of bounds, ...) by their code,
//! and a body's `panic!`/`assert!` sites by the table the macro generates for the kernel, with
//! up to [`ARGS`] integer, float or bool arguments formatted here as Rust formats them.
//!
//! The record (see the prelude's `__ufunc_panic_first`): `i32` code, then the kind of each
//! argument (`i32` each, 0 for one not carried), then at byte 24 the arguments' bits (`u64`
//! each, little-endian).

use super::kernel::panic_message;

/// How many arguments of a panic message the device carries.
pub(crate) const ARGS: usize = 4;

/// The size in bytes of a launch's status word.
pub(crate) const STATUS_BYTES: usize = 24 + 8 * ARGS;

/// Codes of a body's own panic sites start here; smaller ones are the runtime's.
pub const SITE_CODE_BASE: i32 = 1000;

/// One `panic!`/`assert!`/`unreachable!` of a translated body, in the table the macro generates.
#[derive(Debug, Clone, Copy)]
pub struct PanicSite {
    /// The code the device stores for it (at least [`SITE_CODE_BASE`]).
    pub code: i32,
    /// The message: a format string whose placeholders are `{}`, `{:?}`, `{:.N}` or `{:.N?}`
    /// taking the carried arguments in order (if `formatted`), or the message itself.
    pub message: &'static str,
    /// Whether `message` is a format string.
    pub formatted: bool,
}

/// Codes of `#[kernel_fn]` helpers' panic sites start here: each helper has a block of 1024
/// codes chosen by a hash of its name, the same in every kernel that calls it (the macro's
/// `helper_site_base`).
pub const HELPER_SITE_CODE_BASE: i32 = 1 << 24;

/// The panic sites a kernel's code can raise: its own, and those of the helpers it calls
/// (each a table of the same kind, for the helpers they call in turn).
#[derive(Debug, Clone, Copy)]
pub struct PanicTable {
    /// The function's own sites.
    pub sites: &'static [PanicSite],
    /// The tables of the `#[kernel_fn]` helpers it calls.
    pub helpers: &'static [&'static PanicTable],
}

impl PanicTable {
    /// No panic sites (support kernels, and plain functions, which have no device code).
    pub const EMPTY: PanicTable = PanicTable {
        sites: &[],
        helpers: &[],
    };

    /// The site whose code is `code`, here or in a helper's table.
    fn find(&self, code: i32) -> Option<&'static PanicSite> {
        self.sites
            .iter()
            .find(|s| s.code == code)
            .or_else(|| self.helpers.iter().find_map(|h| h.find(code)))
    }
}

/// One carried argument.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    NotCarried,
    Int(i64),
    Uint(u64),
    F32(f32),
    F64(f64),
    Bool(bool),
}

/// The message of a status `record` whose code is not 0, with `sites` the kernel's table.
pub(crate) fn record_message(record: &[u8], sites: &PanicTable) -> String {
    let word = |i: usize| {
        record
            .get(4 * i..4 * i + 4)
            .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let code = word(0);
    let Some(site) = sites.find(code) else {
        return panic_message(code).to_string();
    };
    if !site.formatted {
        return site.message.to_string();
    }
    let values: Vec<Value> = (0..ARGS)
        .map(|i| {
            let bits = record
                .get(24 + 8 * i..32 + 8 * i)
                .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
            match word(1 + i) {
                1 => Value::Int(bits as i64),
                2 => Value::Uint(bits),
                3 => Value::F32(f32::from_bits(bits as u32)),
                4 => Value::F64(f64::from_bits(bits)),
                5 => Value::Bool(bits != 0),
                _ => Value::NotCarried,
            }
        })
        .collect();
    format_message(site.message, &values)
}

/// `template` with its placeholders replaced by `values` in order, as `format!` would write
/// them; a value not carried from the device is written as such.
fn format_message(template: &str, values: &[Value]) -> String {
    let mut out = String::new();
    let mut next = 0;
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let spec: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let value = values.get(next).copied().unwrap_or(Value::NotCarried);
                next += 1;
                out.push_str(&format_value(value, &spec));
            }
            c => out.push(c),
        }
    }
    out
}

/// One value as `{` `spec` `}` writes it: `spec` is empty, `:?`, `:.N` or `:.N?`.
fn format_value(value: Value, spec: &str) -> String {
    let spec = spec.trim_start_matches(':');
    let debug = spec.ends_with('?');
    let precision = spec
        .trim_end_matches('?')
        .strip_prefix('.')
        .and_then(|p| p.parse::<usize>().ok());
    macro_rules! fmt {
        ($v:expr) => {
            match (debug, precision) {
                (false, None) => format!("{}", $v),
                (true, None) => format!("{:?}", $v),
                (false, Some(p)) => format!("{:.*}", p, $v),
                (true, Some(p)) => format!("{:.*?}", p, $v),
            }
        };
    }
    match value {
        Value::NotCarried => "<value not carried from the device>".into(),
        Value::Int(v) => fmt!(v),
        Value::Uint(v) => fmt!(v),
        Value::F32(v) => fmt!(v),
        Value::F64(v) => fmt!(v),
        Value::Bool(v) => fmt!(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(code: i32, args: &[(i32, u64)]) -> Vec<u8> {
        let mut r = vec![0u8; STATUS_BYTES];
        r[..4].copy_from_slice(&code.to_ne_bytes());
        for (i, (kind, bits)) in args.iter().enumerate() {
            r[4 + 4 * i..8 + 4 * i].copy_from_slice(&kind.to_ne_bytes());
            r[24 + 8 * i..32 + 8 * i].copy_from_slice(&bits.to_le_bytes());
        }
        r
    }

    const SITES: &[PanicSite] = &[
        PanicSite {
            code: 1000,
            message: "bad {} at {:?} ({:.2}) {{ok}} {} {}",
            formatted: true,
        },
        PanicSite {
            code: 1001,
            message: "assertion failed: x > {0}",
            formatted: false,
        },
    ];

    /// A helper's table, with a helper of its own.
    const NESTED: PanicTable = PanicTable {
        sites: &[PanicSite {
            code: HELPER_SITE_CODE_BASE + 2048,
            message: "nested {}",
            formatted: true,
        }],
        helpers: &[],
    };
    const HELPER: PanicTable = PanicTable {
        sites: &[PanicSite {
            code: HELPER_SITE_CODE_BASE + 1024,
            message: "from the helper",
            formatted: false,
        }],
        helpers: &[&NESTED],
    };
    const TABLE: PanicTable = PanicTable {
        sites: SITES,
        helpers: &[&HELPER],
    };

    #[test]
    fn helpers_sites_are_found_through_the_calls() {
        assert_eq!(
            record_message(&record(HELPER_SITE_CODE_BASE + 1024, &[]), &TABLE),
            "from the helper"
        );
        assert_eq!(
            record_message(&record(HELPER_SITE_CODE_BASE + 2048, &[(1, 7)]), &TABLE),
            "nested 7"
        );
        assert_eq!(
            record_message(&record(HELPER_SITE_CODE_BASE + 3072, &[]), &TABLE),
            "a kernel raised an unknown panic code"
        );
    }

    #[test]
    fn arguments_are_formatted_as_rust_formats_them() {
        let r = record(
            1000,
            &[
                (3, 1.5f32.to_bits() as u64),
                (1, (-3i64) as u64),
                (4, 2.0f64.to_bits()),
                (5, 1),
            ],
        );
        assert_eq!(
            record_message(&r, &TABLE),
            format!(
                "bad {} at {:?} ({:.2}) {{ok}} {} <value not carried from the device>",
                1.5f32, -3i64, 2.0f64, true
            )
        );
        assert_eq!(format_value(Value::F64(1.0), ":?"), "1.0");
        assert_eq!(format_value(Value::F32(0.1), ":.3?"), "0.100");
        assert_eq!(
            format_value(Value::Uint(u64::MAX), ""),
            u64::MAX.to_string()
        );
    }

    #[test]
    fn unformatted_sites_and_runtime_codes() {
        assert_eq!(
            record_message(&record(1001, &[]), &TABLE),
            "assertion failed: x > {0}"
        );
        assert_eq!(
            record_message(&record(1, &[]), &TABLE),
            "attempt to divide by zero"
        );
    }
}
