//! A topology named on the command line or in a scenario: a preset, a
//! preset at another node count (`NAME:NODES`), or a topology JSON file.

use crate::spec::{TopologyError, TopologySpec};
use std::path::Path;

impl TopologySpec {
    /// A preset name or a path to a topology JSON file; `NAME:NODES`
    /// (`dgx-h100-ib:2048`) is that topology with NODES nodes, its fat tree
    /// grown as it needs ([`TopologySpec::with_nodes`]).
    pub fn resolve(name_or_path: &str) -> Result<Self, TopologyError> {
        if let Some(spec) = crate::presets::preset(name_or_path) {
            return Ok(spec);
        }
        if let Some((base, count)) = name_or_path.rsplit_once(':') {
            if let Ok(nodes) = count.parse::<u32>() {
                return Self::resolve(base)?.with_nodes(nodes);
            }
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            return Err(TopologyError::Unknown {
                message: input_file::named::unknown(
                    "topology",
                    name_or_path,
                    &crate::presets::preset_names(),
                ),
            });
        }
        let text = input_file::read_to_string(path).map_err(|source| TopologyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json_str(&text, &path.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preset_with_more_nodes_grows_its_fat_tree_and_keeps_the_rest() {
        let preset = TopologySpec::resolve("dgx-h100-ib").unwrap();
        assert_eq!(preset.fabric.fat_tree_levels, 2);
        let big = TopologySpec::resolve("dgx-h100-ib:2048").unwrap();
        assert_eq!((big.name.as_str(), big.nodes), ("dgx-h100-ib:2048", 2048));
        assert_eq!(big.total_gpus(), 16_384);
        // Radix 64: 32 NIC ports per leaf; 8 rails × 64 leaves × 32 = 16,384
        // endpoints need a third level (32² = 1,024 < 16,384 ≤ 32³).
        assert_eq!(big.fabric.fat_tree_levels, 3);
        assert_eq!(
            (big.gpu.clone(), big.node.clone()),
            (preset.gpu.clone(), preset.node.clone())
        );
        // Fewer nodes never remove a level.
        assert_eq!(
            TopologySpec::resolve("dgx-h100-ib:2")
                .unwrap()
                .fabric
                .fat_tree_levels,
            2
        );
        assert!(TopologySpec::resolve("dgx-h100-ib:0").is_err());
    }
}
