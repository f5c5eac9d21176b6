//! The distribution over (labeled) trees by definition: every labeled tree
//! with its probability `p(d) = w(d) / Z`, and expectations, covariances with
//! the arc indicators and pair marginals as sums over the list.

use spantree_core::{Matrix, Rooting, Scalar};

use crate::LabeledWeights;

/// One labeled tree of positive weight and its probability.
#[derive(Clone, Debug, PartialEq)]
pub struct LabeledTree<S> {
    /// `heads[m]`: the head of word `m` (`heads[0]` unused).
    pub heads: Vec<usize>,
    /// `labels[m]`: the label of word `m`'s arc (`labels[0]` unused; `0` when unlabeled).
    pub labels: Vec<usize>,
    /// `p(d) = w(d) / Z`.
    pub probability: S,
}

impl<S> LabeledTree<S> {
    /// The arcs `(h, m, ℓ)` of the tree, `m = 1..=n`.
    pub fn arcs(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        (1..self.heads.len()).map(|m| (self.heads[m], m, self.labels[m]))
    }

    /// Whether the tree holds `h → m` (with label `ℓ` when given).
    pub fn has(&self, h: usize, m: usize, label: Option<usize>) -> bool {
        self.heads[m] == h && label.is_none_or(|l| self.labels[m] == l)
    }
}

/// Every labeled tree of a graph with its probability, in any scalar (exact
/// in rationals). `O(|labels|^n (n+1)^(n−1))` trees: for `n ≤ 6`.
///
/// ```
/// use spantree_bruteforce::{Distribution, LabeledWeights};
/// use spantree_core::{Matrix, Rooting};
/// // Trees {0→1, 0→2}, {0→1, 1→2}, {0→2, 2→1} of weights 2, 3, 8.
/// let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
/// let d = Distribution::new(&LabeledWeights::new(vec![w]), Rooting::Multi).unwrap();
/// assert_eq!(d.trees().len(), 3);
/// // E[number of root arcs] = (2·2 + 3 + 8) / 13.
/// let roots = d.expect(|t| t.arcs().filter(|a| a.0 == 0).count() as f64);
/// assert!((roots - 15.0 / 13.0).abs() < 1e-15);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Distribution<S> {
    n: usize,
    labels: usize,
    trees: Vec<LabeledTree<S>>,
}

impl<S: Scalar> Distribution<S> {
    /// The distribution of a labeled graph; `None` when it has no tree.
    pub fn new(weights: &LabeledWeights<S>, rooting: Rooting) -> Option<Self> {
        let mut trees = Vec::new();
        let mut z = S::zero();
        weights.for_each_labeled_tree(rooting, |heads, labels, w| {
            z += &w;
            trees.push(LabeledTree {
                heads: heads.to_vec(),
                labels: labels.to_vec(),
                probability: w,
            });
        });
        if z.is_zero() {
            return None;
        }
        for t in &mut trees {
            t.probability /= &z;
        }
        Some(Distribution {
            n: weights.n(),
            labels: weights.label_count(),
            trees,
        })
    }

    /// The number of words.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The number of labels.
    pub fn labels(&self) -> usize {
        self.labels
    }

    /// Every labeled tree of positive probability.
    pub fn trees(&self) -> &[LabeledTree<S>] {
        &self.trees
    }

    /// `E[f] = Σ_d p(d) f(d)`.
    pub fn expect(&self, f: impl Fn(&LabeledTree<S>) -> S) -> S {
        let mut total = S::zero();
        for t in &self.trees {
            total += &(t.probability.clone() * f(t));
        }
        total
    }

    /// `Cov[f, 1_{(h→m, ℓ)}] = E[f 1_{hmℓ}] − E[f] μ_{hmℓ}` for every labeled
    /// arc, one matrix per label: the derivative `∂E[f]/∂θ_{hmℓ}` of the
    /// expectation of a function that does not depend on `θ`.
    pub fn covariance_with_arcs(&self, f: impl Fn(&LabeledTree<S>) -> S) -> Vec<Matrix<S>> {
        let mean = self.expect(&f);
        let mut g = vec![Matrix::zeros(self.n + 1, self.n + 1); self.labels];
        for t in &self.trees {
            let centred = t.probability.clone() * (f(t) - mean.clone());
            for (h, m, l) in t.arcs() {
                g[l][(h, m)] += &centred;
            }
        }
        g
    }

    /// Label marginals `μ[ℓ][(h, m)] = P((h → m, ℓ) ∈ d)`.
    pub fn label_marginals(&self) -> Vec<Matrix<S>> {
        let mut mu = vec![Matrix::zeros(self.n + 1, self.n + 1); self.labels];
        for t in &self.trees {
            for (h, m, l) in t.arcs() {
                mu[l][(h, m)] += &t.probability;
            }
        }
        mu
    }

    /// Arc marginals `μ[(h, m)] = P(h → m ∈ d)`, whatever the label.
    pub fn marginals(&self) -> Matrix<S> {
        let mut mu = Matrix::zeros(self.n + 1, self.n + 1);
        for t in &self.trees {
            for (h, m, _) in t.arcs() {
                mu[(h, m)] += &t.probability;
            }
        }
        mu
    }
}
