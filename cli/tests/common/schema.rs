//! Validating a JSON value against one of the repository's schemas
//! (`schemas/<name>.schema.json`, JSON Schema draft 2020-12), naming every
//! violation with its JSON pointer.

/// The schema file `schemas/<name>.schema.json`, parsed.
pub fn schema(name: &str) -> serde_json::Value {
    let path = super::repository_root()
        .join("schemas")
        .join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The violations of `value` against `schemas/<name>.schema.json`, one line each.
pub fn violations(name: &str, value: &serde_json::Value) -> Vec<String> {
    let schema = schema(name);
    let validator = jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|e| panic!("schemas/{name}.schema.json is not a valid schema: {e}"));
    validator
        .iter_errors(value)
        .map(|error| format!("{name}: at {}: {error}", error.instance_path()))
        .collect()
}

/// Panics naming every violation of `value` against `schemas/<name>.schema.json`.
pub fn assert_valid(name: &str, what: &str, value: &serde_json::Value) {
    let found = violations(name, value);
    assert!(found.is_empty(), "{what}:\n{}", found.join("\n"));
}
