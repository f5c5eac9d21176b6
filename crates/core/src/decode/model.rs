//! Decoding questions asked of a [`Model`]: its mode, its minimum-Bayes-risk
//! tree, the probability of a given tree and the min-entropy.

use super::{decode_scores, finish_tree, Additive, OrderedGroup};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::graph::Rooting;
use crate::model::Model;
use crate::scalar::Scalar;
use crate::tree::Tree;

impl<E: Engine> Model<E> {
    fn source_graph(&self) -> Result<&crate::Graph<f64>> {
        self.graph()
            .ok_or(Error::Unsupported("decoding (no f64 graph)"))
    }

    /// The mode of the distribution: the highest-weight tree of the model's
    /// rooting, labeled on labeled graphs; see [`Graph::best_tree`](crate::Graph::best_tree).
    /// `O(|labels| n²)`, no factorisation needed.
    ///
    /// # Errors
    /// [`Error::NoSpanningTree`]; [`Error::Unsupported`] for models built
    /// without an `f64` graph ([`Model::from_scalar_graph`]).
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::ShiftedF64;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let model = Model::new(ShiftedF64, &g, Rooting::Multi)?;
    /// // Trees {0→1, 0→2}: 2, {0→1, 1→2}: 3, {0→2, 2→1}: 8.
    /// assert_eq!(model.best_tree()?.heads(), &[2, 0]);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn best_tree(&self) -> Result<Tree> {
        self.source_graph()?.best_tree(self.rooting())
    }

    /// The minimum-Bayes-risk tree: the tree `d̂` of the model's rooting
    /// maximising the expected attachment score `(1/n) Σ_m μ(ĥ_m → m)`, that
    /// is the maximum spanning arborescence under the arc marginals (Gormley
    /// et al. 2015); on labeled graphs the labeled attachment score, under the
    /// label marginals, giving `(head, label)` per word. Only arcs the graph
    /// allows are used (models without an `f64` graph: arcs of non-zero
    /// marginal). `O(n³)` for the marginals, then `O(|labels| n²)`.
    ///
    /// # Errors
    /// As [`Model::marginals`].
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::ShiftedF64;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let model = Model::new(ShiftedF64, &g, Rooting::Multi)?;
    /// let mbr = model.mbr_tree()?;
    /// let best = model.best_tree()?;
    /// let eas = |t: &spantree_core::Tree| model.expected_attachment(t.heads(), None);
    /// assert!(eas(&mbr)? >= eas(&best)?);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn mbr_tree(&self) -> Result<Tree> {
        let mu = self.label_marginals()?;
        let n = self.n();
        let n1 = n + 1;
        let rooting = self.rooting();
        let graph = self.graph();
        let labeled = mu.len() > 1;
        let allowed = |h: usize, m: usize| match graph {
            Some(g) => g.is_allowed(h, m),
            None => mu.iter().any(|ml| !ml[(h, m)].is_zero()),
        };
        // The best label of an allowed arc and its marginal, first maximum.
        let best = |h: usize, m: usize| {
            if !allowed(h, m) {
                return None;
            }
            let mut best: Option<(Additive<E::Scalar>, usize)> = None;
            for (l, ml) in mu.iter().enumerate() {
                let s = Additive(ml[(h, m)].clone());
                if best
                    .as_ref()
                    .is_none_or(|(b, _)| s.compare(b) == std::cmp::Ordering::Greater)
                {
                    best = Some((s, l));
                }
            }
            best
        };
        let cell = |h: usize, m: usize| best(h, m).map(|(s, _)| s);
        let heads = match graph {
            Some(g) => decode_scores(n, rooting, cell, || g.spanning_tree(rooting))?,
            None => {
                let support: Vec<Vec<f64>> = (0..n1)
                    .map(|h| {
                        (0..n1)
                            .map(|m| f64::from(u8::from(m != 0 && h != m && allowed(h, m))))
                            .collect()
                    })
                    .collect();
                let tree = crate::Graph::from_weights(&support)?.spanning_tree(rooting);
                decode_scores(n, rooting, cell, || tree)?
            }
        };
        finish_tree(n, labeled, heads, |h, m| best(h, m).map_or(0, |(_, l)| l))
    }

    /// `ln p(d) = Σ_{e ∈ d} θ_e − ln Z`: `-∞` for a tree that uses a
    /// forbidden arc or, under single-root models, has several root children.
    /// A labeled tree is scored with its labels; an unlabeled tree on a
    /// labeled graph gets the probability of all its labelings together.
    /// `O(n)` after `ln Z`.
    ///
    /// # Errors
    /// [`Error::Mismatch`] for a tree of another length, [`Error::NoSuchArc`]
    /// for a label beyond the graph's; [`Error::NoSpanningTree`] when `Z = 0`;
    /// as [`Model::log_partition`]; [`Error::Unsupported`] without an `f64` graph.
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting, Tree};
    /// use spantree_faer::ShiftedF64;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let model = Model::new(ShiftedF64, &g, Rooting::Multi)?;
    /// let lp = model.log_probability(&Tree::new(vec![2, 0])?)?;
    /// assert!((lp - (8.0f64 / 13.0).ln()).abs() < 1e-12);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn log_probability(&self, tree: &Tree) -> Result<f64> {
        let graph = self.source_graph()?;
        let score = tree.score(graph)?;
        graph
            .spanning_tree(self.rooting())
            .map_err(Error::NoSpanningTree)?;
        let ln_z = self.log_partition()?;
        if self.rooting() == Rooting::Single && tree.root_children().len() != 1 {
            return Ok(f64::NEG_INFINITY);
        }
        Ok(score - ln_z)
    }

    /// The min-entropy `H_∞ = −ln max_d p(d) = ln Z − θ(d̂)`, the limit of the
    /// Rényi entropies as `α → ∞` ([`Model::renyi_entropy`] with `α = ∞`
    /// calls this): one decoding, `O(|labels| n²)`, and `ln Z`.
    ///
    /// # Errors
    /// As [`Model::best_tree`] and [`Model::log_partition`].
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::ShiftedF64;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let h = Model::new(ShiftedF64, &g, Rooting::Multi)?.min_entropy()?;
    /// assert!((h - (13.0f64 / 8.0).ln()).abs() < 1e-12);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn min_entropy(&self) -> Result<f64> {
        let best = self.best_tree()?;
        // `+ 0.0` turns the −0 of a one-tree distribution into 0.
        Ok(-self.log_probability(&best)? + 0.0)
    }
}
