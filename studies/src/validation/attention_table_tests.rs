//! Attention tables: reading (every problem refused with its line), the
//! Megatron kernels priced as a layer prices them, and the committed
//! FlashAttention appendix table's errors.

use super::*;

const FLASHATTENTION: &str =
    include_str!("../../../validation/kernels/flashattention-a100-attention.csv");

fn predicted() -> AttentionTable {
    let mut table = read(FLASHATTENTION).unwrap();
    predict(&mut table);
    table
}

#[test]
fn the_committed_table_prices_every_megatron_row_and_says_why_not_the_rest() {
    let table = predicted();
    assert_eq!(table.gpu.name, "A100-SXM4-40GB");
    assert_eq!(table.profile.id, "a100-40gb");
    assert_eq!(table.rows.len(), 85);
    for row in &table.rows {
        let megatron = row.implementation == Implementation::Megatron;
        assert_eq!(row.predicted_s.is_some(), megatron, "line {}", row.line);
        assert!(!row.note.is_empty(), "line {}", row.line);
    }
    let megatron = table
        .rows
        .iter()
        .filter(|r| r.implementation == Implementation::Megatron);
    assert_eq!(megatron.count(), 20);
}

#[test]
fn megatron_rows_run_the_layers_kernels() {
    let table = predicted();
    let row = table
        .rows
        .iter()
        .find(|r| {
            r.implementation == Implementation::Megatron
                && r.pass == Pass::Backward
                && r.dropout
                && r.seq_len == 1024
        })
        .unwrap();
    let names: Vec<&str> = row
        .note
        .split(", ")
        .map(|kernel| kernel.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "attention_over_values.dgrad_probs",
            "attention_over_values.dgrad_values",
            "attention_dropout.bwd",
            "softmax.bwd",
            "attention_scores.dgrad_q",
            "attention_scores.dgrad_k",
        ]
    );
}

/// Mean error (%) of Megatron's rows of one pass and dropout setting.
fn mean_error(table: &AttentionTable, pass: Pass, dropout: bool) -> f64 {
    let summaries = summaries(&table.rows);
    summaries
        .iter()
        .find(|s| {
            s.implementation == Implementation::Megatron && s.pass == pass && s.dropout == dropout
        })
        .and_then(|s| s.mean_error_percent)
        .unwrap()
}

#[test]
fn megatron_attention_on_the_a100_is_predicted_too_fast_by_a_pinned_margin() {
    // Pinned, not a target (issue 30 item 3 is open): the unfused core runs
    // its passes over the scores slower on the A100 than the kernel classes
    // measured on the lab H100 and carried by HBM bandwidth say. Pinned to
    // a point so that a model change shows here on purpose.
    let table = predicted();
    let pinned = [
        (Pass::Forward, false, PINNED_FORWARD),
        (Pass::Forward, true, PINNED_FORWARD_DROPOUT),
        (Pass::Backward, false, PINNED_BACKWARD),
        (Pass::Backward, true, PINNED_BACKWARD_DROPOUT),
    ];
    for (pass, dropout, pinned) in pinned {
        let error = mean_error(&table, pass, dropout);
        assert!(
            (error - pinned).abs() < 1.0,
            "{pass:?} dropout {dropout}: {error:.2}% vs pinned {pinned}%"
        );
    }
}

// Mean signed errors (%) over s = 128...2048 when the table was added: the
// rows at s <= 256 are host-bound (the 2021 stack's 54.5 us per kernel),
// those from 512 on 10-39 % too fast.
const PINNED_FORWARD: f64 = -24.9;
const PINNED_FORWARD_DROPOUT: f64 = -13.9;
const PINNED_BACKWARD: f64 = -22.5;
const PINNED_BACKWARD_DROPOUT: f64 = -12.4;

#[test]
fn bad_tables_are_refused_with_their_line() {
    let header = format!("# clustersim-gpu: a100-sxm4-40gb\n{HEADER}\n");
    let cases = [
        (
            "megatron,sideways,0,16,8,1024,64,fp16,1.0",
            "line 3: pass must be forward or backward",
        ),
        (
            "triton,forward,0,16,8,1024,64,fp16,1.0",
            "line 3: implementation must be",
        ),
        (
            "megatron,forward,2,16,8,1024,64,fp16,1.0",
            "line 3: dropout must be 0 or 1",
        ),
        (
            "megatron,forward,0,0,8,1024,64,fp16,1.0",
            "line 3: batch must be an integer",
        ),
        (
            "megatron,forward,0,16,8,1024,64,fp16,-1",
            "line 3: ms must be above 0",
        ),
        (
            "megatron,forward,0,16,8,1024,64,fp16",
            "line 3: expected 9 fields",
        ),
        (
            "megatron,forward,0,1048576,1048576,1048576,64,fp16,1",
            "line 3: batch x heads x seq_len^2 must be at most",
        ),
    ];
    for (row, expected) in cases {
        let error = read(&format!("{header}{row}\n")).unwrap_err();
        assert!(error.starts_with(expected), "{row}: {error}");
    }
    assert!(read(&format!(
        "{HEADER}\nmegatron,forward,0,16,8,1024,64,fp16,1\n"
    ))
    .unwrap_err()
    .contains("clustersim-gpu"));
    assert!(read("# clustersim-gpu: a100-sxm4-40gb\nb,m,n\n")
        .unwrap_err()
        .starts_with("line 2: expected the header"));
    assert!(read(&header).unwrap_err().contains("no rows"));
}

#[test]
fn tables_are_told_apart_by_their_header() {
    assert!(looks_like_attention_table(FLASHATTENTION));
    assert!(!looks_like_attention_table(
        "# x\nb,m,n,k,dtype,flops_per_s\n"
    ));
}
