//! Colours and display names of task kinds and streams.
//!
//! Kinds are looked up by their JSON name with a grey fallback, so kinds added
//! to `sim::task::TaskKind` later (ZeRO-Offload's `pcie_d2h`, `pcie_h2d`,
//! `cpu_adam` are already listed) still draw. The palette is Tableau 10, which
//! stays distinguishable for common colour-vision deficiencies; ZeRO-2's
//! reduce-scatter and all-gather take Tableau 20's light purple and pink; a
//! split backward's input- and weight-gradient passes Tableau 20's light
//! orange and teal.

use plotters::style::RGBColor;
use timeline::TaskKind;

/// Colour of kinds this module does not know yet.
pub const FALLBACK_COLOR: RGBColor = RGBColor(0xba, 0xb0, 0xac);

/// The fill colour of a task kind.
pub fn kind_color(kind: TaskKind) -> RGBColor {
    color_for_kind_name(kind.name())
}

/// The fill colour for a kind's JSON name; unknown names get [`FALLBACK_COLOR`].
pub fn color_for_kind_name(name: &str) -> RGBColor {
    match name {
        "forward" => RGBColor(0x4e, 0x79, 0xa7),
        "recompute" => RGBColor(0x9e, 0xc9, 0xe9),
        "backward" => RGBColor(0xf2, 0x8e, 0x2b),
        // A split backward (zero-bubble schedules): Tableau 20's light orange
        // for the input gradient and its dark teal-green for the weight gradient,
        // so the deferred weight-gradient passes stand apart from backward's orange.
        "backward_input" => RGBColor(0xff, 0xbe, 0x7d),
        "backward_weight" => RGBColor(0x49, 0x98, 0x94),
        "tensor_all_reduce" => RGBColor(0xe1, 0x57, 0x59),
        "pipeline_activation" => RGBColor(0x59, 0xa1, 0x4f),
        "pipeline_gradient" => RGBColor(0xed, 0xc9, 0x48),
        "data_parallel_all_reduce" => RGBColor(0xb0, 0x7a, 0xa1),
        "data_parallel_reduce_scatter" => RGBColor(0xd4, 0xa6, 0xc8),
        "data_parallel_all_gather" => RGBColor(0xd3, 0x72, 0x95),
        // Tableau 20's light purple, beside the data-parallel all-reduce.
        "embedding_all_reduce" => RGBColor(0xc5, 0xb0, 0xd5),
        "optimizer_step" => RGBColor(0x9c, 0x75, 0x5f),
        "pcie_d2h" => RGBColor(0x76, 0xb7, 0xb2),
        "pcie_h2d" => RGBColor(0xff, 0x9d, 0xa7),
        "cpu_adam" => RGBColor(0x5c, 0x5c, 0x5c),
        // Tableau 20's light grey-brown: the host lane sits behind the GPU lanes.
        "host_issue" => RGBColor(0xd7, 0xb5, 0xa6),
        // Tableau 20's light red, beside the tensor all-reduce's red: the
        // other blocking collective of a pass.
        "expert_all_to_all" => RGBColor(0xff, 0x9d, 0x9a),
        // Local DDP's gradient kernels: an olive beside the optimizer's brown.
        "gradient_copy" => RGBColor(0xbc, 0xbd, 0x22),
        // Gradient compression's kernels: Tableau 20's light olive, beside
        // the DDP copies' olive.
        "compression" => RGBColor(0xdb, 0xdb, 0x8d),
        // Optimizer post-validation's scalar exchanges along the pipeline:
        // Tableau 20's light green (beside the activations' green) forward,
        // its light yellow (beside the gradients' yellow) back.
        "norm_exchange" => RGBColor(0x8c, 0xd1, 0x7d),
        "post_validation" => RGBColor(0xf1, 0xce, 0x63),
        _ => FALLBACK_COLOR,
    }
}

/// A short human label for a kind (legends, axis categories).
pub fn kind_label(kind: TaskKind) -> &'static str {
    label_for_kind_name(kind.name())
}

/// A short human label for a kind's JSON name; unknown names are shown as they are.
pub fn label_for_kind_name(name: &str) -> &str {
    match name {
        "forward" => "forward",
        "recompute" => "recompute",
        "backward" => "backward",
        "backward_input" => "backward (input grad)",
        "backward_weight" => "backward (weight grad)",
        "tensor_all_reduce" => "TP all-reduce",
        "pipeline_activation" => "PP activation",
        "pipeline_gradient" => "PP gradient",
        "data_parallel_all_reduce" => "DP all-reduce",
        "data_parallel_reduce_scatter" => "DP reduce-scatter",
        "data_parallel_all_gather" => "DP all-gather",
        "embedding_all_reduce" => "embedding all-reduce",
        "optimizer_step" => "optimizer",
        "pcie_d2h" => "PCIe D2H",
        "pcie_h2d" => "PCIe H2D",
        "cpu_adam" => "CPU Adam",
        "host_issue" => "host issue",
        "expert_all_to_all" => "EP all-to-all",
        "norm_exchange" => "norm/inf exchange",
        "post_validation" => "post-validation",
        "gradient_copy" => "DDP gradient copy",
        "compression" => "gradient compression",
        other => other,
    }
}

/// Black or white, whichever reads better on `background`.
pub fn text_color_on(background: RGBColor) -> RGBColor {
    let RGBColor(r, g, b) = background;
    // Rec. 601 luma, 0..=255.
    let luma = 0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(b);
    if luma > 140.0 {
        RGBColor(0, 0, 0)
    } else {
        RGBColor(255, 255, 255)
    }
}

/// A darker shade of `color` for block outlines.
pub fn darker(color: RGBColor) -> RGBColor {
    let RGBColor(r, g, b) = color;
    let scale = |channel: u8| (f64::from(channel) * 0.65).round() as u8;
    RGBColor(scale(r), scale(g), scale(b))
}

/// Colours of the two sides of a comparison.
pub const COMPARISON_COLORS: [RGBColor; 2] =
    [RGBColor(0x4e, 0x79, 0xa7), RGBColor(0xf2, 0x8e, 0x2b)];

/// Colours of chart series, cycled: all ten of Tableau 10 (the bubble
/// chart draws ten schedules, each in its own colour).
pub const SERIES_COLORS: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0xba, 0xb0, 0xac),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_known_kind_has_its_own_colour() {
        let colors: BTreeSet<(u8, u8, u8)> = TaskKind::ALL
            .iter()
            .map(|&kind| {
                let RGBColor(r, g, b) = kind_color(kind);
                (r, g, b)
            })
            .collect();
        assert_eq!(colors.len(), TaskKind::ALL.len());
        assert!(!colors.contains(&(FALLBACK_COLOR.0, FALLBACK_COLOR.1, FALLBACK_COLOR.2)));
    }

    #[test]
    fn every_known_kind_has_a_label_of_its_own() {
        // A kind without a label would show its JSON name (snake_case) in legends.
        let labels: BTreeSet<&str> = TaskKind::ALL.iter().map(|&kind| kind_label(kind)).collect();
        assert_eq!(labels.len(), TaskKind::ALL.len());
        for kind in TaskKind::ALL {
            assert!(
                !kind_label(kind).contains('_'),
                "{kind:?}: {}",
                kind_label(kind)
            );
        }
    }

    #[test]
    fn series_colours_are_distinct() {
        let colors: BTreeSet<(u8, u8, u8)> = SERIES_COLORS
            .iter()
            .map(|&RGBColor(r, g, b)| (r, g, b))
            .collect();
        assert_eq!(colors.len(), SERIES_COLORS.len());
    }

    #[test]
    fn unknown_kinds_fall_back_to_grey_and_their_name() {
        let RGBColor(r, g, b) = color_for_kind_name("nvme_swap");
        assert_eq!(
            (r, g, b),
            (FALLBACK_COLOR.0, FALLBACK_COLOR.1, FALLBACK_COLOR.2)
        );
        assert_eq!(label_for_kind_name("nvme_swap"), "nvme_swap");
    }
}
