//! The fuzzer's random numbers and mutations (see `../fuzz.rs`): a SplitMix64
//! generator, a JSON tree that can hold what `serde_json::Value` cannot (any
//! number literal such as `1e999` or `NaN`, repeated keys), its mutations, and
//! byte-level mutations of the rendered text.

/// SplitMix64: tiny, fast and the same on every platform, so a seed names
/// the same inputs everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Number literals: near-valid values first, then the extremes of every
/// integer width and of `f64`.
pub const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "7",
    "8",
    "16",
    "64",
    "1000",
    "-1",
    "-8",
    "0.5",
    "1.5",
    "-0",
    "0.0",
    "1e-9",
    "5e-324",
    "1e308",
    "-1e308",
    "1e30",
    "255",
    "256",
    "65535",
    "65536",
    "16384",
    "16385",
    "1048576",
    "1048577",
    "16777216",
    "16777217",
    "60000000",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "4294967297",
    "9007199254740993",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211457",
    "1e999",
    "-1e999",
];

/// Tokens that are not JSON numbers although they look like some.
pub const BAD_TOKENS: &[&str] = &[
    "NaN",
    "Infinity",
    "-Infinity",
    "nan",
    "0x10",
    "1_000",
    "01",
    "+1",
    "1.",
    ".5",
    "1e",
    "-",
    "undefined",
    "True",
];

/// Strings: preset and enum names (valid in some places, wrong in others),
/// the case's own file names (so a model may name the topology file), paths
/// that are not files, and odd text.
pub const STRINGS: &[&str] = &[
    "",
    " ",
    "tiny",
    "gpt3-175b",
    "gpt-1t",
    "gpt2-10b",
    "dgx-a100",
    "selene",
    "dgx2-v100",
    "dgx2-v100-x8",
    "h200",
    "a100-80gb",
    "v100-32gb",
    "megatron-2021",
    "megatron-2022",
    "megatron-core-2024",
    "deepspeed-pipeline",
    "gpipe",
    "1f1b",
    "interleaved",
    "zb-h1",
    "zb-h2",
    "looped-bfs",
    "Ett|ttL",
    "Et*2|(t|)*2",
    "zb-v",
    "dualpipev",
    "dualpipe",
    "none",
    "selective",
    "full",
    "sim",
    "executor",
    "synthetic",
    "compute",
    "host",
    "forward",
    "measured",
    "datasheet",
    "model",
    "model.json",
    "topology.json",
    "profile.json",
    "stack.json",
    "scenario.json",
    "missing.json",
    ".",
    "/dev/null",
    "/dev/zero",
    "NaN",
    "1e999",
    "-1",
    "4294967296",
    "true",
    "null",
    "é∑😀",
    "\u{0}",
    "\u{202e}x",
];

/// A JSON document whose numbers keep their literal text and whose objects
/// may repeat a key.
#[derive(Clone, Debug)]
pub enum Json {
    Null,
    Bool(bool),
    /// A number or any other bare token, written as is.
    Raw(String),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn from_value(value: &serde_json::Value) -> Json {
        use serde_json::Value;
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Raw(n.to_string()),
            Value::String(s) => Json::Str(s.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            Value::Object(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }

    pub fn parse(text: &str) -> Json {
        Json::from_value(&serde_json::from_str(text).expect("seed is valid JSON"))
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        let quoted = |s: &str| serde_json::to_string(s).expect("strings serialize");
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Raw(text) => out.push_str(text),
            Json::Str(s) => out.push_str(&quoted(s)),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&quoted(key));
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    /// Sets `key` of an object (replacing the first such key or adding it).
    pub fn set(&mut self, key: &str, value: Json) {
        if let Json::Object(entries) = self {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key.to_string(), value)),
            }
        }
    }

    fn children_mut(&mut self) -> Vec<&mut Json> {
        match self {
            Json::Array(items) => items.iter_mut().collect(),
            Json::Object(entries) => entries.iter_mut().map(|(_, v)| v).collect(),
            _ => Vec::new(),
        }
    }

    fn child_count(&self) -> usize {
        match self {
            Json::Array(items) => items.len(),
            Json::Object(entries) => entries.len(),
            _ => 0,
        }
    }

    fn at_mut(&mut self, path: &[usize]) -> &mut Json {
        match path.split_first() {
            None => self,
            Some((&i, rest)) => self.children_mut().swap_remove(i).at_mut(rest),
        }
    }

    /// Every node's path (child indices from the root), depth first.
    fn paths(&self, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        out.push(prefix.clone());
        let children: Vec<&Json> = match self {
            Json::Array(items) => items.iter().collect(),
            Json::Object(entries) => entries.iter().map(|(_, v)| v).collect(),
            _ => Vec::new(),
        };
        for (i, child) in children.into_iter().enumerate() {
            prefix.push(i);
            child.paths(prefix, out);
            prefix.pop();
        }
    }
}

/// A random replacement value: mostly numbers, then strings, then other types.
fn random_value(rng: &mut Rng) -> Json {
    match rng.below(20) {
        0..=9 => Json::Raw(rng.pick(NUMBERS).to_string()),
        10 => Json::Raw(rng.pick(BAD_TOKENS).to_string()),
        11..=14 => Json::Str(rng.pick(STRINGS).to_string()),
        15 => Json::Str("x".repeat(rng.pick(&[1000, 100_000]).to_owned())),
        16 => Json::Null,
        17 => Json::Bool(rng.chance(50)),
        18 => Json::Array(Vec::new()),
        _ => Json::Object(Vec::new()),
    }
}

/// A number near `text`'s value (off by one, doubled, negated, scaled), or
/// an extreme when `text` is not a number.
pub fn nudge(text: &str, rng: &mut Rng) -> String {
    if let Ok(n) = text.parse::<i128>() {
        let candidates = [
            n - 1,
            n + 1,
            n * 2,
            n / 2,
            -n,
            n * 1000,
            n * 1_000_000_000,
            n + (1 << 32),
        ];
        return rng.pick(&candidates).to_string();
    }
    if let Ok(x) = text.parse::<f64>() {
        let candidates = [x * 10.0, x / 10.0, -x, x * 1e300, x * 1e-300, x + 0.5];
        let value = *rng.pick(&candidates);
        return if value.is_finite() {
            format!("{value:e}")
        } else {
            "1e999".into()
        };
    }
    rng.pick(NUMBERS).to_string()
}

/// Applies one structural mutation somewhere in `doc`.
pub fn mutate(doc: &mut Json, rng: &mut Rng) {
    let mut paths = Vec::new();
    doc.paths(&mut Vec::new(), &mut paths);
    // Half the time stay near the top, where the keys that decide sizes live.
    if rng.chance(50) {
        let shallow: Vec<Vec<usize>> = paths.iter().filter(|p| p.len() <= 2).cloned().collect();
        if !shallow.is_empty() {
            paths = shallow;
        }
    }
    let path = rng.pick(&paths).clone();
    // An operation on a node's entry in its parent needs the parent.
    if let Some((&index, parent_path)) = path.split_last() {
        if rng.chance(30) {
            edit_parent(doc.at_mut(parent_path), index, rng);
            return;
        }
    }
    let donor = {
        let other = rng.pick(&paths).clone();
        doc.at_mut(&other).clone()
    };
    let node = doc.at_mut(&path);
    match rng.below(10) {
        0..=2 => {
            *node = match node {
                Json::Raw(text) if rng.chance(60) => Json::Raw(nudge(text, rng)),
                _ => random_value(rng),
            }
        }
        3 => *node = random_value(rng),
        4 => *node = Json::Str(node.render()),
        5 => *node = Json::Array(vec![node.clone()]),
        6 => {
            let depth = *rng.pick(&[2usize, 64, 127, 128, 129, 1000, 100_000]);
            *node = Json::Raw(format!(
                "{}{}{}",
                "[".repeat(depth),
                node.render(),
                "]".repeat(depth)
            ));
        }
        7 if node.child_count() > 0 => edit_children(node, rng),
        7 | 8 => *node = donor,
        _ => {
            if let Json::Object(entries) = node {
                entries.push((
                    rng.pick(&["fuzz_unknown_key", "name", "", "layers", "tp"])
                        .to_string(),
                    random_value(rng),
                ));
            } else {
                *node = Json::Raw(rng.pick(NUMBERS).to_string());
            }
        }
    }
}

/// Deletes, duplicates or swaps the `index`th entry of `parent`.
fn edit_parent(parent: &mut Json, index: usize, rng: &mut Rng) {
    let len = parent.child_count();
    let other = rng.below(len);
    match parent {
        Json::Object(entries) => match rng.below(3) {
            0 => {
                entries.remove(index);
            }
            1 => {
                // The same key again, with another value (duplicate keys).
                let key = entries[index].0.clone();
                entries.push((key, random_value(rng)));
            }
            _ => {
                let value = entries[index].1.clone();
                entries[index].1 = entries[other].1.clone();
                entries[other].1 = value;
            }
        },
        Json::Array(items) => match rng.below(3) {
            0 => {
                items.remove(index);
            }
            1 => {
                let item = items[index].clone();
                items.insert(index, item);
            }
            _ => items.swap(index, other),
        },
        _ => {}
    }
}

/// Empties, reverses or floods an array or object's children.
fn edit_children(node: &mut Json, rng: &mut Rng) {
    match node {
        Json::Array(items) => match rng.below(3) {
            0 => items.clear(),
            1 => items.reverse(),
            _ => {
                let item = rng.pick(items).clone();
                // Not 1000: a dev set of 1000 cases takes 20 s.
                let copies = *rng.pick(&[10usize, 100]);
                items.extend(std::iter::repeat_n(item, copies));
            }
        },
        Json::Object(entries) => match rng.below(2) {
            0 => entries.clear(),
            _ => entries.reverse(),
        },
        _ => {}
    }
}

/// Byte-level damage to a rendered file: truncation, deletion, insertion of
/// odd bytes, a BOM, or trailing garbage.
pub fn mutate_text(text: &mut Vec<u8>, rng: &mut Rng) {
    let len = text.len();
    let at = if len == 0 { 0 } else { rng.below(len + 1) };
    match rng.below(7) {
        0 => text.truncate(at),
        1 => {
            let end = (at + 1 + rng.below(64)).min(len);
            text.drain(at..end.max(at));
        }
        2 => {
            let bytes: &[&[u8]] = &[b"\xff", b"\0", b"\"", b"{", b"]", b",", b"\n", b"\xc3"];
            let insert = rng.pick(bytes);
            text.splice(at..at, insert.iter().copied());
        }
        3 => text
            .splice(0..0, b"\xef\xbb\xbf".iter().copied())
            .for_each(drop),
        4 => {
            let tails: &[&[u8]] = &[b" {}", b"garbage", b"\n\n", b"]"];
            let tail = tails[rng.below(tails.len())];
            text.extend_from_slice(tail);
        }
        5 => text.clear(),
        _ => {
            if len > 0 {
                let i = rng.below(len);
                text[i] ^= 1 << rng.below(8);
            }
        }
    }
}
