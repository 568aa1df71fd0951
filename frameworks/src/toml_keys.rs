//! A TOML file's keys as `section.key` paths with typed reads that name the
//! key in errors, each read marked so that what was not read can be listed.

/// Every leaf key of a TOML document (`parallelism.tensor_parallel_degree`),
/// in the document's sorted order.
pub(crate) struct Keys {
    entries: Vec<(String, toml::Value)>,
    used: Vec<bool>,
}

impl Keys {
    pub(crate) fn of(table: &toml::Table) -> Keys {
        let mut entries = Vec::new();
        flatten("", table, &mut entries);
        let used = vec![false; entries.len()];
        Keys { entries, used }
    }

    fn get(&mut self, key: &str) -> Option<&toml::Value> {
        let index = self.entries.iter().position(|(k, _)| k == key)?;
        self.used[index] = true;
        Some(&self.entries[index].1)
    }

    /// A leaf's value as written (marked as read).
    pub(crate) fn scalar(&mut self, key: &str) -> Option<toml::Value> {
        self.get(key).cloned()
    }

    pub(crate) fn was_given(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| k == key)
    }

    pub(crate) fn text(&mut self, key: &str, problems: &mut Vec<String>) -> Option<String> {
        match self.get(key)? {
            toml::Value::String(text) => Some(text.clone()),
            other => {
                problems.push(format!("{key} = {other}: not a string"));
                None
            }
        }
    }

    pub(crate) fn integer(&mut self, key: &str, problems: &mut Vec<String>) -> Option<i64> {
        match self.get(key)? {
            toml::Value::Integer(n) => Some(*n),
            other => {
                problems.push(format!("{key} = {other}: not a whole number"));
                None
            }
        }
    }

    /// A positive whole number.
    pub(crate) fn count(&mut self, key: &str, problems: &mut Vec<String>) -> Option<u64> {
        let n = self.integer(key, problems)?;
        match u64::try_from(n).ok().filter(|&n| n > 0) {
            Some(n) => Some(n),
            None => {
                problems.push(format!("{key} = {n}: must be at least 1"));
                None
            }
        }
    }

    pub(crate) fn boolean(&mut self, key: &str, problems: &mut Vec<String>) -> Option<bool> {
        match self.get(key)? {
            toml::Value::Boolean(b) => Some(*b),
            other => {
                problems.push(format!("{key} = {other}: not true or false"));
                None
            }
        }
    }

    pub(crate) fn strings(&mut self, key: &str, problems: &mut Vec<String>) -> Option<Vec<String>> {
        match self.get(key)? {
            toml::Value::Array(items) => {
                let strings: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect();
                if strings.is_none() {
                    problems.push(format!("{key}: not a list of strings"));
                }
                strings
            }
            other => {
                problems.push(format!("{key} = {other}: not a list"));
                None
            }
        }
    }

    /// The keys no reader asked for: (key, `key = value` as written).
    pub(crate) fn unread(&self) -> Vec<(String, String)> {
        self.entries
            .iter()
            .zip(&self.used)
            .filter(|(_, used)| !**used)
            .map(|((key, value), _)| (key.clone(), format!("{key} = {value}")))
            .collect()
    }
}

fn flatten(prefix: &str, table: &toml::Table, out: &mut Vec<(String, toml::Value)>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => flatten(&path, inner, out),
            leaf => out.push((path, leaf.clone())),
        }
    }
}
