//! Which parameters a set of runs can identify, from the Jacobian at the
//! prior. A parameter is fitted when the runs carry at least as much
//! information about it as its prior does (its uncertainty at least halves
//! in variance), after what the parameters already chosen explain: the runs
//! cannot tell two parameters apart when they move every run's time the same
//! way (a GEMM rate and a memory-bound rate on runs with one kernel mix).
//! Parameters are taken in order of the information the runs carry about
//! them; the rest keep their prior, each with the reason.

use sim::scenario::fitted::FitParameter;

/// A parameter the runs cannot identify, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unidentified {
    pub parameter: FitParameter,
    pub why: String,
}

/// The parameters to fit, in `candidates`' order, and those kept at their
/// prior. `columns[j]` is ∂ log time of every run / ∂ log candidate j.
pub fn identifiable(
    candidates: &[FitParameter],
    columns: &[Vec<f64>],
    noise_log_sd: f64,
) -> (Vec<FitParameter>, Vec<Unidentified>) {
    let weight = 1.0 / (noise_log_sd * noise_log_sd);
    let information = |column: &[f64]| weight * column.iter().map(|x| x * x).sum::<f64>();
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| information(&columns[b]).total_cmp(&information(&columns[a])));
    let mut basis: Vec<Vec<f64>> = Vec::new();
    let mut chosen: Vec<usize> = Vec::new();
    let mut kept = Vec::new();
    for j in order {
        let parameter = candidates[j];
        let prior_information = parameter.prior_log_sd().powi(-2);
        let total = information(&columns[j]);
        if total == 0.0 {
            kept.push(Unidentified {
                parameter,
                why: "no run's time depends on it".into(),
            });
            continue;
        }
        let mut rest = columns[j].clone();
        for q in &basis {
            let along: f64 = q.iter().zip(&rest).map(|(a, b)| a * b).sum();
            rest.iter_mut().zip(q).for_each(|(r, q)| *r -= along * q);
        }
        let left = information(&rest);
        if left >= prior_information {
            let norm = rest.iter().map(|x| x * x).sum::<f64>().sqrt();
            basis.push(rest.iter().map(|x| x / norm).collect());
            chosen.push(j);
            continue;
        }
        let why = if total < prior_information {
            format!(
                "the runs depend on it too little: they would narrow it less than its prior \
                 (information {total:.1} against the prior's {prior_information:.1})"
            )
        } else {
            let partner = chosen
                .iter()
                .copied()
                .max_by(|&a, &b| {
                    cosine(&columns[j], &columns[a])
                        .abs()
                        .total_cmp(&cosine(&columns[j], &columns[b]).abs())
                })
                .map_or("the parameters already fitted", |a| candidates[a].name());
            format!("confounded with {partner}: the runs move their times together")
        };
        kept.push(Unidentified { parameter, why });
    }
    chosen.sort_unstable();
    kept.sort_by_key(|u| u.parameter);
    (chosen.into_iter().map(|j| candidates[j]).collect(), kept)
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use FitParameter::*;

    #[test]
    fn a_parameter_no_run_depends_on_and_a_collinear_one_keep_their_prior() {
        let candidates = [GemmRate, MemoryBoundRate, NicBandwidth];
        let columns = vec![
            vec![-0.8, -0.7, -0.9],
            // The same direction as the GEMM rate, a quarter as strong.
            vec![-0.2, -0.175, -0.225],
            vec![0.0, 0.0, 0.0],
        ];
        let (chosen, kept) = identifiable(&candidates, &columns, 0.03);
        assert_eq!(chosen, vec![GemmRate]);
        assert_eq!(kept.len(), 2);
        assert!(
            kept[0].why.starts_with("confounded with gemm_rate"),
            "{:?}",
            kept[0]
        );
        assert_eq!(kept[1].why, "no run's time depends on it");
    }

    #[test]
    fn independent_directions_are_both_fitted() {
        let candidates = [GemmRate, HostKernelCost];
        let columns = vec![vec![-0.9, -0.2, -0.5], vec![-0.05, -0.6, -0.3]];
        let (chosen, kept) = identifiable(&candidates, &columns, 0.03);
        assert_eq!(chosen, vec![GemmRate, HostKernelCost]);
        assert!(kept.is_empty());
    }
}
