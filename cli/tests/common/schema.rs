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

/// Every `schemas/*.schema.json` with an `$id`, as (`$id`, schema): the
/// resources a schema's `$ref` to a sibling file (`"$ref": "model.schema.json"`)
/// resolves to, with no file or network retrieval.
fn resources() -> Vec<(String, serde_json::Value)> {
    let folder = super::repository_root().join("schemas");
    let entries = std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", folder.display()));
    let mut found = Vec::new();
    for entry in entries {
        let file = entry.expect("a schemas/ entry").file_name();
        let file = file.to_string_lossy();
        let Some(name) = file.strip_suffix(".schema.json") else {
            continue;
        };
        let contents = schema(name);
        if let Some(id) = contents.get("$id").and_then(serde_json::Value::as_str) {
            found.push((id.to_string(), contents));
        }
    }
    found
}

/// The violations of `value` against `schemas/<name>.schema.json`, one line each.
pub fn violations(name: &str, value: &serde_json::Value) -> Vec<String> {
    let schema = schema(name);
    let registry = jsonschema::Registry::new()
        .draft(jsonschema::Draft::Draft202012)
        .extend(resources())
        .and_then(|builder| builder.prepare())
        .unwrap_or_else(|e| panic!("the schemas in schemas/: {e}"));
    let validator = jsonschema::draft202012::options()
        .with_registry(&registry)
        .build(&schema)
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
