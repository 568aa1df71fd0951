//! The linear algebra of a regularized least-squares step over a handful of
//! parameters: the normal matrix of a Jacobian with a Gaussian prior, and
//! its Cholesky solve. Seven parameters at most, so a dense k × k matrix.

/// Residuals in log time and their Jacobian: `jacobian[i][j]` is
/// ∂ residual i / ∂ log-parameter j.
#[derive(Debug, Clone)]
pub struct Linearized {
    pub residuals: Vec<f64>,
    pub jacobian: Vec<Vec<f64>>,
}

/// The normal matrix JᵀJ/σ² + diag(prior precision) and the gradient
/// Jᵀr/σ² + prior precision · u over the rows `keep` says to keep.
pub fn normal_equations(
    linearized: &Linearized,
    keep: impl Fn(usize) -> bool,
    noise_log_sd: f64,
    prior_precision: &[f64],
    log_values: &[f64],
) -> (Vec<Vec<f64>>, Vec<f64>) {
    let k = prior_precision.len();
    let weight = 1.0 / (noise_log_sd * noise_log_sd);
    let mut matrix = vec![vec![0.0; k]; k];
    let mut gradient = vec![0.0; k];
    for (i, row) in linearized.jacobian.iter().enumerate() {
        if !keep(i) {
            continue;
        }
        for a in 0..k {
            gradient[a] += weight * row[a] * linearized.residuals[i];
            for b in 0..k {
                matrix[a][b] += weight * row[a] * row[b];
            }
        }
    }
    for a in 0..k {
        matrix[a][a] += prior_precision[a];
        gradient[a] += prior_precision[a] * log_values[a];
    }
    (matrix, gradient)
}

/// Solves `matrix · x = rhs` for a symmetric positive-definite matrix
/// (Cholesky); `None` when it is not positive definite.
pub fn cholesky_solve(matrix: &[Vec<f64>], rhs: &[f64]) -> Option<Vec<f64>> {
    let k = rhs.len();
    let mut lower = vec![vec![0.0; k]; k];
    for i in 0..k {
        for j in 0..=i {
            let sum: f64 = (0..j).map(|m| lower[i][m] * lower[j][m]).sum();
            if i == j {
                let diagonal = matrix[i][i] - sum;
                if diagonal.is_nan() || diagonal <= 0.0 {
                    return None;
                }
                lower[i][i] = diagonal.sqrt();
            } else {
                lower[i][j] = (matrix[i][j] - sum) / lower[j][j];
            }
        }
    }
    let mut y = vec![0.0; k];
    for i in 0..k {
        let sum: f64 = (0..i).map(|m| lower[i][m] * y[m]).sum();
        y[i] = (rhs[i] - sum) / lower[i][i];
    }
    let mut x = vec![0.0; k];
    for i in (0..k).rev() {
        let sum: f64 = (i + 1..k).map(|m| lower[m][i] * x[m]).sum();
        x[i] = (y[i] - sum) / lower[i][i];
    }
    Some(x)
}

/// The diagonal of the inverse of a symmetric positive-definite matrix
/// (each column solved in turn).
pub fn inverse_diagonal(matrix: &[Vec<f64>]) -> Option<Vec<f64>> {
    let k = matrix.len();
    (0..k)
        .map(|j| {
            let mut unit = vec![0.0; k];
            unit[j] = 1.0;
            cholesky_solve(matrix, &unit).map(|column| column[j])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_a_known_system_and_refuses_an_indefinite_one() {
        let matrix = vec![vec![4.0, 2.0], vec![2.0, 3.0]];
        let x = cholesky_solve(&matrix, &[2.0, 1.0]).unwrap();
        // 4x + 2y = 2, 2x + 3y = 1 → x = 0.5, y = 0.
        assert!((x[0] - 0.5).abs() < 1e-12 && x[1].abs() < 1e-12, "{x:?}");
        let inverse = inverse_diagonal(&matrix).unwrap();
        assert!((inverse[0] - 3.0 / 8.0).abs() < 1e-12);
        assert!((inverse[1] - 4.0 / 8.0).abs() < 1e-12);
        assert!(cholesky_solve(&[vec![1.0, 2.0], vec![2.0, 1.0]], &[1.0, 1.0]).is_none());
    }

    #[test]
    fn a_linear_model_is_solved_in_one_step() {
        // r = y − 2u with prior precision 0: u = y/2 minimizes Σ r².
        let linearized = Linearized {
            residuals: vec![1.0, 1.0],
            jacobian: vec![vec![-2.0], vec![-2.0]],
        };
        let (matrix, gradient) = normal_equations(&linearized, |_| true, 1.0, &[0.0], &[0.0]);
        let step = cholesky_solve(&matrix, &gradient.iter().map(|g| -g).collect::<Vec<_>>());
        assert!((step.unwrap()[0] - 0.5).abs() < 1e-12);
    }
}
