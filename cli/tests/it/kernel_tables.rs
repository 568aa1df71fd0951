//! `clustersim validate` on GEMM tables (validation/kernels/*.csv) and
//! `simulate --explain`'s GEMM section: the tile model as a user meets it.

use crate::common;
use common::{clustersim, repository_root, text};

fn table(name: &str) -> String {
    repository_root()
        .join("validation/kernels")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn the_committed_tables_validate_with_an_error_per_data_type() {
    let lab = clustersim(&["validate", &table("lab-h100-gemm.csv")]);
    assert_eq!(lab.status.code(), Some(0), "{}", text(&lab.stderr));
    let out = text(&lab.stdout);
    assert!(out.contains("194 rows on H100-SXM5-80GB"), "{out}");
    assert!(out.contains("1628 ns launch gap added"), "{out}");
    let xla = clustersim(&["validate", &table("xla-h100-matmul.csv"), "--json"]);
    assert_eq!(xla.status.code(), Some(0), "{}", text(&xla.stderr));
    let json: serde_json::Value = serde_json::from_str(&text(&xla.stdout)).unwrap();
    assert_eq!(json["timing"], "kernel");
    let dtypes = json["groups"].as_array().unwrap();
    let bf16 = dtypes
        .iter()
        .find(|d| d["dtype"] == "bf16xbf16->bf16")
        .unwrap();
    assert_eq!(bf16["predicted"], 375);
    let f32 = dtypes
        .iter()
        .find(|d| d["dtype"] == "f32xf32->f32")
        .unwrap();
    assert_eq!(f32["predicted"], 0);
    assert_eq!(json["rows"].as_array().unwrap().len(), 1875);
}

#[test]
fn a_bad_table_is_exit_2_with_its_line() {
    let dir = std::env::temp_dir().join(format!("clustersim-gemm-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.csv");
    std::fs::write(
        &path,
        "# clustersim-gpu: h100-sxm\n# clustersim-timing: kernel\nb,m,n,k,dtype,flops_per_s\n1,1024,1024,0,bf16,1e12\n",
    )
    .unwrap();
    let output = clustersim(&["validate", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("line 4: k must be an integer"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn explain_lists_each_gemm_by_tile_and_waves() {
    let output = clustersim(&["simulate", "--explain"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let out = text(&output.stdout);
    assert!(out.contains("GEMMs by tiles and waves on 108 SMs"), "{out}");
    let row = out
        .lines()
        .find(|line| {
            line.trim_start().starts_with("forward")
                && line.contains("qkv_gemm")
                && line.contains(" x ")
        })
        .unwrap_or_else(|| panic!("no qkv_gemm row:\n{out}"));
    assert!(row.contains("1 x 2048 x 4608 x 12288"), "{row}");
    assert!(row.ends_with("model"), "{row}");
}

#[test]
fn tile_model_constants_outside_physical_ranges_are_named() {
    let dir = std::env::temp_dir().join(format!("clustersim-tile-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base =
        std::fs::read_to_string(repository_root().join("profile/profiles/a100-80gb.json")).unwrap();
    for (key, value, needle) in [
        (
            "overlap_exponent",
            0.5,
            "gemm.tile_model.overlap_exponent must be from 1 to 64, got 5e-1",
        ),
        (
            "sustained_ratio",
            1.5,
            "gemm.tile_model.sustained_ratio must be in [0.001, 1], got 1.5e0",
        ),
        (
            "wave_latency_ns",
            -1.0,
            "gemm.tile_model.wave_latency_ns must be from 0 to 1e9 ns (1 s), got -1e0",
        ),
    ] {
        let mut profile: serde_json::Value = serde_json::from_str(&base).unwrap();
        profile["gemm"]["tile_model"][key]["value"] = value.into();
        let path = dir.join(format!("{key}.json"));
        std::fs::write(&path, profile.to_string()).unwrap();
        let output = clustersim(&[
            "simulate",
            "--profile",
            path.to_str().unwrap(),
            "--model",
            "tiny",
            "--topology",
            "dgx-a100",
            "--tp",
            "1",
            "--pp",
            "1",
            "--dp",
            "1",
            "--global-batch",
            "1",
        ]);
        assert_eq!(output.status.code(), Some(2), "{key}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(needle), "{stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_flashattention_appendix_table_validates_megatrons_rows() {
    let out = clustersim(&["validate", &table("flashattention-a100-attention.csv")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("85 rows on A100-SXM4-40GB (profile a100-40gb)"),
        "{stdout}"
    );
    assert!(stdout.contains("not predicted: pytorch"), "{stdout}");
    let json = clustersim(&[
        "validate",
        &table("flashattention-a100-attention.csv"),
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&text(&json.stdout)).unwrap();
    let predicted = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["predicted"].is_number())
        .count();
    assert_eq!(predicted, 20);
}

#[test]
fn a_bad_attention_table_is_exit_2_with_its_line() {
    let dir =
        std::env::temp_dir().join(format!("clustersim-attention-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.csv");
    std::fs::write(
        &path,
        "# clustersim-gpu: a100-sxm4-40gb\nimplementation,pass,dropout,batch,heads,seq_len,head_dim,dtype,ms\nmegatron,forward,0,16,8,1024,64,fp16,nan\n",
    )
    .unwrap();
    let output = clustersim(&["validate", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("line 3: ms must be above 0"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
