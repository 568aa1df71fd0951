//! The values `run-plan` (and `sweep --tokens`) parse from its flags: token
//! and step counts with SI suffixes, and the checkpoint interval.

use goodput::IntervalChoice;

/// "15T" → 15·10¹²; plain integers as they are.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, scale) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let scale: u64 = match c.to_ascii_uppercase() {
                'K' => 1_000,
                'M' => 1_000_000,
                'B' | 'G' => 1_000_000_000,
                'T' => 1_000_000_000_000,
                _ => return Err(format!("'{text}': the suffix is one of K, M, B, G, T")),
            };
            (&text[..i], scale)
        }
        _ => (text, 1),
    };
    let value: f64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a count (e.g. 15T or 1000000)"))?;
    let count = value * scale as f64;
    if !(count.is_finite() && (1.0..1.8e19).contains(&count)) {
        return Err(format!("'{text}' is not a count from 1 to 1.8e19"));
    }
    Ok(count.round() as u64)
}

/// optimal | N iterations | a time with a unit (s, min, h).
pub fn parse_interval(text: &str) -> Result<IntervalChoice, String> {
    let text = text.trim();
    if text == "optimal" {
        return Ok(IntervalChoice::Optimal);
    }
    if let Ok(n) = text.parse::<u64>() {
        return match n {
            0 => Err("0 iterations between checkpoints: give at least 1".into()),
            n => Ok(IntervalChoice::EveryIterations(n)),
        };
    }
    let (number, seconds_per_unit) = [("min", 60.0), ("h", 3600.0), ("s", 1.0)]
        .iter()
        .find_map(|&(unit, scale)| text.strip_suffix(unit).map(|n| (n, scale)))
        .ok_or_else(|| {
            format!("'{text}': optimal, a number of iterations, or a time such as 600s, 30min, 2h")
        })?;
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a time (e.g. 30min)"))?;
    let seconds = value * seconds_per_unit;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("'{text}': the interval must be a positive time"));
    }
    Ok(IntervalChoice::EverySeconds(seconds))
}

/// The largest failure rate accepted per component-hour.
const MAX_FAILURES_PER_COMPONENT_HOUR: f64 = 1.0;

/// "software:2e-5" → failures per node-hour of software faults and hangs:
/// a component as run-plan's report names it and its failures per
/// component-hour (finite, ≥ 0).
pub fn parse_failure_rate(text: &str) -> Result<goodput::failure_rates::ComponentRate, String> {
    use goodput::failure_rates::{Component, ComponentRate};
    let names = || {
        Component::ALL
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (name, rate) = text.split_once(':').ok_or_else(|| {
        format!(
            "'{text}': COMPONENT:FAILURES_PER_HOUR, e.g. software:2e-5 (components: {})",
            names()
        )
    })?;
    let component = Component::named(name.trim())
        .ok_or_else(|| format!("'{text}': unknown component '{name}' (known: {})", names()))?;
    let rate: f64 = rate
        .trim()
        .parse()
        .map_err(|_| format!("'{text}': the rate '{rate}' is not a number"))?;
    if !(rate.is_finite() && (0.0..=MAX_FAILURES_PER_COMPONENT_HOUR).contains(&rate)) {
        return Err(format!(
            "'{text}': the rate must be a number of failures per component-hour from 0 to \
             {MAX_FAILURES_PER_COMPONENT_HOUR} (a part failing more than once an hour is broken, not unreliable)"
        ));
    }
    Ok(ComponentRate {
        component,
        failures_per_component_hour: rate,
        source: "input (--failure-rate)".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_suffixes_and_refuse_nonsense() {
        assert_eq!(parse_count("15T"), Ok(15_000_000_000_000));
        assert_eq!(parse_count("2.5B"), Ok(2_500_000_000));
        assert_eq!(parse_count("1000"), Ok(1000));
        assert!(parse_count("0").is_err());
        assert!(parse_count("15X").is_err());
        assert!(parse_count("1e30").is_err());
        assert!(parse_count("NaN").is_err());
    }

    #[test]
    fn intervals_are_optimal_iterations_or_times() {
        assert_eq!(parse_interval("optimal"), Ok(IntervalChoice::Optimal));
        assert_eq!(
            parse_interval("50"),
            Ok(IntervalChoice::EveryIterations(50))
        );
        assert_eq!(
            parse_interval("30min"),
            Ok(IntervalChoice::EverySeconds(1800.0))
        );
        assert_eq!(
            parse_interval("2h"),
            Ok(IntervalChoice::EverySeconds(7200.0))
        );
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("-5s").is_err());
        assert!(parse_interval("soon").is_err());
    }
}
