//! The element-wise kernels of a `#[vectorize]` body: `{name}_contig` over contiguous operands
//! and `{name}_strided` over any (planned) shape and strides, both grid-stride loops with
//! 64-bit indexing.

use super::{grid_stride_offsets, STATUS_ENTRY, STATUS_PARAM};

/// The two kernels calling `device_fn` with one element of each input and storing its result
/// (`r`, or `r.f0`.. for several outputs).
pub(super) fn emit(name: &str, device_fn: &str, inputs: &[&str], outputs: &[&str]) -> String {
    let in_params = inputs
        .iter()
        .enumerate()
        .map(|(k, t)| format!("const {t}* __restrict__ in{k}"));
    let out_params = outputs
        .iter()
        .enumerate()
        .map(|(k, t)| format!("{t}* __restrict__ out{k}"));
    let params = in_params
        .chain(out_params)
        .chain(std::iter::once(STATUS_PARAM.to_string()))
        .collect::<Vec<_>>()
        .join(", ");
    let nops = inputs.len() + outputs.len();
    let args = |index: &dyn Fn(usize) -> String| -> String {
        (0..inputs.len())
            .map(|k| format!("in{k}[{}]", index(k)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let stores = |index: &dyn Fn(usize) -> String| -> String {
        if outputs.len() == 1 {
            format!("out0[{}] = r;", index(inputs.len()))
        } else {
            (0..outputs.len())
                .map(|k| format!("out{k}[{}] = r.f{k};", index(inputs.len() + k)))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    let contig_args = args(&|_| "i".into());
    let contig_stores = stores(&|_| "i".into());
    let strided_args = args(&|k| format!("off[{k}]"));
    let strided_stores = stores(&|k| format!("off[{k}]"));
    let strided_loop = grid_stride_offsets("i", nops, "ndim", "shape", "strides");
    format!(
        r#"extern "C" __global__ void {name}_contig(long long n, {params}) {{
{STATUS_ENTRY}
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {{
        auto r = {device_fn}({contig_args});
        {contig_stores}
    }}
}}
extern "C" __global__ void {name}_strided(long long n, int ndim, const long long* __restrict__ shape,
                                          const long long* __restrict__ strides, {params}) {{
{STATUS_ENTRY}
{strided_loop}
        auto r = {device_fn}({strided_args});
        {strided_stores}
    }}
}}
"#
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn several_outputs_store_tuple_fields() {
        let src = super::emit("k", "body", &["f32", "f32"], &["f32", "bool"]);
        assert!(
            src.contains(&format!(
                "const f32* __restrict__ in1, f32* __restrict__ out0, bool* __restrict__ out1, {})",
                super::STATUS_PARAM
            )),
            "{src}"
        );
        assert!(src.contains("out0[i] = r.f0; out1[i] = r.f1;"), "{src}");
        assert!(
            src.contains("auto r = body(in0[off[0]], in1[off[1]]);"),
            "{src}"
        );
        assert!(
            src.contains("out0[off[2]] = r.f0; out1[off[3]] = r.f1;"),
            "{src}"
        );
        assert!(src.contains("long long off[4] = {0};"), "{src}");
    }
}
