//! The `K` best trees, exactly, both rootings, labeled or not.
//!
//! # Algorithm
//!
//! Lawler's (1972) partitioning scheme as Camerini, Fratta & Maffioli (1980)
//! apply it to arborescences, with the root constraint handled as Zmigrod,
//! Vieira & Cotterell (2021, "On finding the K-best non-projective
//! dependency trees") do: inside every subproblem, by a decoder that is
//! itself exact under the constraint. A subproblem is the set of trees that
//! contain some *required* arcs (one per fixed word) and avoid some
//! *excluded* arcs; its best tree is the maximum arborescence of the graph
//! restricted accordingly ([`max_arborescence`](super::max_arborescence)'s
//! decoder, `O(|labels| n²)`, single-root by its exact lexicographic
//! reweighting). When the best tree `d` of a subproblem `S` is output, `S ∖ {d}`
//! is split into disjoint subproblems: for the free words `m₁ < m₂ < …` of
//! `S`, the `i`-th requires `d`'s arcs into `m₁ … m_{i−1}` and excludes `d`'s
//! arc into `m_i`. Every tree of `S` other than `d` lies in exactly one of
//! them (the first free word where it differs from `d`), so a priority queue
//! of the subproblems' best trees yields the trees of the rooting in
//! non-increasing order of score, each once.
//!
//! Labeled graphs are handled as multigraphs: an arc is `(h, m, ℓ)`, a
//! subproblem excludes labeled arcs, and its decoder takes the best label
//! that is not excluded, so `(head, label)` lists come out ranked.
//!
//! Cost: `O(|labels| n²)` once for the best label of every arc, then `K`
//! outputs, each splitting into at most `n` subproblems decoded in `O(n²)`
//! (plus `O(|labels|)` per excluded labeled arc): `O(|labels| n² + K n³)`
//! time and `O(K n²)` memory for the queue's constraints. This is not yet
//! Camerini et al.'s `O(K n²)`, which finds the best tree of each child from
//! the parent's contractions instead of decoding it afresh. Measured
//! (`crates/bench/benches/sample.rs`, release, `N(0, 1)` scores): `K = 1`
//! costs one decode (0.19 ms multi-root, 0.28 ms single-root at `n = 100`);
//! `K = 10` 33 ms / 80 ms and `K = 100` 0.25 s / 0.47 s at `n = 100`;
//! `K = 100` 12 ms / 33 ms at `n = 36`.
//!
//! # Ties
//!
//! Subproblems with equal best scores leave the queue in the order they
//! entered it, and every decoder call breaks ties as documented in the
//! [decoder](super): the list is a deterministic function of the scores.
//! Among equal scores the order is not lexicographic.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{decode_scores, Additive, Multiplicative, OrderedGroup};
use crate::engine::Engine;
use crate::error::{Error, NoTree, Result};
use crate::graph::{Graph, Potentials, Rooting};
use crate::model::Model;
use crate::scalar::Scalar;
use crate::tree::Tree;

/// One entry of a k-best list.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked<G> {
    /// `heads[i]`: the head of word `i + 1`.
    pub heads: Vec<usize>,
    /// `labels[i]`: the label of word `i + 1` (all `0` when unlabeled).
    pub labels: Vec<usize>,
    /// The tree's score: the arc scores combined by the group operation.
    pub score: G,
}

#[derive(Clone)]
struct Subproblem {
    /// Per word (0-based), the required `(head, label)`.
    fixed: Vec<Option<(usize, usize)>>,
    /// Per word, the excluded `(head, label)`s.
    excluded: Vec<Vec<(usize, usize)>>,
}

struct Entry<G> {
    best: Ranked<G>,
    order: usize,
    sub: Subproblem,
}

impl<G: OrderedGroup> PartialEq for Entry<G> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<G: OrderedGroup> Eq for Entry<G> {}
impl<G: OrderedGroup> PartialOrd for Entry<G> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<G: OrderedGroup> Ord for Entry<G> {
    /// Higher score first; on ties, the earlier subproblem.
    fn cmp(&self, other: &Self) -> Ordering {
        self.best
            .score
            .compare(&other.best.score)
            .then_with(|| other.order.cmp(&self.order))
    }
}

/// The `k` highest-scoring trees of `rooting` over `n` words with `labels`
/// labels, where `score(h, m, ℓ)` is the score of arc `h → m` with label `ℓ`
/// (`None`: forbidden; asked for `h ∈ 0..=n`, `m ∈ 1..=n`, `h ≠ m`), in
/// non-increasing order of score; fewer when fewer trees exist. Algorithm,
/// cost `O(|labels| n² + k n³)` and ties: [module docs](self).
///
/// # Errors
/// [`Error::NoSpanningTree`] when no tree of the rooting exists (`k ≥ 1`).
///
/// ```
/// use spantree_core::decode::kbest::k_best_arborescences;
/// use spantree_core::Rooting;
/// // Root arcs score 10 and 9, 1 → 2 scores 1, 2 → 1 scores 0.
/// let s = [[None, Some(10.0), Some(9.0)], [None, None, Some(1.0)], [None, Some(0.0), None]];
/// let list = k_best_arborescences(2, 1, Rooting::Multi, 5, |h, m, _| s[h][m])?;
/// let heads: Vec<_> = list.iter().map(|r| (r.heads.clone(), r.score)).collect();
/// assert_eq!(heads, vec![(vec![0, 0], 19.0), (vec![0, 1], 11.0), (vec![2, 0], 9.0)]);
/// # Ok::<(), spantree_core::Error>(())
/// ```
pub fn k_best_arborescences<G: OrderedGroup>(
    n: usize,
    labels: usize,
    rooting: Rooting,
    k: usize,
    score: impl Fn(usize, usize, usize) -> Option<G>,
) -> Result<Vec<Ranked<G>>> {
    if n == 0 {
        return Err(Error::Empty);
    }
    if k == 0 {
        return Ok(Vec::new());
    }
    let root = Subproblem {
        fixed: vec![None; n],
        excluded: vec![Vec::new(); n],
    };
    let table = Table::new(n, labels, score);
    let first = table.solve(rooting, &root)?;
    let mut heap = BinaryHeap::new();
    let mut order = 0;
    heap.push(Entry {
        best: first,
        order,
        sub: root,
    });
    let mut out = Vec::with_capacity(k.min(1024));
    while let Some(Entry { best, sub, .. }) = heap.pop() {
        if out.len() + 1 == k {
            out.push(best);
            break;
        }
        let mut prefix = sub.clone();
        for m in 0..n {
            if sub.fixed[m].is_some() {
                continue;
            }
            let arc = (best.heads[m], best.labels[m]);
            let mut child = prefix.clone();
            child.excluded[m].push(arc);
            if let Ok(b) = table.solve(rooting, &child) {
                order += 1;
                heap.push(Entry {
                    best: b,
                    order,
                    sub: child,
                });
            }
            prefix.fixed[m] = Some(arc);
        }
        out.push(best);
    }
    Ok(out)
}

/// The arc scores, and per arc its best label, computed once.
struct Table<G, F> {
    n: usize,
    labels: usize,
    score: F,
    /// `[m][h]`: the best score over labels and the first label reaching it.
    best: Vec<Option<(G, usize)>>,
}

impl<G: OrderedGroup, F: Fn(usize, usize, usize) -> Option<G>> Table<G, F> {
    fn new(n: usize, labels: usize, score: F) -> Self {
        let n1 = n + 1;
        let mut t = Table {
            n,
            labels,
            score,
            best: vec![None; n1 * n1],
        };
        for m in 1..n1 {
            for h in (0..n1).filter(|&h| h != m) {
                t.best[m * n1 + h] = t.best_label(h, m, &[]);
            }
        }
        t
    }

    /// The best label of `h → m` not in `excluded`, first maximum.
    fn best_label(&self, h: usize, m: usize, excluded: &[(usize, usize)]) -> Option<(G, usize)> {
        let mut best: Option<(G, usize)> = None;
        for l in 0..self.labels {
            if excluded.contains(&(h, l)) {
                continue;
            }
            if let Some(s) = (self.score)(h, m, l) {
                if best
                    .as_ref()
                    .is_none_or(|(b, _)| s.compare(b) == Ordering::Greater)
                {
                    best = Some((s, l));
                }
            }
        }
        best
    }

    /// The best tree of a subproblem: `O(n²)` plus `O(|labels|)` per
    /// excluded arc, and the decoder's `O(n²)`.
    fn solve(&self, rooting: Rooting, sub: &Subproblem) -> Result<Ranked<G>> {
        let n = self.n;
        let n1 = n + 1;
        let mut arcs = self.best.clone();
        for m in 1..n1 {
            let i = m - 1;
            let row = &mut arcs[m * n1..(m + 1) * n1];
            if let Some((h, l)) = sub.fixed[i] {
                row.iter_mut().for_each(|x| *x = None);
                row[h] = (self.score)(h, m, l).map(|s| (s, l));
            } else {
                for &(h, _) in &sub.excluded[i] {
                    row[h] = self.best_label(h, m, &sub.excluded[i]);
                }
            }
        }
        // `arcs` is `[m][h]`: the arcs into `m` contiguous. The reason is only
        // needed for the unconstrained problem; the caller on a graph supplies it.
        let cell = |h: usize, m: usize| arcs[m * n1 + h].as_ref().map(|(s, _)| s.clone());
        let heads = decode_scores(n, rooting, cell, || Err(NoTree::NoRootArc))?;
        let mut total = G::identity();
        let mut labels = Vec::with_capacity(n);
        for (i, &h) in heads.iter().enumerate() {
            let (s, l) = arcs[(i + 1) * n1 + h]
                .as_ref()
                .expect("decoded arcs are allowed");
            total = total.combine(s);
            labels.push(*l);
        }
        Ok(Ranked {
            heads,
            labels,
            score: total,
        })
    }
}

fn graph_k_best<W: Scalar, G: OrderedGroup>(
    graph: &Graph<W>,
    rooting: Rooting,
    k: usize,
    value: impl Fn(&W) -> Option<G>,
) -> Result<Vec<(Tree, G)>> {
    let list = k_best_arborescences(graph.n(), graph.labels(), rooting, k, |h, m, l| {
        value(&graph.values(h, m)[l])
    })
    .map_err(|e| match e {
        Error::NoSpanningTree(_) => match graph.spanning_tree(rooting) {
            Err(reason) => Error::NoSpanningTree(reason),
            Ok(()) => e,
        },
        e => e,
    })?;
    list.into_iter()
        .map(|r| {
            let tree = if graph.is_labeled() {
                Tree::with_labels(r.heads, r.labels)?
            } else {
                Tree::new(r.heads)?
            };
            Ok((tree, r.score))
        })
        .collect()
}

impl Graph<f64> {
    /// The `k` highest-scoring trees of `rooting` with their scores
    /// `Σ_{e ∈ d} θ_e` (weights by their logarithm), in non-increasing order;
    /// fewer when the graph has fewer trees. Labeled graphs rank labeled
    /// trees. The first is [`Graph::best_tree`]. Algorithm, ties and cost
    /// `O(|labels| n² + k n³)`: [`kbest`](crate::decode::kbest).
    ///
    /// # Errors
    /// [`Error::NoSpanningTree`], with the reason of [`Graph::spanning_tree`].
    ///
    /// ```
    /// use spantree_core::{Graph, Rooting};
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let list = g.k_best(Rooting::Multi, 10)?;
    /// let heads: Vec<&[usize]> = list.iter().map(|(t, _)| t.heads()).collect();
    /// // Trees {0→2, 2→1}: 8, {0→1, 1→2}: 3, {0→1, 0→2}: 2; only three exist.
    /// assert_eq!(heads, vec![&[2, 0][..], &[0, 1], &[0, 0]]);
    /// assert!((list[0].1 - 8f64.ln()).abs() < 1e-15);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn k_best(&self, rooting: Rooting, k: usize) -> Result<Vec<(Tree, f64)>> {
        let scores = self.potentials() == Potentials::Scores;
        graph_k_best(self, rooting, k, |&v| {
            let s = if scores { v } else { v.ln() };
            (s > f64::NEG_INFINITY).then_some(s)
        })
    }
}

impl<W: Scalar> Graph<W> {
    /// As [`Graph::k_best`], in the graph's own number type: weights ranked
    /// by their products (the tree weight `w(d)`, exact on exact rationals),
    /// scores by their sums.
    ///
    /// # Errors
    /// As [`Graph::k_best`].
    ///
    /// ```
    /// use spantree_core::{Graph, Rooting};
    /// use spantree_exact::Rational;
    /// let w = |x: i32| Rational::from(x);
    /// let g = Graph::from_weights(&[[w(0), w(3), w(2)], [w(0), w(0), w(2)], [w(0), w(5), w(0)]])?;
    /// let list = g.k_best_exact(Rooting::Single, 5)?;
    /// let weights: Vec<_> = list.into_iter().map(|(_, w)| w).collect();
    /// assert_eq!(weights, vec![w(10), w(6)]);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn k_best_exact(&self, rooting: Rooting, k: usize) -> Result<Vec<(Tree, W)>> {
        match self.potentials() {
            Potentials::Weights => graph_k_best(self, rooting, k, |v: &W| {
                (!v.is_zero()).then(|| Multiplicative(v.clone()))
            })
            .map(|l| l.into_iter().map(|(t, s)| (t, s.0)).collect()),
            Potentials::Scores => graph_k_best(self, rooting, k, |v: &W| {
                (v.to_f64() > f64::NEG_INFINITY).then(|| Additive(v.clone()))
            })
            .map(|l| l.into_iter().map(|(t, s)| (t, s.0)).collect()),
        }
    }
}

impl<E: Engine> Model<E> {
    /// The `k` best trees of the model's graph and rooting with their scores;
    /// see [`Graph::k_best`]. `O(|labels| n² + k n³)`, no factorisation needed.
    ///
    /// # Errors
    /// As [`Graph::k_best`]; [`Error::Unsupported`] for models built without
    /// an `f64` graph.
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::Accurate;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let model = Model::new(Accurate, &g, Rooting::Single)?;
    /// let list = model.k_best(3)?;
    /// assert_eq!(list.len(), 2);
    /// assert_eq!(list[0].0, model.best_tree()?);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn k_best(&self, k: usize) -> Result<Vec<(Tree, f64)>> {
        self.graph()
            .ok_or(Error::Unsupported("k-best (no f64 graph)"))?
            .k_best(self.rooting(), k)
    }
}
