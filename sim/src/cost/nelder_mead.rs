//! Nelder–Mead minimization of a function of N reals: the derivative-free
//! local search the tile-model fit uses (`tile_fit.rs`), whose objective is
//! piecewise (a minimum over tiles) and has no useful gradient. Standard
//! coefficients: reflection 1, expansion 2, contraction ½, shrink ½.

/// The best point found minimizing `f` from `x0` in `iterations` steps; the
/// initial simplex moves each coordinate by its `steps` entry.
pub fn minimize<const N: usize>(
    f: &dyn Fn(&[f64; N]) -> f64,
    x0: [f64; N],
    steps: [f64; N],
    iterations: usize,
) -> [f64; N] {
    let mut simplex: Vec<([f64; N], f64)> = vec![(x0, f(&x0))];
    for (i, step) in steps.iter().enumerate() {
        let mut x = x0;
        x[i] += step;
        simplex.push((x, f(&x)));
    }
    let along = |a: &[f64; N], b: &[f64; N], t: f64| -> [f64; N] {
        std::array::from_fn(|i| a[i] + t * (b[i] - a[i]))
    };
    for _ in 0..iterations {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let worst = simplex[N];
        let centroid: [f64; N] =
            std::array::from_fn(|i| simplex[..N].iter().map(|(x, _)| x[i]).sum::<f64>() / N as f64);
        let reflected = along(&centroid, &worst.0, -1.0);
        let reflected_f = f(&reflected);
        if reflected_f < simplex[0].1 {
            let expanded = along(&centroid, &worst.0, -2.0);
            let expanded_f = f(&expanded);
            simplex[N] = if expanded_f < reflected_f {
                (expanded, expanded_f)
            } else {
                (reflected, reflected_f)
            };
        } else if reflected_f < simplex[N - 1].1 {
            simplex[N] = (reflected, reflected_f);
        } else {
            let contracted = along(&centroid, &worst.0, 0.5);
            let contracted_f = f(&contracted);
            if contracted_f < worst.1 {
                simplex[N] = (contracted, contracted_f);
            } else {
                let best = simplex[0].0;
                for point in simplex.iter_mut().skip(1) {
                    point.0 = along(&best, &point.0, 0.5);
                    point.1 = f(&point.0);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    simplex[0].0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_minimum_of_a_shifted_bowl() {
        let bowl = |x: &[f64; 2]| (x[0] - 3.0).powi(2) + 10.0 * (x[1] + 1.0).powi(2);
        let best = minimize(&bowl, [0.0, 0.0], [1.0, 1.0], 200);
        assert!(
            (best[0] - 3.0).abs() < 1e-4 && (best[1] + 1.0).abs() < 1e-4,
            "{best:?}"
        );
    }
}
