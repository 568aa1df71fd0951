//! How a resolved scenario describes itself: chart titles and the JSON
//! stored in timeline headers (the training options serialize themselves
//! into both, so a new option needs nothing here).

use crate::resolved::Scenario;

impl Scenario {
    /// One-line description used as chart and report titles.
    pub fn title(&self) -> String {
        let l = &self.layout;
        let options = self.options.title_suffix(self.iterations);
        // cp is named only when used, so titles without it stay as they were.
        let cp = if l.context_parallel.get() > 1 {
            format!(" cp={}", l.context_parallel)
        } else {
            String::new()
        };
        let ep = match &self.experts {
            Some(routing) if l.expert_parallel.get() > 1 || !routing.imbalance.is_uniform() => {
                let skew = if routing.imbalance.is_uniform() {
                    String::new()
                } else {
                    format!(" ({})", routing.imbalance)
                };
                format!(" ep={}{skew}", l.expert_parallel)
            }
            _ => String::new(),
        };
        // Microbatch groups and a layout are named only when set.
        let mut schedule = self.schedule.name().to_string();
        if let Some(n) = l.microbatch_group_size {
            schedule.push_str(&format!(" N={n}"));
        }
        if let Some(layout) = l.pipeline_split.layout {
            schedule.push_str(&format!(" layout={}", layout.source()));
        }
        format!(
            "{} on {} · t={}{cp}{ep} p={} d={} v={} · b={} B={} · {schedule} · recompute={}{options}",
            self.model.name,
            self.topology.name,
            l.tensor_parallel,
            l.pipeline_parallel,
            l.data_parallel,
            l.chunks,
            l.microbatch_size,
            l.global_batch,
            self.recompute.name(),
        )
    }

    /// The resolved scenario as JSON (model and topology inline), for timeline headers.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::json!({
            "title": self.title(),
            "model": self.model,
            "topology": self.topology,
            "profile": self.profile.id,
            "layout": self.layout,
            "schedule": self.schedule,
            "recompute": self.recompute,
            "seed": self.seed,
            "stack": self.stack.name,
        });
        if let (Some(object), Ok(serde_json::Value::Object(options))) =
            (value.as_object_mut(), serde_json::to_value(self.options))
        {
            object.extend(options);
        }
        if self.options.offload.is_some() {
            value["iterations"] = self.iterations.into();
        }
        // Mixtures of experts: the routing and its busiest expert-parallel rank.
        if let Some(routing) = &self.experts {
            value["experts"] = serde_json::to_value(routing).unwrap_or_default();
        }
        value
    }
}
