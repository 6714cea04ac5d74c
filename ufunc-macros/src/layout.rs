//! The layout signature of `#[guvectorize]`, NumPy's grammar in full:
//! `(m,n),(n,p)->(m,p)`, scalars `()`, fixed sizes `(3)`, optional dimensions `n?` (NEP 20),
//! several inputs and outputs, and output-only dimensions; and Numba's in-place layouts without
//! `->` (`(n),()`), whose operands are all passed in and some written through `ArrayViewMut` or
//! `&mut`. Errors carry the column.

/// One core dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dim {
    Named { name: String, optional: bool },
    Fixed(usize),
}

/// A parsed layout: the core dimensions of each input and each output. An in-place layout
/// lists every operand under `inputs` and has no `outputs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    pub inputs: Vec<Vec<Dim>>,
    pub outputs: Vec<Vec<Dim>>,
    /// Written without `->`.
    pub in_place: bool,
}

/// A syntax or consistency error, at a 1-based column of the layout string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LayoutError {
    pub column: usize,
    pub message: String,
}

struct Parser<'s> {
    text: &'s [u8],
    pos: usize,
}

impl Parser<'_> {
    fn error<T>(&self, message: impl Into<String>) -> Result<T, LayoutError> {
        Err(LayoutError {
            column: self.pos + 1,
            message: message.into(),
        })
    }

    /// The character at the current position (whole, even where it is not ASCII).
    fn current(&self) -> char {
        std::str::from_utf8(&self.text[self.pos..])
            .ok()
            .and_then(|rest| rest.chars().next())
            .unwrap_or(char::REPLACEMENT_CHARACTER)
    }

    fn skip_spaces(&mut self) {
        while self.pos < self.text.len() && self.text[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_spaces();
        self.text.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8, what: &str) -> Result<(), LayoutError> {
        match self.peek() {
            Some(x) if x == c => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => self.error(format!("expected {what}, found `{}`", self.current())),
            None => self.error(format!("expected {what}, found the end")),
        }
    }

    /// `(dim, dim, ...)`
    fn core(&mut self) -> Result<Vec<Dim>, LayoutError> {
        self.expect(b'(', "`(`")?;
        let mut dims = Vec::new();
        if self.peek() == Some(b')') {
            self.pos += 1;
            return Ok(dims);
        }
        loop {
            dims.push(self.dim()?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b')') => {
                    self.pos += 1;
                    return Ok(dims);
                }
                Some(_) => {
                    return self.error(format!("expected `,` or `)`, found `{}`", self.current()))
                }
                None => return self.error("expected `)`, found the end"),
            }
        }
    }

    fn dim(&mut self) -> Result<Dim, LayoutError> {
        let start = self.pos;
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                let begin = self.pos;
                while self.pos < self.text.len() && self.text[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                let digits = std::str::from_utf8(&self.text[begin..self.pos]).unwrap();
                match digits.parse() {
                    Ok(n) => Ok(Dim::Fixed(n)),
                    Err(_) => {
                        self.pos = begin;
                        self.error(format!("fixed size `{digits}` is too large"))
                    }
                }
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let begin = self.pos;
                while self.pos < self.text.len()
                    && (self.text[self.pos].is_ascii_alphanumeric() || self.text[self.pos] == b'_')
                {
                    self.pos += 1;
                }
                let name = std::str::from_utf8(&self.text[begin..self.pos])
                    .unwrap()
                    .to_string();
                let optional = self.peek() == Some(b'?');
                if optional {
                    self.pos += 1;
                }
                Ok(Dim::Named { name, optional })
            }
            Some(_) => {
                self.pos = start;
                self.skip_spaces();
                self.error(format!(
                    "expected a dimension name or a fixed size, found `{}`",
                    self.current()
                ))
            }
            None => self.error("expected a dimension, found the end"),
        }
    }

    /// `(..),(..)` up to `->` or the end.
    fn list(&mut self) -> Result<Vec<Vec<Dim>>, LayoutError> {
        let mut list = vec![self.core()?];
        while self.peek() == Some(b',') {
            self.pos += 1;
            list.push(self.core()?);
        }
        Ok(list)
    }
}

/// Parses and checks a layout string.
pub(crate) fn parse_layout(text: &str) -> Result<Layout, LayoutError> {
    let mut p = Parser {
        text: text.as_bytes(),
        pos: 0,
    };
    let inputs = p.list()?;
    p.skip_spaces();
    if !text[p.pos..].starts_with("->") {
        return match p.peek() {
            Some(_) => p.error(format!("expected `,` or `->`, found `{}`", p.current())),
            None => {
                check_optional_consistency(text)?;
                Ok(Layout {
                    inputs,
                    outputs: Vec::new(),
                    in_place: true,
                })
            }
        };
    }
    p.pos += 2;
    let outputs = p.list()?;
    if p.peek().is_some() {
        return p.error(format!("unexpected `{}` after the outputs", p.current()));
    }
    check_optional_consistency(text)?;
    Ok(Layout {
        inputs,
        outputs,
        in_place: false,
    })
}

/// A name is optional everywhere or nowhere; the error points at the first occurrence that
/// disagrees with the earlier ones.
fn check_optional_consistency(text: &str) -> Result<(), LayoutError> {
    let bytes = text.as_bytes();
    let mut seen: Vec<(&str, bool)> = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        if !(bytes[pos].is_ascii_alphabetic() || bytes[pos] == b'_') {
            pos += 1;
            continue;
        }
        let start = pos;
        while pos < bytes.len() && (bytes[pos].is_ascii_alphanumeric() || bytes[pos] == b'_') {
            pos += 1;
        }
        let name = &text[start..pos];
        let optional = text[pos..].trim_start().starts_with('?');
        match seen.iter().find(|(n, _)| *n == name) {
            Some((_, o)) if *o != optional => {
                return Err(LayoutError {
                    column: start + 1,
                    message: format!(
                        "dimension `{name}` is optional (`{name}?`) in one place and required \
                         in another"
                    ),
                })
            }
            Some(_) => {}
            None => seen.push((name, optional)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(n: &str) -> Dim {
        Dim::Named {
            name: n.into(),
            optional: false,
        }
    }

    fn err(text: &str) -> (usize, String) {
        let e = parse_layout(text).unwrap_err();
        (e.column, e.message)
    }

    #[test]
    fn matmul_and_friends() {
        let l = parse_layout("(m,n),(n,p)->(m,p)").unwrap();
        assert_eq!(
            l.inputs,
            vec![vec![named("m"), named("n")], vec![named("n"), named("p")]]
        );
        assert_eq!(l.outputs, vec![vec![named("m"), named("p")]]);
        let l = parse_layout(" ( ) , () -> ( ) ").unwrap();
        assert_eq!(l.inputs, vec![vec![], vec![]]);
        assert_eq!(l.outputs, vec![vec![]]);
        let l = parse_layout("(3),(n,3)->(n),()").unwrap();
        assert_eq!(l.inputs[0], vec![Dim::Fixed(3)]);
        assert_eq!(l.outputs.len(), 2);
        let l = parse_layout("(m?,n),(n,p?)->(m?,p?)").unwrap();
        assert_eq!(
            l.inputs[0][0],
            Dim::Named {
                name: "m".into(),
                optional: true
            }
        );
        let l = parse_layout("(n)->(n,k)").unwrap();
        assert_eq!(l.outputs[0][1], named("k"));
    }

    #[test]
    fn every_error_has_its_column() {
        let l = parse_layout("(m,n), ()").unwrap();
        assert!(l.in_place && l.outputs.is_empty() && l.inputs.len() == 2);
        assert_eq!(
            err("(m,n)(n)->()"),
            (6, "expected `,` or `->`, found `(`".into())
        );
        assert_eq!(err("m,n->()"), (1, "expected `(`, found `m`".into()));
        assert_eq!(
            err("(m,,n)->()"),
            (
                4,
                "expected a dimension name or a fixed size, found `,`".into()
            )
        );
        assert_eq!(
            err("(m n)->()"),
            (4, "expected `,` or `)`, found `n`".into())
        );
        assert_eq!(err("(m)->(m"), (8, "expected `)`, found the end".into()));
        assert_eq!(
            err("(m)->(m))"),
            (9, "unexpected `)` after the outputs".into())
        );
        assert_eq!(err("(m)->"), (6, "expected `(`, found the end".into()));
        assert_eq!(
            err("(99999999999999999999999)->()"),
            (
                2,
                "fixed size `99999999999999999999999` is too large".into()
            )
        );
        assert_eq!(
            err("(-1)->()"),
            (
                2,
                "expected a dimension name or a fixed size, found `-`".into()
            )
        );
        assert_eq!(
            err("(m?),(m)->()"),
            (
                7,
                "dimension `m` is optional (`m?`) in one place and required in another".into()
            )
        );
    }

    fn render(cores: &[Vec<Dim>]) -> String {
        let core = |dims: &Vec<Dim>| {
            let parts: Vec<String> = dims
                .iter()
                .map(|d| match d {
                    Dim::Named { name, optional } => {
                        format!("{name}{}", if *optional { "?" } else { "" })
                    }
                    Dim::Fixed(n) => n.to_string(),
                })
                .collect();
            format!("({})", parts.join(", "))
        };
        cores.iter().map(core).collect::<Vec<_>>().join(",")
    }

    fn dim() -> impl proptest::strategy::Strategy<Value = Dim> {
        use proptest::prelude::*;
        prop_oneof![
            "[a-z_][a-z0-9_]{0,3}".prop_map(|name| Dim::Named {
                name,
                optional: false
            }),
            any::<usize>().prop_map(Dim::Fixed),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3000),
            failure_persistence: None,
            ..Default::default()
        })]

        /// Hostile text: any string, and strings made of the grammar's own characters.
        #[test]
        fn any_text_parses_or_names_a_column(
            text in proptest::prop_oneof![".{0,40}", "[(),\\->?mn0-9 é]{0,40}"]
        ) {
            if let Err(e) = parse_layout(&text) {
                proptest::prop_assert!(e.column >= 1 && e.column <= text.len() + 1, "{e:?}");
                proptest::prop_assert!(!e.message.is_empty());
            }
        }

        #[test]
        fn written_layouts_parse_back(
            inputs in proptest::collection::vec(proptest::collection::vec(dim(), 0..4), 1..4),
            outputs in proptest::collection::vec(proptest::collection::vec(dim(), 0..4), 1..3),
        ) {
            let text = format!("{}->{}", render(&inputs), render(&outputs));
            let layout = parse_layout(&text).unwrap();
            proptest::prop_assert_eq!(layout, Layout { inputs, outputs, in_place: false });
        }
    }

    #[test]
    fn non_ascii_is_named_whole() {
        assert_eq!(
            err("(m,é)->()"),
            (
                4,
                "expected a dimension name or a fixed size, found `é`".into()
            )
        );
        assert_eq!(
            err("(m)→(m)"),
            (4, "expected `,` or `->`, found `→`".into())
        );
    }
}
