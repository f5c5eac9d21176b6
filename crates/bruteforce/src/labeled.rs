//! Labeled graphs by definition: a labeled tree gives every word a head and
//! a label, its weight is the product of its arcs' per-label weights.

use spantree_core::{Matrix, Rooting, Scalar};

use crate::enumerate::for_each_tree;

/// Per-label weights of a labeled graph: one `(n+1) × (n+1)` matrix per label,
/// `labels[ℓ][(h, m)] = w(h → m, ℓ)`.
#[derive(Clone, Debug, PartialEq)]
pub struct LabeledWeights<S> {
    labels: Vec<Matrix<S>>,
}

impl<S: Scalar> LabeledWeights<S> {
    /// Weights from one matrix per label.
    ///
    /// # Panics
    /// If there is no label, or the matrices are not all `(n+1) × (n+1)` with `n ≥ 1`.
    pub fn new(labels: Vec<Matrix<S>>) -> Self {
        assert!(!labels.is_empty(), "a labeled graph needs a label");
        let rows = labels[0].rows();
        assert!(rows >= 2, "weights must have at least one word");
        for l in &labels {
            assert!(
                l.rows() == rows && l.cols() == rows,
                "label matrices must be square and agree"
            );
        }
        LabeledWeights { labels }
    }

    /// The number of words `n`.
    pub fn n(&self) -> usize {
        self.labels[0].rows() - 1
    }

    /// The number of labels.
    pub fn label_count(&self) -> usize {
        self.labels.len()
    }

    /// The weight matrix of label `l`.
    pub fn label(&self, l: usize) -> &Matrix<S> {
        &self.labels[l]
    }

    /// The collapsed weights `Σ_ℓ w(h → m, ℓ)`.
    pub fn collapsed(&self) -> Matrix<S> {
        let mut total = self.labels[0].clone();
        for l in &self.labels[1..] {
            for (t, w) in total.as_mut_slice().iter_mut().zip(l.as_slice()) {
                *t += w;
            }
        }
        total
    }

    /// The values as `rows[h][m][ℓ]`, the input layout of
    /// `spantree_core::Graph::from_labeled_weights`.
    pub fn rows(&self) -> Vec<Vec<Vec<S>>> {
        let n = self.n();
        (0..=n)
            .map(|h| {
                (0..=n)
                    .map(|m| self.labels.iter().map(|l| l[(h, m)].clone()).collect())
                    .collect()
            })
            .collect()
    }

    /// Calls `visit(tree_heads, labels_of_words, weight)` on every labeled
    /// tree of positive weight: every tree of the support, times every
    /// assignment of a label to each word (`|labels|^n` of them).
    pub fn for_each_labeled_tree(
        &self,
        rooting: Rooting,
        mut visit: impl FnMut(&[usize], &[usize], S),
    ) {
        let n = self.n();
        let k = self.label_count();
        let allowed = |h: usize, m: usize| self.labels.iter().any(|l| !l[(h, m)].is_zero());
        for_each_tree(n, rooting, allowed, |tree| {
            let heads = tree.heads();
            // An odometer over label vectors; index 0 is unused.
            let mut labels = vec![0usize; n + 1];
            loop {
                let mut w = S::one();
                for m in 1..=n {
                    w *= &self.labels[labels[m]][(heads[m], m)];
                }
                if !w.is_zero() {
                    visit(heads, &labels, w);
                }
                let Some(m) = (1..=n).find(|&m| labels[m] + 1 < k) else {
                    break;
                };
                labels[m] += 1;
                for l in &mut labels[1..m] {
                    *l = 0;
                }
            }
        });
    }

    /// `Z = Σ_{labeled trees} Π_{e} w(e, ℓ_e)`; `0` when there is none.
    ///
    /// ```
    /// use spantree_bruteforce::LabeledWeights;
    /// use spantree_core::{Matrix, Rooting};
    /// // One word, two labels on 0 → 1: two labeled trees.
    /// let a = Matrix::from_row_major(2, 2, vec![0.0, 2.0, 0.0, 0.0]);
    /// let b = Matrix::from_row_major(2, 2, vec![0.0, 5.0, 0.0, 0.0]);
    /// assert_eq!(LabeledWeights::new(vec![a, b]).partition(Rooting::Single), 7.0);
    /// ```
    pub fn partition(&self, rooting: Rooting) -> S {
        let mut z = S::zero();
        self.for_each_labeled_tree(rooting, |_, _, w| z += w);
        z
    }

    /// Label marginals `μ[ℓ][(h, m)] = Σ_{labeled d ∋ (h→m, ℓ)} w(d) / Z`,
    /// one matrix per label; `None` when `Z = 0`.
    pub fn label_marginals(&self, rooting: Rooting) -> Option<Vec<Matrix<S>>> {
        let n = self.n();
        let mut z = S::zero();
        let mut mass = vec![Matrix::zeros(n + 1, n + 1); self.label_count()];
        self.for_each_labeled_tree(rooting, |heads, labels, w| {
            for m in 1..=n {
                mass[labels[m]][(heads[m], m)] += &w;
            }
            z += w;
        });
        if z.is_zero() {
            return None;
        }
        for x in mass.iter_mut().flat_map(|m| m.as_mut_slice()) {
            *x /= &z;
        }
        Some(mass)
    }
}
