//! A property/fuzz harness for the shape layer, with adversarial numbers: zero, one, huge,
//! `usize::MAX`, negative and overflowing strides. Whatever the input, these functions return
//! (an `Ok` that agrees with a naive reference, or an `Err`); they never panic or overflow.
//!
//! CI runs a brief pass (`PROPTEST_CASES` unset: the counts below) plus the committed corpus of
//! hostile cases in `tests/fuzz/corpus.txt`; run longer while working here with
//! `PROPTEST_CASES=100000 cargo test --release --test fuzz`. Failures proptest finds are saved
//! under `tests/fuzz.proptest-regressions` and replayed first: commit them with the fix.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use ufunc::{broadcast_shapes, Error};
use ufunc_runtime::{broadcast_strides, element_count, plan_loop, CoreDim, Signature};

/// Lengths an attacker picks: small, powers of two that overflow when multiplied, the extremes.
fn hostile_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..4,
        1 => Just(1usize << 32),
        1 => Just(1usize << 62),
        1 => Just(isize::MAX as usize),
        1 => Just(usize::MAX),
        1 => any::<usize>(),
    ]
}

fn hostile_stride() -> impl Strategy<Value = isize> {
    prop_oneof![
        4 => -3isize..=3,
        1 => Just(isize::MIN),
        1 => Just(isize::MAX),
        1 => Just(1isize << 40),
        1 => any::<isize>(),
    ]
}

fn hostile_shape() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(hostile_len(), 0..6)
}

/// NumPy's rule, written out the slow way.
fn naive_broadcast(shapes: &[Vec<usize>]) -> Option<Vec<usize>> {
    let ndim = shapes.iter().map(Vec::len).max().unwrap_or(0);
    (0..ndim)
        .map(|k| {
            let lens: Vec<usize> = shapes
                .iter()
                .filter_map(|s| (k + s.len()).checked_sub(ndim).map(|i| s[i]))
                .filter(|&n| n != 1)
                .collect();
            match lens.first() {
                None => Some(1),
                Some(&n) => lens.iter().all(|&m| m == n).then_some(n),
            }
        })
        .collect()
}

fn check_broadcast(shapes: &[Vec<usize>]) {
    let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    match (broadcast_shapes(&refs), naive_broadcast(shapes)) {
        (Ok(got), Some(want)) => assert_eq!(got, want, "{shapes:?}"),
        (Err(Error::Broadcast { shapes: named }), None) => assert_eq!(&named, shapes),
        (got, want) => panic!("{shapes:?}: {got:?}, expected {want:?}"),
    }
}

fn check_strides(out: &[usize], shape: &[usize], strides: &[isize]) {
    let fits = shape.len() <= out.len()
        && shape
            .iter()
            .zip(&out[out.len() - shape.len()..])
            .all(|(&n, &o)| n == 1 || n == o);
    match broadcast_strides(out, shape, strides) {
        Ok(s) => {
            assert!(fits, "{out:?} {shape:?}");
            let lead = out.len() - shape.len();
            assert!(s[..lead].iter().all(|&x| x == 0));
            for (k, (&n, &st)) in shape.iter().zip(strides).enumerate() {
                assert_eq!(s[lead + k], if n == 1 { 0 } else { st });
            }
        }
        Err(e) => assert!(!fits && matches!(e, Error::Broadcast { .. }), "{e:?}"),
    }
}

fn check_count(shape: &[usize]) {
    let exact = match shape.contains(&0) {
        true => Some(0),
        false => shape
            .iter()
            .try_fold(1u128, |acc, &n| acc.checked_mul(n as u128)),
    };
    match (element_count(shape), exact) {
        (Ok(n), Some(e)) => assert_eq!(n as u128, e),
        (Err(Error::TooLarge { shape: named }), _) => {
            assert_eq!(named, shape);
            assert!(exact.is_none_or(|e| e > usize::MAX as u128));
        }
        (got, exact) => panic!("{shape:?}: {got:?} vs {exact:?}"),
    }
}

/// Every operand's element offsets, in the order the plan visits them.
fn plan_offsets(shape: &[usize], strides: &[Vec<isize>]) -> Vec<Vec<isize>> {
    let plan = plan_loop(shape, strides, strides.len().saturating_sub(1));
    let mut visits = Vec::new();
    let mut index = vec![0usize; plan.shape.len()];
    if plan.shape.contains(&0) {
        return visits;
    }
    loop {
        visits.push(
            (0..strides.len())
                .map(|op| {
                    plan.offsets[op]
                        + index
                            .iter()
                            .zip(&plan.strides[op])
                            .map(|(&i, &s)| i as isize * s)
                            .sum::<isize>()
                })
                .collect(),
        );
        let mut axis = plan.shape.len();
        loop {
            if axis == 0 {
                return visits;
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < plan.shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

/// The same offsets, walked naively in C order over the unplanned shape.
fn naive_offsets(shape: &[usize], strides: &[Vec<isize>]) -> Vec<Vec<isize>> {
    let total: usize = shape.iter().product();
    (0..total)
        .map(|flat| {
            let mut rest = flat;
            let mut index = vec![0usize; shape.len()];
            for axis in (0..shape.len()).rev() {
                index[axis] = rest % shape[axis];
                rest /= shape[axis];
            }
            strides
                .iter()
                .map(|s| index.iter().zip(s).map(|(&i, &st)| i as isize * st).sum())
                .collect()
        })
        .collect()
}

const M: CoreDim = CoreDim::Named {
    name: "m",
    optional: false,
};
const N: CoreDim = CoreDim::Named {
    name: "n",
    optional: false,
};
const N_OPT: CoreDim = CoreDim::Named {
    name: "n",
    optional: true,
};
const THREE: CoreDim = CoreDim::Fixed(3);

/// Layouts that cover named, optional, fixed and output-only dimensions.
fn signatures() -> Vec<Signature> {
    vec![
        Signature {
            text: "(m,n),(n)->(m)",
            inputs: &[&[M, N], &[N]],
            outputs: &[&[M]],
            names: &["a", "b", "c"],
            in_place: false,
        },
        Signature {
            text: "(m,n?),(n?)->(m,3)",
            inputs: &[&[M, N_OPT], &[N_OPT]],
            outputs: &[&[M, THREE]],
            names: &["a", "b", "c"],
            in_place: false,
        },
        Signature {
            text: "()->(m)",
            inputs: &[&[]],
            outputs: &[&[M]],
            names: &["a", "c"],
            in_place: false,
        },
    ]
}

/// A binding is consistent with its inputs: each output is the loop shape then its core.
fn check_bind(sig: &Signature, inputs: &[Vec<usize>], outputs: Option<&[Vec<usize>]>) {
    let ins: Vec<&[usize]> = inputs.iter().map(Vec::as_slice).collect();
    let outs: Option<Vec<&[usize]>> = outputs.map(|o| o.iter().map(Vec::as_slice).collect());
    let Ok(b) = sig.bind(&ins, outs.as_deref()) else {
        return;
    };
    assert_eq!(b.output_shapes.len(), sig.outputs.len());
    assert_eq!(b.core_shapes.len(), sig.inputs.len() + sig.outputs.len());
    for (o, shape) in b.output_shapes.iter().enumerate() {
        assert_eq!(&shape[..b.loop_shape.len()], b.loop_shape.as_slice());
        let k = sig.inputs.len() + o;
        let present: Vec<usize> = b.core_shapes[k]
            .iter()
            .zip(&b.core_axes[k])
            .filter(|(_, a)| a.is_some())
            .map(|(&n, _)| n)
            .collect();
        assert_eq!(&shape[b.loop_shape.len()..], present.as_slice());
        if let Some(outs) = outputs {
            assert_eq!(
                &outs[o][outs[o].len() - present.len()..],
                present.as_slice()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn broadcasting_agrees_with_numpys_rule(shapes in proptest::collection::vec(hostile_shape(), 0..5)) {
        check_broadcast(&shapes);
    }

    #[test]
    fn broadcast_strides_never_panic(
        out in hostile_shape(),
        shape in hostile_shape(),
        strides in proptest::collection::vec(hostile_stride(), 6),
    ) {
        check_strides(&out, &shape, &strides[..shape.len()]);
        // A shape that does broadcast, by construction.
        let tail = &out[out.len() - out.len().min(shape.len())..];
        let fitting: Vec<usize> = tail.iter().zip(&shape).map(|(&o, &n)| if n % 2 == 0 { o } else { 1 }).collect();
        check_strides(&out, &fitting, &strides[..fitting.len()]);
    }

    #[test]
    fn element_counts_are_exact_or_too_large(shape in hostile_shape()) {
        check_count(&shape);
    }

    #[test]
    fn plans_of_hostile_layouts_never_panic(
        shape in hostile_shape(),
        strides in proptest::collection::vec(proptest::collection::vec(hostile_stride(), 6), 1..4),
    ) {
        let strides: Vec<Vec<isize>> = strides.iter().map(|s| s[..shape.len()].to_vec()).collect();
        let plan = plan_loop(&shape, &strides, strides.len() - 1);
        let _ = (plan.len(), plan.is_empty());
    }

    #[test]
    fn plans_visit_every_element_once(
        shape in proptest::collection::vec(0usize..5, 0..5),
        strides in proptest::collection::vec(proptest::collection::vec(-7isize..=7, 5), 1..4),
    ) {
        let strides: Vec<Vec<isize>> = strides.iter().map(|s| s[..shape.len()].to_vec()).collect();
        let mut got = plan_offsets(&shape, &strides);
        let mut want = naive_offsets(&shape, &strides);
        got.sort();
        want.sort();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn gufunc_binding_never_panics(
        which in 0usize..3,
        inputs in proptest::collection::vec(hostile_shape(), 0..4),
        outputs in proptest::option::of(proptest::collection::vec(hostile_shape(), 0..3)),
    ) {
        check_bind(&signatures()[which], &inputs, outputs.as_deref());
    }
}

/// The committed corpus: one hostile case per line, `kind: a | b | ...` (shapes as
/// comma-separated lengths; `plan` lines give the shape then each operand's strides).
#[test]
fn corpus_cases_hold() {
    let corpus = include_str!("fuzz/corpus.txt");
    let parse = |s: &str| -> Vec<i128> {
        s.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| match t {
                "MAX" => usize::MAX as i128,
                "IMAX" => isize::MAX as i128,
                "IMIN" => isize::MIN as i128,
                _ => t
                    .parse()
                    .unwrap_or_else(|_| panic!("corpus: bad number `{t}`")),
            })
            .collect()
    };
    let lens = |s: &str| -> Vec<usize> { parse(s).into_iter().map(|n| n as usize).collect() };
    let mut cases = 0;
    for line in corpus.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (kind, rest) = line.split_once(':').expect("corpus line: `kind: ...`");
        let parts: Vec<&str> = rest.split('|').collect();
        match kind.trim() {
            "broadcast" => check_broadcast(&parts.iter().map(|p| lens(p)).collect::<Vec<_>>()),
            "strides" => {
                let strides: Vec<isize> = parse(parts[2]).into_iter().map(|n| n as isize).collect();
                check_strides(&lens(parts[0]), &lens(parts[1]), &strides);
            }
            "count" => check_count(&lens(parts[0])),
            "plan" => {
                let shape = lens(parts[0]);
                let strides: Vec<Vec<isize>> = parts[1..]
                    .iter()
                    .map(|p| parse(p).into_iter().map(|n| n as isize).collect())
                    .collect();
                let plan = plan_loop(&shape, &strides, strides.len() - 1);
                let _ = plan.len();
            }
            "bind" => {
                let which: usize = parts[0].trim().parse().expect("corpus: signature index");
                let inputs: Vec<Vec<usize>> = parts[1..].iter().map(|p| lens(p)).collect();
                check_bind(&signatures()[which], &inputs, None);
            }
            other => panic!("corpus: unknown kind `{other}`"),
        }
        cases += 1;
    }
    assert!(cases >= 10, "the corpus lost its cases");
}
