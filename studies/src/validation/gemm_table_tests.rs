//! GEMM tables: reading (every problem refused with its line) and the
//! committed tables' errors against the tile model.

use super::*;

const XLA: &str = include_str!("../../../validation/kernels/xla-h100-matmul.csv");
const LAB: &str = include_str!("../../../validation/kernels/lab-h100-gemm.csv");

fn predicted(text: &str) -> Vec<DtypeSummary> {
    let mut table = read(text).unwrap();
    predict(&mut table);
    summaries(&table.rows)
}

fn summary<'a>(summaries: &'a [DtypeSummary], dtype: &str) -> &'a DtypeSummary {
    summaries.iter().find(|s| s.dtype == dtype).unwrap()
}

#[test]
fn the_lab_grid_is_within_four_percent() {
    let summaries = predicted(LAB);
    let (mut rows, mut total) = (0, 0.0);
    for dtype in ["bf16", "fp16"] {
        let s = summary(&summaries, dtype);
        assert_eq!(s.rows, s.predicted);
        rows += s.predicted;
        total += s.mean_abs_error_percent.unwrap() * s.predicted as f64;
    }
    assert_eq!(rows, 194);
    // All 194 rows, the power-limited 16384^3 ones (priced here at the
    // burst rate) included: 3.5 %; the 182 fitted rows alone 2.87 %.
    let mean = total / rows as f64;
    assert!(mean < 4.0, "mean |error| {mean:.2}%");
}

#[test]
fn xla_h100_bf16_as_kernel_durations() {
    let summaries = predicted(XLA);
    let bf16 = summary(&summaries, "bf16xbf16->bf16");
    assert_eq!((bf16.rows, bf16.predicted), (375, 375));
    // Measured 10.65 %, mean -8.1 % (the model faster): XLA's kernels run
    // about 1 µs longer than the lab's cuBLAS on small shapes and ~8 %
    // slower at mid sizes. Issue 30's target is 6 %: not met.
    let mean_abs = bf16.mean_abs_error_percent.unwrap();
    assert!(mean_abs < 11.0, "mean |error| {mean_abs:.2}%");
    let f32 = summary(&summaries, "f32xf32->f32");
    assert_eq!((f32.rows, f32.predicted), (375, 0));
    // 19 FP8 rows claim more than 1.1 x the H100's dense FP8 peak (29 claim
    // more than the peak itself).
    let fp8 = summary(&summaries, "f8e4m3fnxf8e4m3fn->bf16");
    assert_eq!(fp8.predicted, 375 - 19);
}

#[test]
fn a_table_is_recognised_by_its_header_after_comments() {
    assert!(looks_like_gemm_table(XLA));
    assert!(looks_like_gemm_table("\n# x\nb,m,n,k,dtype,flops_per_s\n"));
    assert!(!looks_like_gemm_table("# gpus,global_batch\n1,2\n"));
    assert!(!looks_like_gemm_table("{\"cases\": []}"));
}

#[test]
fn bad_tables_are_refused_with_their_line() {
    let head =
        "# clustersim-gpu: h100-sxm\n# clustersim-timing: kernel\nb,m,n,k,dtype,flops_per_s\n";
    let error = |text: &str| read(text).unwrap_err();
    assert!(error(&format!("{head}1,2,3,0,bf16,1e12\n")).contains("line 4: k must be"));
    assert!(error(&format!("{head}1,2,3,4,bf16,NaN\n")).contains("line 4: flops_per_s"));
    assert!(error(&format!("{head}1,2,3,4,bf16\n")).contains("expected 6 fields"));
    assert!(error(&format!("{head}1,99999999999,3,4,bf16,1e12\n")).contains("m must be"));
    assert!(error(head).contains("no rows"));
    assert!(error("b,m,n,k,dtype,flops_per_s\n1,2,3,4,bf16,1e12\n").contains("clustersim-gpu"));
    let unknown = "# clustersim-gpu: tpu\n# clustersim-timing: kernel\nb,m,n,k,dtype,flops_per_s\n1,2,3,4,bf16,1e12\n";
    assert!(error(unknown).contains("unknown GPU"));
    let timing =
        "# clustersim-gpu: h100-sxm\n# clustersim-timing: soon\nb,m,n,k,dtype,flops_per_s\n";
    assert!(error(timing).contains("line 2: clustersim-timing"));
}

#[test]
fn tables_price_fp8_and_bf16_gemms_at_the_burst_rate() {
    // The H100 profile's FP8 GEMMs have their own sustained ratio (0.795):
    // a table of short runs must not take it.
    let table = read(XLA).unwrap();
    let model = table.profile.gemm.tile_model.as_ref().unwrap();
    assert_eq!(model.sustained_ratio.value, 1.0);
    assert_eq!(model.fp8_sustained_ratio(), 1.0);
}
