//! `seq_len` in a scenario (`--seq-len`) overrides the model's sequence
//! length, and is checked like the model's own.

use sim::scenario::ScenarioFile;

fn with_seq_len(seq_len: Option<u64>) -> Result<sim::scenario::Scenario, String> {
    ScenarioFile {
        model: Some("gpt2-1b".into()),
        seq_len,
        tp: Some(1),
        pp: Some(1),
        dp: Some(1),
        global_batch: Some(8),
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .map_err(|e| e.to_string())
}

#[test]
fn the_override_sets_the_models_sequence_length_and_its_cost() {
    let base = with_seq_len(None).unwrap();
    let longer = with_seq_len(Some(2 * base.model.seq_len)).unwrap();
    assert_eq!(longer.model.seq_len, 2 * base.model.seq_len);
    // Twice the tokens: at least twice the FLOPs (attention grows faster).
    let flops = |s: &sim::scenario::Scenario| -> f64 {
        sim::simulate(s)
            .unwrap()
            .into_timeline()
            .tasks
            .iter()
            .map(|t| t.flops)
            .sum()
    };
    let ratio = flops(&longer) / flops(&base);
    assert!((2.0..2.5).contains(&ratio), "FLOPs ratio {ratio}");
}

#[test]
fn an_impossible_override_is_refused_naming_the_key() {
    for bad in [0, 1 << 40] {
        let error = with_seq_len(Some(bad)).unwrap_err();
        assert!(error.contains(&format!("seq_len: {bad} tokens")), "{error}");
    }
}
