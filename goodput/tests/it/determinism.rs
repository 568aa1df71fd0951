//! Same inputs and seed: byte-identical reports.

use goodput::evaluate;

use crate::fixtures::plan;

#[test]
fn the_same_seed_gives_byte_identical_json() {
    let first = serde_json::to_string(&evaluate(&plan()).unwrap()).unwrap();
    let second = serde_json::to_string(&evaluate(&plan()).unwrap()).unwrap();
    assert_eq!(first, second);
    let mut other = plan();
    other.monte_carlo.seed += 1;
    let third = serde_json::to_string(&evaluate(&other).unwrap()).unwrap();
    assert_ne!(
        first, third,
        "a different seed should change the Monte-Carlo"
    );
}

#[test]
fn the_report_keeps_its_field_order() {
    let json = serde_json::to_string(&evaluate(&plan()).unwrap()).unwrap();
    let order = [
        "\"iterations\"",
        "\"nodes\"",
        "\"useful_time_s\"",
        "\"failure_rate\"",
        "\"interval\"",
        "\"expected\"",
        "\"monte_carlo\"",
        "\"goodput\"",
        "\"energy\"",
    ];
    // Each top-level key is found after the one before it.
    let mut from = 0;
    for key in order {
        let at = json[from..]
            .find(key)
            .unwrap_or_else(|| panic!("{key} missing after byte {from}"));
        from += at + key.len();
    }
}
