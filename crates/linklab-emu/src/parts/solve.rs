//! The parts of the device's work from the counted totals: least squares, every part at
//! least 0.

/// Least squares: the `x` minimizing |A x − y|, by the normal equations (a handful of
/// unknowns, well-scaled after dividing each column by its largest value). None if singular.
pub(super) fn least_squares(a: &[Vec<f64>], y: &[f64]) -> Option<Vec<f64>> {
    let n = a.first()?.len();
    let scale: Vec<f64> = (0..n)
        .map(|j| a.iter().map(|r| r[j].abs()).fold(0.0, f64::max).max(1e-12))
        .collect();
    // Normal equations M x' = b with x' = x · scale.
    let mut m = vec![vec![0.0; n + 1]; n];
    for (row, &yi) in a.iter().zip(y) {
        for i in 0..n {
            for j in 0..n {
                m[i][j] += row[i] / scale[i] * row[j] / scale[j];
            }
            m[i][n] += row[i] / scale[i] * yi;
        }
    }
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))?;
        if m[p][c].abs() < 1e-9 {
            return None;
        }
        m.swap(c, p);
        let pivot = m[c].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (x, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..n).map(|i| m[i][n] / m[i][i] / scale[i]).collect())
}

/// Least squares with every unknown at least 0 (no part of the work costs less than
/// nothing): solve, and while an unknown comes out negative, hold the most negative at 0 and
/// solve for the others again (an active set; a handful of unknowns). None if singular.
pub(super) fn nonnegative_least_squares(a: &[Vec<f64>], y: &[f64]) -> Option<Vec<f64>> {
    let n = a.first()?.len();
    let mut free: Vec<usize> = (0..n).collect();
    loop {
        let sub: Vec<Vec<f64>> = a
            .iter()
            .map(|row| free.iter().map(|&j| row[j]).collect())
            .collect();
        let x = least_squares(&sub, y)?;
        let worst = x
            .iter()
            .enumerate()
            .filter(|(_, v)| **v < 0.0)
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i);
        match worst {
            Some(i) => {
                free.remove(i);
            }
            None => {
                let mut full = vec![0.0; n];
                for (&j, v) in free.iter().zip(x) {
                    full[j] = v;
                }
                return Some(full);
            }
        }
    }
}

pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_squares_recovers_exact_coefficients() {
        let x = [3.0, 0.5, 200.0];
        let a: Vec<Vec<f64>> = [
            [10.0, 15_000.0, 5.0],
            [20.0, 10_000.0, 9.0],
            [7.0, 700.0, 30.0],
            [1.0, 60.0, 1.0],
        ]
        .iter()
        .map(|r| r.to_vec())
        .collect();
        let y: Vec<f64> = a.iter().map(|r| dot(r, &x)).collect();
        let got = least_squares(&a, &y).unwrap();
        for (g, w) in got.iter().zip(x) {
            assert!((g - w).abs() < 1e-6 * w.abs().max(1.0), "{got:?}");
        }
        assert!(least_squares(&[vec![1.0, 2.0], vec![2.0, 4.0]], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn no_part_comes_out_negative() {
        // y = 2 a − 0.3 b: plain least squares finds b negative; held at 0, a alone explains
        // what it can (a·y / a·a).
        let a: Vec<Vec<f64>> = [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 5.0]]
            .iter()
            .map(|r| r.to_vec())
            .collect();
        let y: Vec<f64> = a.iter().map(|r| dot(r, &[2.0, -0.3])).collect();
        assert!((least_squares(&a, &y).unwrap()[1] + 0.3).abs() < 1e-9);
        let x = nonnegative_least_squares(&a, &y).unwrap();
        assert_eq!(x[1], 0.0);
        let alone = dot(&[1.0, 2.0, 3.0, 4.0], &y) / 30.0;
        assert!((x[0] - alone).abs() < 1e-9, "{x:?}");
        // Where nothing goes negative, the same as least squares.
        let y: Vec<f64> = a.iter().map(|r| dot(r, &[1.0, 0.5])).collect();
        let x = nonnegative_least_squares(&a, &y).unwrap();
        assert!(
            (x[0] - 1.0).abs() < 1e-9 && (x[1] - 0.5).abs() < 1e-9,
            "{x:?}"
        );
    }
}
