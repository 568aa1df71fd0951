//! The time axis of charts: a unit chosen by the span shown (µs, ms or s) and
//! "nice" tick positions (1, 2 or 5 times a power of ten, in that unit).

/// A display unit for durations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TimeUnit {
    pub name: &'static str,
    pub ns_per_unit: f64,
}

/// µs below 2 ms, ms below 2 s, s above.
pub(crate) fn unit_for_span(span_ns: u64) -> TimeUnit {
    if span_ns < 2_000_000 {
        TimeUnit {
            name: "µs",
            ns_per_unit: 1e3,
        }
    } else if span_ns < 2_000_000_000 {
        TimeUnit {
            name: "ms",
            ns_per_unit: 1e6,
        }
    } else {
        TimeUnit {
            name: "s",
            ns_per_unit: 1e9,
        }
    }
}

/// One labelled tick.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tick {
    pub time_ns: f64,
    pub label: String,
}

/// Ticks from 0 to `span_ns` inclusive, at most about `max_ticks` of them.
pub(crate) fn ticks(span_ns: u64, unit: TimeUnit, max_ticks: usize) -> Vec<Tick> {
    let span_units = span_ns as f64 / unit.ns_per_unit;
    if span_units <= 0.0 {
        return vec![Tick {
            time_ns: 0.0,
            label: "0".to_string(),
        }];
    }
    let raw_step = span_units / max_ticks.max(1) as f64;
    let magnitude = 10f64.powf(raw_step.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|factor| factor * magnitude)
        .find(|&step| step >= raw_step)
        .unwrap_or(10.0 * magnitude);
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    let count = (span_units / step + 1e-9).floor() as usize;
    (0..=count)
        .map(|index| {
            let value = index as f64 * step;
            Tick {
                time_ns: value * unit.ns_per_unit,
                label: format!("{value:.decimals$}"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_follows_the_span() {
        assert_eq!(unit_for_span(500_000).name, "µs");
        assert_eq!(unit_for_span(36_000_000).name, "ms");
        assert_eq!(unit_for_span(12_000_000_000).name, "s");
    }

    #[test]
    fn ticks_are_nice_and_cover_the_span() {
        let unit = unit_for_span(36_000_000);
        let labels: Vec<String> = ticks(36_000_000, unit, 10)
            .into_iter()
            .map(|tick| tick.label)
            .collect();
        assert_eq!(labels, ["0", "5", "10", "15", "20", "25", "30", "35"]);
        let small: Vec<String> = ticks(1_500, unit_for_span(1_500), 4)
            .into_iter()
            .map(|tick| tick.label)
            .collect();
        assert_eq!(small, ["0.0", "0.5", "1.0", "1.5"]);
    }
}
