//! Enumeration of the trees of a graph, and every tree quantity by its definition.
//!
//! Nothing here is clever: `Z` is the sum of the tree weights, a marginal is
//! the share of `Z` held by the trees that contain the arc. The only economy
//! is to build head assignments word by word, skipping forbidden arcs and
//! abandoning an assignment as soon as it closes a cycle or gives the root a
//! second child (single-root), so that `n = 7` (`8^7` head vectors) stays
//! practical.

use spantree_core::{log_sum_exp, Matrix, Rooting, Scalar};

/// Marks a word whose head is not chosen yet.
const UNSET: usize = usize::MAX;

/// A spanning tree (arborescence) of a sentence graph, as the head of every word.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tree {
    /// `heads[m]` for `m ∈ 1..=n`; `heads[0]` is unused and `0`.
    heads: Vec<usize>,
}

impl Tree {
    /// A tree from its head vector (`heads[0]` is ignored).
    ///
    /// # Panics
    /// If `heads` is not a tree: a head out of range, a self-loop or a cycle.
    pub fn from_heads(mut heads: Vec<usize>) -> Tree {
        let n = heads.len().saturating_sub(1);
        heads[0] = 0;
        for m in 1..=n {
            assert!(heads[m] <= n && heads[m] != m, "bad head for word {m}");
            let mut x = heads[m];
            for _ in 0..=n {
                if x == 0 {
                    break;
                }
                x = heads[x];
            }
            assert_eq!(x, 0, "word {m} lies on a cycle");
        }
        Tree { heads }
    }

    /// The number of words `n`.
    pub fn n(&self) -> usize {
        self.heads.len() - 1
    }

    /// The head of word `m` (`0` for the root).
    pub fn head(&self, m: usize) -> usize {
        self.heads[m]
    }

    /// The head vector: index `m ∈ 1..=n` holds the head of word `m`, index `0` holds `0`.
    pub fn heads(&self) -> &[usize] {
        &self.heads
    }

    /// The arcs `(head, dependent)`, by dependent.
    pub fn arcs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (1..=self.n()).map(move |m| (self.heads[m], m))
    }

    /// How many words attach to the root.
    pub fn root_children(&self) -> usize {
        self.arcs().filter(|&(h, _)| h == 0).count()
    }

    /// The weight `Π_{h→m ∈ d} w[h][m]` in the `(n+1) × (n+1)` layout.
    pub fn weight<S: Scalar>(&self, weights: &Matrix<S>) -> S {
        let mut w = S::one();
        for (h, m) in self.arcs() {
            w *= &weights[(h, m)];
        }
        w
    }

    /// The score `Σ_{h→m ∈ d} θ[h][m]` in the `(n+1) × (n+1)` layout.
    pub fn score(&self, scores: &Matrix<f64>) -> f64 {
        self.arcs().map(|(h, m)| scores[(h, m)]).sum()
    }
}

/// Calls `visit` on every tree of `rooting` over `n` words whose arcs all
/// satisfy `allowed(h, m)` (asked only for `h ≠ m`, `m ≥ 1`).
///
/// Cost: at most `(n+1)^n` partial assignments, each checked in `O(n)`.
pub fn for_each_tree(
    n: usize,
    rooting: Rooting,
    mut allowed: impl FnMut(usize, usize) -> bool,
    mut visit: impl FnMut(&Tree),
) {
    let mut tree = Tree {
        heads: vec![UNSET; n + 1],
    };
    tree.heads[0] = 0;
    extend(1, rooting, 0, &mut tree, &mut allowed, &mut visit);
}

/// Chooses the head of word `m`, then of the words after it.
fn extend(
    m: usize,
    rooting: Rooting,
    root_children: usize,
    tree: &mut Tree,
    allowed: &mut dyn FnMut(usize, usize) -> bool,
    visit: &mut dyn FnMut(&Tree),
) {
    let n = tree.heads.len() - 1;
    if m > n {
        // Every word has a head and there is no cycle, so every word reaches the root.
        if rooting == Rooting::Multi || root_children == 1 {
            visit(tree);
        }
        return;
    }
    for h in 0..=n {
        if h == m || !allowed(h, m) {
            continue;
        }
        if h == 0 && rooting == Rooting::Single && root_children == 1 {
            continue;
        }
        if closes_cycle(&tree.heads, h, m) {
            continue;
        }
        tree.heads[m] = h;
        extend(
            m + 1,
            rooting,
            root_children + usize::from(h == 0),
            tree,
            allowed,
            visit,
        );
        tree.heads[m] = UNSET;
    }
}

/// Whether giving word `m` the head `h` closes a cycle, given that the heads
/// chosen so far form no cycle: walk up from `h` until the root, a word
/// without a head yet, or `m` itself.
fn closes_cycle(heads: &[usize], h: usize, m: usize) -> bool {
    let mut x = h;
    loop {
        if x == m {
            return true;
        }
        if x == 0 || heads[x] == UNSET {
            return false;
        }
        x = heads[x];
    }
}

/// The number of words of a weight matrix in the `(n+1) × (n+1)` layout.
///
/// # Panics
/// If the matrix is not square or has no word.
fn words<S>(weights: &Matrix<S>) -> usize {
    assert_eq!(weights.rows(), weights.cols(), "weights must be square");
    assert!(weights.rows() >= 2, "weights must have at least one word");
    weights.rows() - 1
}

/// Every tree of positive weight, in lexicographic order of head vectors.
///
/// # Panics
/// If `weights` is not `(n+1) × (n+1)` with `n ≥ 1`.
///
/// ```
/// use spantree_bruteforce::trees;
/// use spantree_core::{Matrix, Rooting};
/// let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
/// let heads: Vec<Vec<usize>> = trees(&w, Rooting::Multi).map(|t| t.heads()[1..].to_vec()).collect();
/// assert_eq!(heads, [vec![0, 0], vec![0, 1], vec![2, 0]]);
/// ```
pub fn trees<S: Scalar>(weights: &Matrix<S>, rooting: Rooting) -> std::vec::IntoIter<Tree> {
    let n = words(weights);
    let mut all = Vec::new();
    for_each_tree(
        n,
        rooting,
        |h, m| !weights[(h, m)].is_zero(),
        |t| all.push(t.clone()),
    );
    all.into_iter()
}

/// The number of trees of positive weight.
///
/// # Panics
/// As [`trees`].
pub fn count_trees<S: Scalar>(weights: &Matrix<S>, rooting: Rooting) -> u64 {
    let mut count = 0;
    for_each_tree(
        words(weights),
        rooting,
        |h, m| !weights[(h, m)].is_zero(),
        |_| count += 1,
    );
    count
}

/// The number of trees of the complete graph on `n` words (every arc allowed).
pub fn count_all_trees(n: usize, rooting: Rooting) -> u64 {
    let mut count = 0;
    for_each_tree(n, rooting, |_, _| true, |_| count += 1);
    count
}

/// `Z = Σ_d Π_{e∈d} w_e`; `0` when there is no tree.
///
/// # Panics
/// As [`trees`].
///
/// ```
/// use spantree_bruteforce::partition;
/// use spantree_core::{Matrix, Rooting};
/// let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
/// assert_eq!(partition(&w, Rooting::Multi), 1.0 * 2.0 + 1.0 * 3.0 + 2.0 * 4.0);
/// assert_eq!(partition(&w, Rooting::Single), 1.0 * 3.0 + 2.0 * 4.0);
/// ```
pub fn partition<S: Scalar>(weights: &Matrix<S>, rooting: Rooting) -> S {
    let mut z = S::zero();
    for_each_tree(
        words(weights),
        rooting,
        |h, m| !weights[(h, m)].is_zero(),
        |t| z += t.weight(weights),
    );
    z
}

/// Arc marginals `μ[h][m] = Σ_{d ∋ h→m} w(d) / Z` in the `(n+1) × (n+1)`
/// layout (column `0` and the diagonal are `0`); `None` when `Z = 0`.
///
/// # Panics
/// As [`trees`].
pub fn marginals<S: Scalar>(weights: &Matrix<S>, rooting: Rooting) -> Option<Matrix<S>> {
    let n = words(weights);
    let mut z = S::zero();
    let mut mass = Matrix::zeros(n + 1, n + 1);
    for_each_tree(
        n,
        rooting,
        |h, m| !weights[(h, m)].is_zero(),
        |t| {
            let w = t.weight(weights);
            for e in t.arcs() {
                mass[e] += &w;
            }
            z += w;
        },
    );
    if z.is_zero() {
        return None;
    }
    for x in mass.as_mut_slice() {
        *x /= &z;
    }
    Some(mass)
}

/// `∂Z/∂w_e = Σ_{d ∋ e} Π_{f ∈ d, f ≠ e} w_f` for every arc `e` (`Z` is
/// linear in each arc weight), also for arcs of weight `0` and when `Z = 0`;
/// `0` on column `0` and the diagonal.
///
/// Enumerates every tree of the complete graph: `O(n (n+1)^n)`, fine to `n = 7`.
///
/// # Panics
/// As [`trees`].
pub fn grad_partition<S: Scalar>(weights: &Matrix<S>, rooting: Rooting) -> Matrix<S> {
    let n = words(weights);
    let mut grad = Matrix::zeros(n + 1, n + 1);
    for_each_tree(
        n,
        rooting,
        |_, _| true,
        |t| {
            for e in t.arcs() {
                let mut others = S::one();
                for f in t.arcs().filter(|&f| f != e) {
                    others *= &weights[f];
                }
                grad[e] += others;
            }
        },
    );
    grad
}

/// `ln Z` from scores `θ = ln w` (`-∞` forbids an arc), as the log-sum-exp of
/// the tree scores: no weight is ever formed, so any score scale works.
/// `-∞` when there is no tree.
///
/// # Panics
/// As [`trees`].
pub fn log_partition_from_scores(scores: &Matrix<f64>, rooting: Rooting) -> f64 {
    let mut tree_scores = Vec::new();
    for_each_tree(
        words(scores),
        rooting,
        |h, m| scores[(h, m)] > f64::NEG_INFINITY,
        |t| tree_scores.push(t.score(scores)),
    );
    log_sum_exp(tree_scores)
}

/// Arc marginals from scores, `μ_e = Σ_{d ∋ e} exp(θ(d) − ln Z)`, for any
/// score scale; `None` when there is no tree.
///
/// # Panics
/// As [`trees`].
pub fn marginals_from_scores(scores: &Matrix<f64>, rooting: Rooting) -> Option<Matrix<f64>> {
    let log_z = log_partition_from_scores(scores, rooting);
    if log_z == f64::NEG_INFINITY {
        return None;
    }
    let n = words(scores);
    let mut mu = Matrix::zeros(n + 1, n + 1);
    for_each_tree(
        n,
        rooting,
        |h, m| scores[(h, m)] > f64::NEG_INFINITY,
        |t| {
            let p = (t.score(scores) - log_z).exp();
            for e in t.arcs() {
                mu[e] += p;
            }
        },
    );
    Some(mu)
}
