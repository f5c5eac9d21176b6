//! Seeded random graphs in the `(n+1) × (n+1)` layout of `spantree-core`
//! (row `0` is the root; column `0` and the diagonal do not exist), so that
//! every failing test reproduces from its seed. No dependency: a SplitMix64
//! generator (Steele, Lea & Flood 2014) is all a test needs.

use spantree_core::Matrix;

/// The SplitMix64 generator: 64 bits of state, full period, good enough for tests.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator from a seed; equal seeds give equal streams.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, from the top 53 bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform_in(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Uniform in `0..k` (`k ≥ 1`); the modulo bias is irrelevant for tests.
    pub fn below(&mut self, k: usize) -> usize {
        (self.next_u64() % k as u64) as usize
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// A standard normal draw (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]: the logarithm stays finite
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// A uniformly random permutation of the words that fixes the root:
    /// `p[0] = 0` and `p[1..=n]` is a shuffle of `1..=n` (Fisher–Yates).
    pub fn word_permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..=n).collect();
        for i in (2..=n).rev() {
            let j = 1 + self.below(i);
            p.swap(i, j);
        }
        p
    }
}

/// Whether arc `h → m` exists in the layout (not into the root, not a self-loop).
pub fn exists(h: usize, m: usize) -> bool {
    m != 0 && h != m
}

/// Scores `θ ~ N(0, σ²)` on every existing arc, each arc forbidden (`-∞`)
/// with probability `forbid`; `-∞` on column `0` and the diagonal.
pub fn normal_scores(rng: &mut SplitMix64, n: usize, sigma: f64, forbid: f64) -> Matrix<f64> {
    Matrix::from_fn(n + 1, n + 1, |h, m| {
        if !exists(h, m) || (forbid > 0.0 && rng.chance(forbid)) {
            f64::NEG_INFINITY
        } else {
            sigma * rng.normal()
        }
    })
}

/// Scores uniform in `[-bound, bound)` on every existing arc (the extreme-scale case).
pub fn uniform_scores(rng: &mut SplitMix64, n: usize, bound: f64) -> Matrix<f64> {
    Matrix::from_fn(n + 1, n + 1, |h, m| {
        if exists(h, m) {
            rng.uniform_in(-bound, bound)
        } else {
            f64::NEG_INFINITY
        }
    })
}

/// Weights `w = e^θ` of scores (`0` for `-∞`).
pub fn weights_of(scores: &Matrix<f64>) -> Matrix<f64> {
    scores.map(|&s| if s == f64::NEG_INFINITY { 0.0 } else { s.exp() })
}

/// Scores `θ = ln w` of weights (`-∞` for `0`).
pub fn scores_of(weights: &Matrix<f64>) -> Matrix<f64> {
    weights.map(|&w| w.ln())
}

/// Log-normal weights `e^θ`, `θ ~ N(0, σ²)`, each arc `0` with probability `forbid`.
pub fn normal_weights(rng: &mut SplitMix64, n: usize, sigma: f64, forbid: f64) -> Matrix<f64> {
    weights_of(&normal_scores(rng, n, sigma, forbid))
}

/// Weights `10^u`, `u` uniform in `[-decades, decades)`, on every existing
/// arc: `decades = 300` spans `1e-300` to `1e300` within one column.
pub fn extreme_weights(rng: &mut SplitMix64, n: usize, decades: f64) -> Matrix<f64> {
    Matrix::from_fn(n + 1, n + 1, |h, m| {
        if exists(h, m) {
            10f64.powf(rng.uniform_in(-decades, decades))
        } else {
            0.0
        }
    })
}

/// All existing arcs of weight `1`: every tree has weight 1, so `Z` counts trees.
pub fn unit_weights(n: usize) -> Matrix<f64> {
    Matrix::from_fn(n + 1, n + 1, |h, m| if exists(h, m) { 1.0 } else { 0.0 })
}

/// The same weights with every root arc set to `0` (no tree at all).
pub fn without_root(weights: &Matrix<f64>) -> Matrix<f64> {
    Matrix::from_fn(weights.rows(), weights.cols(), |h, m| {
        if h == 0 {
            0.0
        } else {
            weights[(h, m)]
        }
    })
}

/// Multiplies column `m` (every arc into word `m`) by `factors[m]`
/// (`factors[0]` is ignored).
pub fn scale_columns(weights: &Matrix<f64>, factors: &[f64]) -> Matrix<f64> {
    Matrix::from_fn(weights.rows(), weights.cols(), |h, m| {
        weights[(h, m)] * if m == 0 { 1.0 } else { factors[m] }
    })
}

/// Relabels the words: node `v` becomes `perm[v]` (with `perm[0] = 0`), so
/// the result has `out[perm[h]][perm[m]] = a[h][m]`.
pub fn permuted<S: Clone>(a: &Matrix<S>, perm: &[usize]) -> Matrix<S> {
    let mut inverse = vec![0; perm.len()];
    for (v, &p) in perm.iter().enumerate() {
        inverse[p] = v;
    }
    Matrix::from_fn(a.rows(), a.cols(), |i, j| {
        a[(inverse[i], inverse[j])].clone()
    })
}

/// The rows of a matrix, the input layout of `spantree_core::Graph` constructors.
pub fn rows<S: Clone>(a: &Matrix<S>) -> Vec<Vec<S>> {
    (0..a.rows()).map(|i| a.row(i).to_vec()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_draws_have_mean_zero_and_unit_variance() {
        let mut rng = SplitMix64::new(7);
        let k = 100_000;
        let xs: Vec<f64> = (0..k).map(|_| rng.normal()).collect();
        let mean = xs.iter().sum::<f64>() / k as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / k as f64;
        // Standard errors: 1/√k ≈ 0.003 for the mean, √(2/k) ≈ 0.0045 for the variance.
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((var - 1.0).abs() < 0.03, "variance {var}");
    }

    #[test]
    fn permutations_fix_the_root_and_are_bijections() {
        let mut rng = SplitMix64::new(3);
        for n in 1..10 {
            let p = rng.word_permutation(n);
            assert_eq!(p[0], 0);
            let mut sorted = p.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..=n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn permuted_moves_entries() {
        let a = Matrix::from_fn(3, 3, |i, j| 10 * i + j);
        let b = permuted(&a, &[0, 2, 1]);
        assert_eq!(b[(2, 1)], a[(1, 2)]);
        assert_eq!(b[(0, 2)], a[(0, 1)]);
    }
}
