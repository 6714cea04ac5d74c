//! The kernel of a `#[guvectorize]` core: `{name}_gufunc`, one thread per loop item
//! (grid-stride), each building its operands' views from the loop and core strides and calling
//! the core's device function; with `mapped_axes > 0`, one thread per loop item and index of
//! the output view's leading axes, passed to the core (whose mapped loops then run once).

use super::{
    grid_stride_head, grid_stride_offsets, offsets_of, GuOperand, STATUS_ENTRY, STATUS_PARAM,
};

/// `<name>_gufunc` calling `core_fn` with the operands `call_order` lists.
pub(super) fn emit(
    name: &str,
    core_fn: &str,
    operands: &[GuOperand],
    call_order: &[usize],
    mapped_axes: usize,
) -> String {
    let nops = operands.len();
    let mut params = Vec::new();
    let mut setup = String::new();
    let mut core_base = 0usize;
    let mut mapped_base = 0usize;
    let mut returns = Vec::new();
    for (k, op) in operands.iter().enumerate() {
        match *op {
            GuOperand::View {
                elem: t,
                rank,
                mutable,
            } => {
                if mutable {
                    mapped_base = core_base;
                }
                let c = if mutable { "" } else { "const " };
                params.push(format!("{c}{t}* __restrict__ p{k}"));
                setup.push_str(&format!(
                    "        __ufunc_view<{c}{t}, {rank}> a{k};\n        a{k}.ptr = p{k} + off[{k}];\n"
                ));
                for d in 0..rank {
                    let j = core_base + d;
                    setup.push_str(&format!(
                        "        a{k}.shape[{d}] = core_shapes[{j}];\n        a{k}.strides[{d}] = core_strides[{j}];\n"
                    ));
                }
                core_base += rank;
            }
            GuOperand::ScalarIn(t) => {
                params.push(format!("const {t}* __restrict__ p{k}"));
                setup.push_str(&format!("        {t} a{k} = p{k}[off[{k}]];\n"));
            }
            GuOperand::ScalarOut(t) => {
                params.push(format!("{t}* __restrict__ p{k}"));
                setup.push_str(&format!("        {t}* a{k} = p{k} + off[{k}];\n"));
            }
            GuOperand::Return(t) => {
                params.push(format!("{t}* __restrict__ p{k}"));
                returns.push(k);
            }
        }
    }
    let mut args = call_order
        .iter()
        .map(|k| format!("a{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    if mapped_axes > 0 {
        args.push_str(", mapped, mapped_len");
    }
    let call = match returns.as_slice() {
        [] => format!("        {core_fn}({args});\n"),
        [k] => format!("        p{k}[off[{k}]] = {core_fn}({args});\n"),
        ks => {
            let mut c = format!("        auto r = {core_fn}({args});\n");
            for (i, k) in ks.iter().enumerate() {
                c.push_str(&format!("        p{k}[off[{k}]] = r.f{i};\n"));
            }
            c
        }
    };
    params.push(STATUS_PARAM.to_string());
    let params = params.join(", ");
    let item_loop = if mapped_axes == 0 {
        grid_stride_offsets("item", nops, "loop_ndim", "loop_shape", "loop_strides")
    } else {
        // Thread `t` is loop item `t / inner` and output index `t % inner` (C order); an empty
        // axis still gets one thread, which runs what the serial loop would past its end.
        format!(
            r#"    const long long* out_core = core_shapes + {mapped_base};
    long long inner = 1;
    for (int k = 0; k < {mapped_axes}; ++k) inner *= out_core[k] > 0 ? out_core[k] : 1;
    const long long threads = n * inner;
{head}
        long long item = t / inner;
        long long mapped[{mapped_axes}], mapped_len[{mapped_axes}];
        for (long long k = {mapped_axes} - 1, m = t % inner; k >= 0; --k) {{
            const long long extent = out_core[k] > 0 ? out_core[k] : 1;
            mapped_len[k] = out_core[k];
            mapped[k] = m % extent;
            m /= extent;
        }}
{offsets}"#,
            head = grid_stride_head("t", "threads"),
            offsets = offsets_of("item", nops, "loop_ndim", "loop_shape", "loop_strides")
        )
    };
    format!(
        r#"extern "C" __global__ void {name}_gufunc(long long n, int loop_ndim,
        const long long* __restrict__ loop_shape, const long long* __restrict__ loop_strides,
        const long long* __restrict__ core_shapes, const long long* __restrict__ core_strides,
        {params}) {{
{STATUS_ENTRY}
{item_loop}
{setup}{call}    }}
}}
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_scalars_and_returns() {
        let ops = [
            GuOperand::View {
                elem: "f64",
                rank: 1,
                mutable: false,
            },
            GuOperand::ScalarOut("f64"),
            GuOperand::Return("f64"),
        ];
        let src = emit("dot", "core", &ops, &[0, 1], 0);
        assert!(src.contains("__ufunc_view<const f64, 1> a0;"), "{src}");
        assert!(src.contains("a0.shape[0] = core_shapes[0];"), "{src}");
        assert!(src.contains("f64* a1 = p1 + off[1];"), "{src}");
        assert!(src.contains("p2[off[2]] = core(a0, a1);"), "{src}");
    }

    #[test]
    fn mapped_kernels_pass_the_thread_index() {
        let ops = [
            GuOperand::View {
                elem: "f32",
                rank: 2,
                mutable: false,
            },
            GuOperand::View {
                elem: "f32",
                rank: 2,
                mutable: true,
            },
        ];
        let src = emit("mm", "core", &ops, &[0, 1], 2);
        assert!(
            src.contains("const long long* out_core = core_shapes + 2;"),
            "{src}"
        );
        assert!(src.contains("core(a0, a1, mapped, mapped_len);"), "{src}");
    }
}
