//! Unit tests of the training options (`super`).

use super::*;
use crate::problem::Problem;

#[test]
fn precision_defaults_to_fp16_merges_and_labels_bf16() {
    let unset = TrainingOptionsFile::default();
    assert_eq!(unset.with_defaults().precision, Precision::Fp16);
    let bf16 = TrainingOptionsFile {
        precision: Some(Precision::Bf16),
        ..TrainingOptionsFile::default()
    };
    assert_eq!(
        unset.clone().or(bf16.clone()).with_defaults().precision,
        Precision::Bf16
    );
    let options = bf16.with_defaults();
    assert!(
        options.title_suffix(1).contains("bf16"),
        "{}",
        options.title_suffix(1)
    );
    assert!(!unset.with_defaults().title_suffix(1).contains("fp16"));
    // fp16 is left out of the serialized options (outputs stay as they were).
    let json = serde_json::to_string(&unset.with_defaults()).unwrap();
    assert!(!json.contains("precision"), "{json}");
    assert!(serde_json::to_string(&options)
        .unwrap()
        .contains("\"precision\":\"bf16\""));
}

#[test]
fn unset_options_take_their_documented_defaults() {
    let options = TrainingOptionsFile::default().with_defaults();
    assert!(options.pipeline_scatter_gather);
    assert!(!options.sequence_parallel && !options.network_contention);
    assert_eq!(options.offload, None);
    assert_eq!(options.title_suffix(1), "");
}

#[test]
fn a_file_value_is_kept_unless_a_flag_overrides_it() {
    let file = TrainingOptionsFile {
        sequence_parallel: Some(true),
        pipeline_scatter_gather: Some(false),
        ..TrainingOptionsFile::default()
    };
    let flags = TrainingOptionsFile {
        sequence_parallel: Some(false),
        ..TrainingOptionsFile::default()
    };
    let merged = flags.or(file).with_defaults();
    assert!(!merged.sequence_parallel);
    assert!(!merged.pipeline_scatter_gather);
}

#[test]
fn titles_name_every_option_that_is_on_in_a_fixed_order() {
    let options = TrainingOptionsFile {
        sequence_parallel: Some(true),
        overlap_grad_reduce: Some(true),
        grad_reduce_bucket_params: Some(1000),
        zero_offload: Some(true),
        delayed_update: Some(true),
        network_contention: Some(true),
        ..TrainingOptionsFile::default()
    }
    .with_defaults();
    assert_eq!(
        options.title_suffix(4),
        " · sequence parallel · overlapped grad reduce (1000-param buckets) · ZeRO-Offload + DPU (warm-up 1, 4 iterations) · contention"
    );
}

#[test]
fn conflicting_options_are_all_reported_by_key() {
    let mut problems = Vec::new();
    TrainingOptionsFile {
        sequence_parallel: Some(true),
        async_tensor_allreduce: Some(true),
        grad_reduce_bucket_params: Some(0),
        delayed_update: Some(true),
        ..TrainingOptionsFile::default()
    }
    .resolve(1, 1, &mut problems);
    let keys: Vec<&str> = problems.iter().map(Problem::field).collect();
    assert_eq!(
        keys,
        [
            "delayed_update",
            "grad_reduce_bucket_params",
            "grad_reduce_bucket_params",
            "async_tensor_allreduce"
        ],
        "{problems:?}"
    );
}
