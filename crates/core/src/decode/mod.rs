//! Decoding: the best tree, the minimum-Bayes-risk tree, and projective trees.
//!
//! # Maximum spanning arborescence in `O(n²)`
//!
//! [`max_arborescence`] (and [`Graph::best_tree`], [`Graph::best_tree_exact`])
//! find a tree `d` maximising `Σ_{e ∈ d} θ_e` by Chu–Liu–Edmonds in Tarjan's
//! (1977) dense formulation, with the expansion phase of Camerini, Fratta &
//! Maffioli (1979), which corrects Tarjan's:
//!
//! 1. *Contraction.* Grow a path backwards from an unfinished node by taking
//!    each node's best incoming arc among the current (contracted) nodes. If
//!    the arc comes from a finished node (the root, or a node whose path
//!    already reached it) the whole path is finished. If it comes from a node
//!    on the path, the path closes a cycle `C`: contract `C` into one node,
//!    give an arc `x → C` the score `max_{v ∈ C} θ(x → v) − θ(in(v))` (the
//!    arc it would replace) and an arc `C → y` the score `max_{v ∈ C} θ(v → y)`,
//!    and continue the path from `C`. Every node is created once and scans
//!    one row of incoming arcs, and contracting a `k`-cycle merges `k` rows
//!    in `O(k n)`: `O(n²)` in all, on a dense `(n+1)²` matrix. (Rows stay
//!    indexed by the original heads; arcs from inside a node are skipped when
//!    its row is scanned, so the outgoing arcs `C → y` need no update and
//!    every pass over the matrix is contiguous.)
//! 2. *Expansion.* The contractions form a forest. Take the chosen arc of
//!    every forest root; an arc entering word `m` of a contracted node breaks
//!    the cycle arc into every node on the forest path from `m` up to that
//!    root, whose other children become roots in turn (Camerini et al.'s
//!    bookkeeping, `O(n)`).
//!
//! The algorithm only adds, subtracts and compares scores, so it runs on any
//! totally ordered abelian group ([`OrderedGroup`]): `f64` scores by `+`/`−`,
//! weights in any [`Scalar`] by `×`/`÷` ([`Multiplicative`]; exact on exact
//! rationals), and the lexicographic pairs below. Forbidden arcs (`−∞`
//! scores, zero weights) are absent, not scored: the decoder never returns a
//! tree that uses one. When no tree exists, the error is
//! [`Error::NoSpanningTree`] with the reason of [`Graph::spanning_tree`].
//!
//! `Graph<f64>::best_tree` runs an `f64` specialisation of the same
//! algorithm that makes the same choices in the same order, so both give
//! identical trees (tested on random graphs with ties and forbidden arcs):
//! one dense matrix of the arcs into each node with `−∞` for forbidden arcs,
//! a fresh row per contracted node (the member rows' element-wise maximum,
//! vectorised), the dependent behind a contracted node's arc recovered only
//! for the arc it takes, and one workspace per thread reused across calls.
//! The generic decoder serves exact and other number types, and `f64`
//! scores so large (`|θ| (2n + 2) > f64::MAX`) that reduced scores could
//! overflow.
//!
//! Measured on `N(0, 1)` scores at `n = 10, 36, 100, 200, 1000`, two cores
//! shared with other builds at load 7–9, CPU time per call
//! (`cargo run --release -p spantree-bench --example mst_median`; the
//! medians of wall time and criterion's means include the waits):
//! multi-root 1.0, 2.2, 17, 55 µs and 2.2 ms, single-root 0.9, 4.5, 25,
//! 83 µs and 3.0 ms; fitted slopes over `n ≥ 100` 2.14 and 2.11 (criterion,
//! `cargo bench -p spantree-bench --bench decode -- best_tree/`: 2.02 and
//! 2.22). The generic path before the specialisation: 1.2, 2.7, 28, 77 µs
//! and 4.0 ms; 1.5, 8.6, 48, 193 µs and 10.5 ms. Peers on the same matrices
//! (`crates/bench/peers/mst_peer.py`, unconstrained rooting, same maximum at
//! every `n`, CPU time): `ufal.chu_liu_edmonds` (TurboParser's C++) 4.7, 14,
//! 304, 1044 µs and 69 ms; a numba port of this algorithm 4.0, 3.1, 23,
//! 56 µs and 10.7 ms.
//!
//! # The single-root constraint
//!
//! Following Stanojević & Cohen (2021), single-root trees are decoded by
//! reweighting the root arcs, but exactly: every arc gets the pair
//! `(−[h = 0], θ_e)`, compared lexicographically ([`Lex`]). `ℤ × G` with the
//! lexicographic order is again a totally ordered abelian group, and the
//! correctness proof of Chu–Liu–Edmonds uses nothing but the group axioms and
//! a total order compatible with them (adding a constant to all arcs entering
//! one node shifts every tree by the same constant). So the decoder returns a
//! tree maximising `(−r(d), θ(d))`, where `r(d) ≥ 1` is the number of root
//! children: it first minimises `r(d)`, and since a single-root tree exists
//! (checked first, combinatorially) the minimum is `1`; among single-root
//! trees it then maximises `θ(d)`. This is the "subtract a large constant from
//! every root arc" trick with an infinitely large constant, and hence free of
//! the precision loss a finite constant causes in floating point. It keeps
//! `O(n²)`, as Gabow & Tarjan (1984) and Zmigrod, Vieira & Cotterell (2020,
//! "Please mind the root") achieve by other means.
//!
//! # Ties
//!
//! Whenever two candidates compare equal, the one at the smaller node number
//! wins: a node's best incoming arc is the first maximum in the order
//! `0, 1, …, n` of its original head; a contracted node's arc from `x` comes
//! from the member with the smallest number among the maximisers (a
//! contracted node is numbered by its smallest word); unfinished words are
//! started in increasing order; a labeled arc takes its smallest maximising
//! label. The output is thus a deterministic function of the scores, and it
//! is a maximiser however many there are.
//!
//! # Minimum Bayes risk
//!
//! The tree maximising the expected attachment score
//! `E[(1/n) Σ_m 1(h_m = ĥ_m)] = (1/n) Σ_m μ(ĥ_m → m)` is the maximum spanning
//! arborescence under the arc marginals (labeled: label marginals), see
//! [`Model::mbr_tree`](crate::Model::mbr_tree).
//!
//! # Projective trees
//!
//! [`projective`]: Eisner's (1996) `O(n³)` chart over one semiring-generic
//! implementation: the best projective tree, projective `ln Z`, arc
//! marginals, entropy and its gradient, tree counts.
//!
//! # Sampling and k-best
//!
//! [`sample`]: exact samplers for both rootings (conditional marginals with
//! rank-one updates, Wilson's walk, single-root by an exact root-child draw),
//! reproducible from `(seed, sentence id)`. [`kbest`]: the `K` best trees
//! under the exact root constraint, labeled or not.

use std::cmp::Ordering;
use std::fmt::Debug;

use crate::error::{Error, NoTree, Result};
use crate::graph::{Graph, Potentials, Rooting};
use crate::scalar::{Scalar, Sign};
use crate::tree::Tree;

mod fast;
pub mod kbest;
mod model;
pub mod projective;
pub mod sample;

/// A totally ordered abelian group: what the maximum-arborescence decoder
/// needs of a score (Chu–Liu–Edmonds only combines, removes and compares).
///
/// The order must be compatible with the operation
/// (`a ≤ b ⇒ a ∘ c ≤ b ∘ c`).
pub trait OrderedGroup: Clone + Debug {
    /// The neutral element (`0` for scores, `1` for weights).
    fn identity() -> Self;
    /// The group operation `a ∘ b` (`+` for scores, `×` for weights).
    fn combine(&self, other: &Self) -> Self;
    /// `a ∘ b⁻¹` (`−` for scores, `÷` for weights).
    fn remove(&self, other: &Self) -> Self;
    /// The total order.
    fn compare(&self, other: &Self) -> Ordering;
}

/// `f64` scores under `+`. Validated graphs hold no NaN; `−∞` is not a
/// group element: forbidden arcs are passed as `None`.
impl OrderedGroup for f64 {
    fn identity() -> Self {
        0.0
    }
    fn combine(&self, other: &Self) -> Self {
        self + other
    }
    fn remove(&self, other: &Self) -> Self {
        self - other
    }
    fn compare(&self, other: &Self) -> Ordering {
        self.partial_cmp(other).unwrap_or(Ordering::Equal)
    }
}

/// Values of any [`Scalar`] under `+`, ordered by the sign of the difference
/// (exact for exact rationals).
#[derive(Clone, Debug, PartialEq)]
pub struct Additive<S>(pub S);

impl<S: Scalar> OrderedGroup for Additive<S> {
    fn identity() -> Self {
        Additive(S::zero())
    }
    fn combine(&self, other: &Self) -> Self {
        Additive(self.0.clone() + other.0.clone())
    }
    fn remove(&self, other: &Self) -> Self {
        Additive(self.0.clone() - other.0.clone())
    }
    fn compare(&self, other: &Self) -> Ordering {
        sign_order((self.0.clone() - other.0.clone()).sign())
    }
}

/// Positive weights of any [`Scalar`] under `×`, ordered by the sign of the
/// difference: decoding exact rationals this way is exact.
#[derive(Clone, Debug, PartialEq)]
pub struct Multiplicative<S>(pub S);

impl<S: Scalar> OrderedGroup for Multiplicative<S> {
    fn identity() -> Self {
        Multiplicative(S::one())
    }
    fn combine(&self, other: &Self) -> Self {
        Multiplicative(self.0.clone() * other.0.clone())
    }
    fn remove(&self, other: &Self) -> Self {
        Multiplicative(self.0.clone() / other.0.clone())
    }
    fn compare(&self, other: &Self) -> Ordering {
        sign_order((self.0.clone() - other.0.clone()).sign())
    }
}

fn sign_order(s: Sign) -> Ordering {
    match s {
        Sign::Negative => Ordering::Less,
        Sign::Zero => Ordering::Equal,
        Sign::Positive => Ordering::Greater,
    }
}

/// The lexicographic pair `(major, minor)` of `ℤ × G`: compared by `major`
/// first. With `major = −[h = 0]` it enforces the single-root constraint
/// exactly (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq)]
pub struct Lex<G> {
    /// The dominant component.
    pub major: i64,
    /// The component compared on ties of `major`.
    pub minor: G,
}

impl<G: OrderedGroup> OrderedGroup for Lex<G> {
    fn identity() -> Self {
        Lex {
            major: 0,
            minor: G::identity(),
        }
    }
    fn combine(&self, other: &Self) -> Self {
        Lex {
            major: self.major + other.major,
            minor: self.minor.combine(&other.minor),
        }
    }
    fn remove(&self, other: &Self) -> Self {
        Lex {
            major: self.major - other.major,
            minor: self.minor.remove(&other.minor),
        }
    }
    fn compare(&self, other: &Self) -> Ordering {
        self.major
            .cmp(&other.major)
            .then_with(|| self.minor.compare(&other.minor))
    }
}

/// The maximum spanning arborescence of the complete graph on `0..=n` with
/// arc scores `score(h, m)` (`None`: forbidden; asked for `h ∈ 0..=n`,
/// `m ∈ 1..=n`, `h ≠ m`), for either rooting. Returns the heads, `heads[i]`
/// the head of word `i + 1`.
///
/// Tarjan's (1977) dense Chu–Liu–Edmonds with Camerini et al.'s (1979)
/// expansion; single root by exact lexicographic reweighting (Stanojević &
/// Cohen 2021). Ties as documented in the [module docs](self). `O(n²)` time
/// and memory.
///
/// # Errors
/// [`Error::NoSpanningTree`] with the reason [`Graph::spanning_tree`] gives
/// when the allowed arcs form no tree of the rooting.
///
/// ```
/// use spantree_core::{decode::max_arborescence, Rooting};
/// // Root arcs score 10 and 9; 1 → 2 scores 1, 2 → 1 scores 0.
/// let s = [[None, Some(10.0), Some(9.0)], [None, None, Some(1.0)], [None, Some(0.0), None]];
/// let score = |h: usize, m: usize| s[h][m];
/// assert_eq!(max_arborescence(2, Rooting::Multi, score)?, vec![0, 0]);
/// assert_eq!(max_arborescence(2, Rooting::Single, score)?, vec![0, 1]);
/// # Ok::<(), spantree_core::Error>(())
/// ```
pub fn max_arborescence<G: OrderedGroup>(
    n: usize,
    rooting: Rooting,
    score: impl Fn(usize, usize) -> Option<G>,
) -> Result<Vec<usize>> {
    if n == 0 {
        return Err(Error::Empty);
    }
    let n1 = n + 1;
    decode_scores(n, rooting, &score, || {
        let rows: Vec<Vec<f64>> = (0..n1)
            .map(|h| {
                (0..n1)
                    .map(|m| f64::from(u8::from(m != 0 && h != m && score(h, m).is_some())))
                    .collect()
            })
            .collect();
        match Graph::from_weights(&rows) {
            Ok(g) => g.spanning_tree(rooting),
            Err(_) => Err(NoTree::NoRootArc),
        }
    })
}

/// The `[m][h]` matrix (row `m`: the arcs into node `m`) of `cell(h, m)` for
/// the arcs that exist, visiting `(h, m)` in tiles so that inputs stored
/// `[h][m]` are read and the transpose written within cache.
fn fill<T: Clone>(n1: usize, mut cell: impl FnMut(usize, usize) -> Option<T>) -> Vec<Option<T>> {
    const TILE: usize = 32;
    let mut out = vec![None; n1 * n1];
    for h0 in (0..n1).step_by(TILE) {
        for m0 in (1..n1).step_by(TILE) {
            for h in h0..(h0 + TILE).min(n1) {
                for m in m0..(m0 + TILE).min(n1) {
                    if h != m {
                        out[m * n1 + h] = cell(h, m);
                    }
                }
            }
        }
    }
    out
}

/// The incoming-arc matrix of Chu–Liu–Edmonds: values `[m][h]` (forbidden
/// arcs hold the identity, never read), whether each arc exists, and every
/// word's best incoming arc (head, score), found while filling.
type Packed<T> = (Vec<T>, Vec<bool>, Vec<Option<(usize, T)>>);

/// As [`fill`], packed for Chu–Liu–Edmonds: half the memory traffic of
/// `Option<f64>`, and each word's first scan done on the way (memory traffic
/// is what the decoder spends its time on at `n = 1000`).
fn fill_packed<T: OrderedGroup>(
    n1: usize,
    mut cell: impl FnMut(usize, usize) -> Option<T>,
) -> Packed<T> {
    const TILE: usize = 32;
    let mut vals = vec![T::identity(); n1 * n1];
    let mut ok = vec![false; n1 * n1];
    let mut first: Vec<Option<(usize, T)>> = vec![None; n1];
    for h0 in (0..n1).step_by(TILE) {
        for m0 in (1..n1).step_by(TILE) {
            for h in h0..(h0 + TILE).min(n1) {
                for m in m0..(m0 + TILE).min(n1) {
                    if h != m {
                        if let Some(v) = cell(h, m) {
                            // `h` grows along every column, so the first
                            // maximum in head order wins, as in a row scan.
                            if first[m]
                                .as_ref()
                                .is_none_or(|(_, b)| v.compare(b) == Ordering::Greater)
                            {
                                first[m] = Some((h, v.clone()));
                            }
                            vals[m * n1 + h] = v;
                            ok[m * n1 + h] = true;
                        }
                    }
                }
            }
        }
    }
    (vals, ok, first)
}

/// Decodes the arc scores `cell(h, m)` (`None`: forbidden). Chu–Liu–Edmonds
/// itself detects the absence of a tree (a node left without incoming arc,
/// or more than one root child under the lexicographic order), so the
/// combinatorial test `explain` (which gives the reason of
/// [`Graph::spanning_tree`]) only runs on failure.
pub(crate) fn decode_scores<G: OrderedGroup>(
    n: usize,
    rooting: Rooting,
    mut cell: impl FnMut(usize, usize) -> Option<G>,
    explain: impl FnOnce() -> std::result::Result<(), NoTree>,
) -> Result<Vec<usize>> {
    let n1 = n + 1;
    let heads = match rooting {
        Rooting::Multi => chu_liu_edmonds(n, fill_packed(n1, cell)),
        Rooting::Single => {
            let lex = fill_packed(n1, |h, m| {
                cell(h, m).map(|minor| Lex {
                    major: -i64::from(h == 0),
                    minor,
                })
            });
            chu_liu_edmonds(n, lex).filter(|heads| heads.iter().filter(|&&h| h == 0).count() == 1)
        }
    };
    match heads {
        Some(heads) => Ok(heads),
        // Chu–Liu–Edmonds fails exactly when no tree exists; the fallback
        // reason is unreachable.
        None => Err(Error::NoSpanningTree(
            explain().err().unwrap_or(NoTree::NoRootArc),
        )),
    }
}

pub(crate) const NONE: usize = usize::MAX;

/// A node of the contraction forest: a word, or a contracted cycle.
struct ForestNode<G> {
    parent: usize,
    children: Vec<usize>,
    /// The original arc `(head, dependent)` chosen to enter this node, and
    /// its score in the graph where it was chosen.
    in_arc: (usize, usize),
    in_score: Option<G>,
}

/// Chu–Liu–Edmonds on the incoming-arc matrix `inc[m][h]` (row-major,
/// `(n+1)²`), root `0`. `None` when some node has no incoming arc.
///
/// Every current node owns one row, indexed by the *original* source node:
/// the row of a contracted node `C` holds, for every original `x`, the best
/// reduced score of an arc from `x` into a member. Arcs whose source now
/// lies inside the node itself are skipped when the row is scanned (through
/// `slot_of`), so a contraction only merges the members' rows, contiguously,
/// and never touches the columns: `O(k n)` per `k`-cycle, `O(n²)` in all.
fn chu_liu_edmonds<G: OrderedGroup>(
    n: usize,
    (mut inc, mut ok, mut first): Packed<G>,
) -> Option<Vec<usize>> {
    let n1 = n + 1;
    // The original dependent of the arc behind `inc[a][x]` (its head is `x`):
    // `a` itself until slot `a` holds a contracted node, then `dep[a][x]`.
    let mut dep: Vec<Vec<u32>> = vec![Vec::new(); n1];
    let mut forest: Vec<ForestNode<G>> = (0..n1)
        .map(|_| ForestNode {
            parent: NONE,
            children: Vec::new(),
            in_arc: (0, 0),
            in_score: None,
        })
        .collect();
    // Slots: a contracted node lives in the smallest slot of its members.
    // `slot_of[x]`: the slot of the current node holding original node `x`.
    let mut slot_of: Vec<usize> = (0..n1).collect();
    // The members of slot `c`: a list from `c` through `next_member`, with
    // its last element in `last_member[c]` (no allocation per node).
    let mut next_member = vec![NONE; n1];
    let mut last_member: Vec<usize> = (0..n1).collect();
    let mut node_of_slot: Vec<usize> = (0..n1).collect();
    let mut finished = vec![false; n1];
    finished[0] = true;
    let mut on_path = vec![false; n1];
    let mut path: Vec<usize> = Vec::new();
    let mut new_row: Vec<Option<G>> = vec![None; n1];
    let mut new_dep: Vec<u32> = vec![0; n1];

    for start in 1..n1 {
        if node_of_slot[start] == NONE || finished[start] {
            continue;
        }
        let mut a = start;
        loop {
            // The best incoming arc of `a`: the first maximum in the order of
            // the original head.
            // A word is scanned once, uncontracted, when only its diagonal
            // is inside it: `first` already holds the answer.
            let (x, s) = if node_of_slot[a] == a {
                first[a].take()?
            } else {
                let row = &inc[a * n1..(a + 1) * n1];
                let row_ok = &ok[a * n1..(a + 1) * n1];
                let mut best: Option<(usize, &G)> = None;
                for (x, (s, &allowed)) in row.iter().zip(row_ok).enumerate() {
                    if allowed
                        && slot_of[x] != a
                        && best.is_none_or(|(_, b)| s.compare(b) == Ordering::Greater)
                    {
                        best = Some((x, s));
                    }
                }
                let (x, s) = best?;
                (x, s.clone())
            };
            let u = slot_of[x];
            let node = node_of_slot[a];
            let m = if dep[a].is_empty() {
                a
            } else {
                dep[a][x] as usize
            };
            forest[node].in_arc = (x, m);
            forest[node].in_score = Some(s);
            on_path[a] = true;
            path.push(a);
            if finished[u] {
                for &p in &path {
                    finished[p] = true;
                    on_path[p] = false;
                }
                path.clear();
                break;
            }
            if !on_path[u] {
                a = u;
                continue;
            }
            // The path closed a cycle from `u` to `a`: contract it.
            let at = path.iter().position(|&p| p == u).expect("u is on the path");
            let mut cycle: Vec<usize> = path.split_off(at);
            cycle.sort_unstable();
            let c = cycle[0];
            let id = forest.len();
            forest.push(ForestNode {
                parent: NONE,
                children: cycle.iter().map(|&v| node_of_slot[v]).collect(),
                in_arc: (0, 0),
                in_score: None,
            });
            for &v in &cycle {
                forest[node_of_slot[v]].parent = id;
            }
            // Arcs x → C: the best over members v of θ(x → v) − θ(in(v)),
            // ties to the smallest member.
            new_row.iter_mut().for_each(|x| *x = None);
            for &v in &cycle {
                let in_v = forest[node_of_slot[v]]
                    .in_score
                    .clone()
                    .expect("cycle members have an incoming arc");
                let base = v * n1;
                for x in 0..n1 {
                    if !ok[base + x] {
                        continue;
                    }
                    let s = &inc[base + x];
                    let cand = s.remove(&in_v);
                    if new_row[x]
                        .as_ref()
                        .is_none_or(|b| cand.compare(b) == Ordering::Greater)
                    {
                        new_row[x] = Some(cand);
                        new_dep[x] = if dep[v].is_empty() {
                            v as u32
                        } else {
                            dep[v][x]
                        };
                    }
                }
            }
            for &v in &cycle[1..] {
                next_member[last_member[c]] = v;
                last_member[c] = last_member[v];
            }
            let mut x = c;
            while x != NONE {
                slot_of[x] = c;
                // Arcs from inside the cycle are self-loops of C now.
                new_row[x] = None;
                x = next_member[x];
            }
            for x in 0..n1 {
                match new_row[x].take() {
                    Some(g) => {
                        inc[c * n1 + x] = g;
                        ok[c * n1 + x] = true;
                    }
                    None => ok[c * n1 + x] = false,
                }
            }
            dep[c] = std::mem::replace(&mut new_dep, vec![0; n1]);
            for &v in &cycle[1..] {
                dep[v] = Vec::new();
            }
            for &v in &cycle {
                on_path[v] = false;
                node_of_slot[v] = NONE;
            }
            node_of_slot[c] = id;
            a = c;
        }
    }

    // Expansion (Camerini et al. 1979): every forest root keeps its arc, which
    // breaks the cycle arcs on the forest path down to its dependent.
    let mut heads = vec![NONE; n];
    let mut stack: Vec<usize> = (1..forest.len())
        .filter(|&x| forest[x].parent == NONE)
        .collect();
    while let Some(x) = stack.pop() {
        let (h, m) = forest[x].in_arc;
        heads[m - 1] = h;
        let mut y = m;
        while y != x {
            let p = forest[y].parent;
            stack.extend(forest[p].children.iter().copied().filter(|&c| c != y));
            y = p;
        }
    }
    debug_assert!(heads.iter().all(|&h| h != NONE));
    Some(heads)
}

/// The best label of arc `h → m` under `value` and its index (`None`:
/// every label forbidden); ties to the smallest label.
fn best_label<W: Scalar, G: OrderedGroup>(
    graph: &Graph<W>,
    h: usize,
    m: usize,
    value: &impl Fn(&W) -> Option<G>,
) -> Option<(G, usize)> {
    let mut best: Option<(G, usize)> = None;
    for (l, v) in graph.values(h, m).iter().enumerate() {
        if let Some(s) = value(v) {
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

/// Per arc, the best label's value and its index (`None`: forbidden), both
/// `[m][h]` (the arcs into `m` contiguous).
pub(crate) fn best_labels<W: Scalar, G: OrderedGroup>(
    graph: &Graph<W>,
    value: impl Fn(&W) -> Option<G>,
) -> (Vec<Option<G>>, Vec<usize>) {
    let n1 = graph.n() + 1;
    let mut labels = vec![0; n1 * n1];
    let scores = fill(n1, |h, m| {
        best_label(graph, h, m, &value).map(|(s, l)| {
            labels[m * n1 + h] = l;
            s
        })
    });
    (scores, labels)
}

fn decode_graph<W: Scalar, G: OrderedGroup>(
    graph: &Graph<W>,
    rooting: Rooting,
    value: impl Fn(&W) -> Option<G>,
) -> Result<Tree> {
    let heads = if graph.labels() == 1 {
        // One value per arc: read in place, no label bookkeeping.
        decode_scores(
            graph.n(),
            rooting,
            |h, m| value(&graph.values(h, m)[0]),
            || graph.spanning_tree(rooting),
        )?
    } else {
        decode_scores(
            graph.n(),
            rooting,
            |h, m| best_label(graph, h, m, &value).map(|(s, _)| s),
            || graph.spanning_tree(rooting),
        )?
    };
    finish_tree(graph.n(), graph.is_labeled(), heads, |h, m| {
        best_label(graph, h, m, &value).map_or(0, |(_, l)| l)
    })
}

/// The tree of `heads`, labeled by `label(h, m)` when `labeled`.
pub(crate) fn finish_tree(
    n: usize,
    labeled: bool,
    heads: Vec<usize>,
    label: impl Fn(usize, usize) -> usize,
) -> Result<Tree> {
    if !labeled {
        return Tree::new(heads);
    }
    debug_assert_eq!(heads.len(), n);
    let ls = heads
        .iter()
        .enumerate()
        .map(|(i, &h)| label(h, i + 1))
        .collect();
    Tree::with_labels(heads, ls)
}

/// A score as a log-space score (`None`: forbidden).
///
/// Scores and weights get two functions, not one closure that tests the
/// potentials: given `if scores { v } else { v.ln() }`, the compiler
/// computes the logarithm of every value speculatively (a third of the
/// decoder's instructions, and `errno` work for negative scores).
pub(crate) fn log_score_of_score(v: &f64) -> Option<f64> {
    (*v > f64::NEG_INFINITY).then_some(*v)
}

/// A weight as a log-space score (`None`: forbidden, weight `0`).
pub(crate) fn log_score_of_weight(v: &f64) -> Option<f64> {
    (*v > 0.0).then(|| v.ln())
}

impl Graph<f64> {
    /// The highest-scoring tree of `rooting` (maximum spanning arborescence),
    /// in `f64` log space: scores as given, weights by their logarithm, so
    /// weights from `1e-300` to `1e300` decode as easily as scores. A labeled
    /// graph decodes to the best label of every arc, giving `(head, label)`
    /// per word. Algorithm, root constraint and ties: [module docs](crate::decode).
    /// `O(|labels| n² )`.
    ///
    /// # Errors
    /// [`Error::NoSpanningTree`], with the reason of [`Graph::spanning_tree`].
    ///
    /// ```
    /// use spantree_core::{Graph, Rooting};
    /// let ninf = f64::NEG_INFINITY;
    /// // Both words prefer the root; a single root forces 1 → 2 or 2 → 1.
    /// let g = Graph::from_scores(&[[ninf, 5.0, 4.0], [ninf, ninf, 1.0], [ninf, 0.0, ninf]])?;
    /// assert_eq!(g.best_tree(Rooting::Multi)?.heads(), &[0, 0]);
    /// let t = g.best_tree(Rooting::Single)?;
    /// assert_eq!(t.heads(), &[0, 1]);
    /// assert_eq!(t.score(&g)?, 6.0);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn best_tree(&self, rooting: Rooting) -> Result<Tree> {
        match self.potentials() {
            // A validated graph's arc scores are the log-space scores (no
            // NaN; `−∞` forbidden): copied as they are.
            Potentials::Scores => decode_f64(self, rooting, log_score_of_score, |v| *v),
            Potentials::Weights => decode_f64(self, rooting, log_score_of_weight, |v| {
                log_score_of_weight(v).unwrap_or(f64::NEG_INFINITY)
            }),
        }
    }
}

/// [`decode_graph`] for `f64` log-space scores on the specialised decoder
/// (`fast`), which makes the same choices; the generic decoder takes over
/// only for scores so large that reduced scores could overflow. `raw` is
/// `value` with `−∞` for `None`, on the values of arcs.
fn decode_f64(
    graph: &Graph<f64>,
    rooting: Rooting,
    value: impl Fn(&f64) -> Option<f64> + Copy,
    raw: impl Fn(&f64) -> f64,
) -> Result<Tree> {
    let n = graph.n();
    let n1 = n + 1;
    let outcome = if graph.labels() == 1 {
        let values = graph.raw_values();
        fast::decode(n, rooting, |h, m0, out| {
            let row = &values[h * n1 + m0..h * n1 + m0 + out.len()];
            for (o, v) in out.iter_mut().zip(row) {
                *o = raw(v);
            }
        })
    } else {
        fast::decode(n, rooting, |h, m0, out| {
            for (j, o) in out.iter_mut().enumerate() {
                *o = best_label(graph, h, m0 + j, &value).map_or(f64::NEG_INFINITY, |(s, _)| s);
            }
        })
    };
    let heads = match outcome {
        fast::Outcome::Heads(heads) => heads,
        fast::Outcome::NoTree => {
            return Err(Error::NoSpanningTree(
                graph
                    .spanning_tree(rooting)
                    .err()
                    .unwrap_or(NoTree::NoRootArc),
            ))
        }
        fast::Outcome::TooLarge => return decode_graph(graph, rooting, value),
    };
    finish_tree(n, graph.is_labeled(), heads, |h, m| {
        best_label(graph, h, m, &value).map_or(0, |(_, l)| l)
    })
}

impl<W: Scalar> Graph<W> {
    /// The highest-weight tree of `rooting`, decoded in the graph's own
    /// number type: weights by `×`/`÷` ([`Multiplicative`]), scores by `+`/`−`
    /// ([`Additive`]). On exact rationals every comparison is exact, so the
    /// tree's weight is exactly the maximum. Otherwise as [`Graph::best_tree`]
    /// (prefer that one for `f64` weights, whose ratios can underflow here).
    /// `O(|labels| n²)` operations of `W`.
    ///
    /// # Errors
    /// As [`Graph::best_tree`].
    ///
    /// ```
    /// use spantree_core::{Graph, Rooting};
    /// use spantree_exact::Rational;
    /// let w = |x: i32| Rational::from(x);
    /// let g = Graph::from_weights(&[
    ///     [w(0), w(3), w(2)],
    ///     [w(0), w(0), w(2)],
    ///     [w(0), w(5), w(0)],
    /// ])?;
    /// // Single-root trees: {0→1, 1→2} of weight 3·2 = 6, {0→2, 2→1} of 2·5 = 10.
    /// let t = g.best_tree_exact(Rooting::Single)?;
    /// assert_eq!(t.heads(), &[2, 0]);
    /// assert_eq!(t.weight(&g)?, w(10));
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn best_tree_exact(&self, rooting: Rooting) -> Result<Tree> {
        match self.potentials() {
            Potentials::Weights => decode_graph(self, rooting, |v: &W| {
                (!v.is_zero()).then(|| Multiplicative(v.clone()))
            }),
            Potentials::Scores => decode_graph(self, rooting, |v: &W| {
                (v.to_f64() > f64::NEG_INFINITY).then(|| Additive(v.clone()))
            }),
        }
    }
}
