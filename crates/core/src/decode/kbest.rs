//! The `K` best trees, exactly, both rootings, labeled or not.
//!
//! # Algorithm
//!
//! Lawler's (1972) partitioning scheme as Camerini, Fratta & Maffioli (1980)
//! apply it to arborescences. A subproblem is the set of trees that contain
//! some *required* arcs (one per fixed word) and avoid some *excluded* arcs.
//!
//! [`k_best_arborescences`] follows Camerini et al. in `O(n²)` per tree: a
//! subproblem `S` whose best tree `A` has been output waits in a priority
//! queue with the score of its *second-best* tree, found without decoding
//! every alternative: one run of Chu–Liu–Edmonds on `S` that keeps every
//! contracted node's incoming row, then for every node `v` of every
//! contracted graph the best *swap*, exchanging `A`'s arc into `v` for the
//! best other arc into `v` that keeps a tree (its source outside `v`'s
//! subtree in `A`), both in `v`'s reduced scores. The best swap over all `v`
//! gives the second-best score `w(A) − δ` and an arc `e ∈ A` that the
//! second-best tree avoids (Camerini et al. 1980, Theorem 3). Popping `S`
//! outputs the best tree `B` of `S − e` (one decode) and replaces `S` by the
//! disjoint `S + e` (best tree `A`) and `S − e` (best tree `B`), each with its
//! own best swap: three `O(n²)` passes per output tree, `O(|labels| n² + K n²)`
//! time in all. The swap search runs with every arc of `A` given a
//! tie-breaking bonus compared after the score, which makes `A` the unique
//! maximiser and keeps the search exact when scores tie.
//!
//! The root constraint is handled as Zmigrod, Vieira & Cotterell (2021, "On
//! finding the K-best non-projective dependency trees") do, inside every
//! subproblem by a decoder exact under the constraint: here the decoder's
//! lexicographic pairs `(−[h = 0], θ)` (see [the decoder](super)), under
//! which every single-root tree ranks above every tree with more root
//! children. A subproblem's second-best value with more than one root child
//! thus means that no other single-root tree is left in it.
//!
//! [`k_best_arborescences_lawler`] is the plain scheme: when the best tree
//! `d` of `S` is output, `S ∖ {d}` splits, for the free words
//! `m₁ < m₂ < …` of `S`, into the subproblems that require `d`'s arcs into
//! `m₁ … m_{i−1}` and exclude `d`'s arc into `m_i`, each decoded afresh:
//! `O(|labels| n² + K n³)`. It is the reference the fast one is tested
//! against.
//!
//! Labeled graphs are handled as multigraphs: an arc is `(h, m, ℓ)`, a
//! subproblem excludes labeled arcs, and its decoder takes the best label
//! that is not excluded, so `(head, label)` lists come out ranked; the swap
//! search also considers each arc's second-best label.
//!
//! Measured (`cargo bench -p spantree-bench --bench kbest`, release,
//! `N(0, 1)` scores, a shared 2-core machine), milliseconds, swaps / plain
//! scheme:
//!
//! | rooting | `K` | `n = 10` | `n = 36` | `n = 100` |
//! |---|---|---|---|---|
//! | multi | 1 | 0.0026 | 0.010 | 0.085 |
//! | multi | 10 | 0.088 | 0.35 / 0.83 | 3.7 / 26 |
//! | multi | 100 | 1.6 | 4.2 / 8.3 | 39 / 180 |
//! | single | 1 | 0.0028 | 0.019 | 0.11 |
//! | single | 10 | 0.12 | 0.85 / 2.2 | 7.1 / 41 |
//! | single | 100 | 1.4 | 10 / 18 | 70 / 273 |
//!
//! # Ties
//!
//! Subproblems with equal best scores leave the queue in the order they
//! entered it, and every decoder call breaks ties as documented in the
//! [decoder](super): the list is a deterministic function of the scores.
//! Among equal scores the order is not lexicographic.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{
    decode_scores, log_score_of_score, log_score_of_weight, Additive, Lex, Multiplicative,
    OrderedGroup, NONE,
};
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
/// non-increasing order of score; fewer when fewer trees exist. Camerini,
/// Fratta & Maffioli (1980): every step costs `O(n²)`, `O(|labels| n² + k n²)`
/// in all; algorithm and ties: [module docs](self).
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
    let table = Table::new(n, labels, score);
    match rooting {
        Rooting::Multi => camerini(&table, rooting, k, |_, g| g, |_: &G| true),
        Rooting::Single => camerini(
            &table,
            rooting,
            k,
            |h, minor| Lex {
                major: -i64::from(h == 0),
                minor,
            },
            // A single-root tree has `major = −1`; anything lower has more
            // root children, and ranks after every single-root tree.
            |t: &Lex<G>| t.major == -1,
        ),
    }
}

/// A subproblem whose best tree has been output, waiting with the value of
/// its second-best tree and the arc that tree avoids.
struct Pending<G, T> {
    value: T,
    order: usize,
    sub: Subproblem,
    tree: Ranked<G>,
    /// The word (1-based) whose arc in `tree` the second-best tree avoids.
    word: usize,
}

impl<G, T: OrderedGroup> PartialEq for Pending<G, T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<G, T: OrderedGroup> Eq for Pending<G, T> {}
impl<G, T: OrderedGroup> PartialOrd for Pending<G, T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<G, T: OrderedGroup> Ord for Pending<G, T> {
    /// Higher value first; on ties, the earlier subproblem.
    fn cmp(&self, other: &Self) -> Ordering {
        self.value
            .compare(&other.value)
            .then_with(|| other.order.cmp(&self.order))
    }
}

/// Camerini et al.'s loop: a subproblem `S` with output tree `A` waits with
/// its second-best value `w(A) − δ` and the arc `e ∈ A` of the best swap.
/// Popping it outputs `B`, the best tree of `S` without `e`, and replaces `S`
/// by `S + e` (best tree `A`) and `S − e` (best tree `B`), each with its own
/// best swap. `wrap` maps an arc's score into the decoding group (`Lex` for
/// the root constraint), `valid` tells whether a value is one of a tree of
/// the rooting.
fn camerini<G: OrderedGroup, T: OrderedGroup, F: Fn(usize, usize, usize) -> Option<G>>(
    table: &Table<G, F>,
    rooting: Rooting,
    k: usize,
    wrap: impl Fn(usize, G) -> T,
    valid: impl Fn(&T) -> bool,
) -> Result<Vec<Ranked<G>>> {
    let root = Subproblem {
        fixed: vec![None; table.n],
        excluded: vec![Vec::new(); table.n],
    };
    let first = table.solve(rooting, &root)?;
    let mut heap = BinaryHeap::new();
    let mut order = 0;
    let mut push = |heap: &mut BinaryHeap<Pending<G, T>>, sub: Subproblem, tree: Ranked<G>| {
        if let Some((value, word)) = table.best_swap(&sub, &tree, &wrap) {
            if valid(&value) {
                order += 1;
                heap.push(Pending {
                    value,
                    order,
                    sub,
                    tree,
                    word,
                });
            }
        }
    };
    let mut out = Vec::with_capacity(k.min(1024));
    out.push(first.clone());
    if k > 1 {
        push(&mut heap, root, first);
    }
    while out.len() < k {
        let Some(p) = heap.pop() else { break };
        let i = p.word - 1;
        let arc = (p.tree.heads[i], p.tree.labels[i]);
        let mut without = p.sub.clone();
        without.excluded[i].push(arc);
        let next = table.solve(rooting, &without)?;
        out.push(next.clone());
        if out.len() == k {
            break;
        }
        let mut with = p.sub;
        with.fixed[i] = Some(arc);
        push(&mut heap, with, p.tree);
        push(&mut heap, without, next);
    }
    Ok(out)
}

/// A value with a tie-breaking count compared after it: `(θ(d), |d ∩ A|)`
/// lexicographically makes the tree `A` the unique maximiser among the trees
/// of equal score, so that the contraction reproduces `A` exactly.
#[derive(Clone, Debug)]
struct Tie<T> {
    value: T,
    bonus: i64,
}

impl<T: OrderedGroup> OrderedGroup for Tie<T> {
    fn identity() -> Self {
        Tie {
            value: T::identity(),
            bonus: 0,
        }
    }
    fn combine(&self, other: &Self) -> Self {
        Tie {
            value: self.value.combine(&other.value),
            bonus: self.bonus + other.bonus,
        }
    }
    fn remove(&self, other: &Self) -> Self {
        Tie {
            value: self.value.remove(&other.value),
            bonus: self.bonus - other.bonus,
        }
    }
    fn compare(&self, other: &Self) -> Ordering {
        self.value
            .compare(&other.value)
            .then(self.bonus.cmp(&other.bonus))
    }
}

/// `c` is strictly better than the current `best`.
fn beats<T: OrderedGroup>(c: &T, best: Option<&T>) -> bool {
    best.is_none_or(|b| c.compare(b) == Ordering::Greater)
}

/// The heads of the maximum tree, and the second-best value with the word
/// whose arc it avoids.
type TreeAndSwap<T> = (Vec<usize>, Option<(T, usize)>);

/// Chu–Liu–Edmonds on `leaf[m][h]` (`(n+1)²`, row `m`: the arcs into `m`),
/// keeping every node's row, and Camerini et al.'s (1980) search of the best
/// swap. `sec[m][h]`: the second-best parallel arc `h → m` (another label).
///
/// Returns the maximum tree `A` (heads) and, when another tree exists, the
/// value `w(A) ∘ b ∘ a⁻¹` of the second-best tree with the word whose arc in
/// `A` it avoids. The swap: for every node `v` of every contracted graph (the
/// words and the contracted cycles), let `a` be the reduced value of `A`'s arc
/// entering `v` and `b` the best reduced value of another arc entering `v`
/// from outside `v`'s subtree in `A` (so that exchanging them leaves a tree);
/// the second-best tree exchanges at the `v` with the largest `b ∘ a⁻¹`, and
/// it is the best tree without `A`'s arc into `v` (Camerini et al. 1980,
/// Theorem 3). Rows are kept per source original node, so parallel arcs from
/// the same source into a contracted node are summarised by their two best
/// values. `O(n²)`: `O(k n)` per contracted `k`-cycle and `O(n)` per node.
fn best_swap_search<T: OrderedGroup>(
    n: usize,
    leaf: &[Option<T>],
    sec: &[Option<T>],
) -> Option<TreeAndSwap<T>> {
    let n1 = n + 1;
    let mut parent = vec![NONE; n1];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n1];
    let mut in_arc = vec![(0usize, 0usize); n1];
    let mut in_score: Vec<Option<T>> = vec![None; n1];
    // Contracted node `v ≥ n1` owns chunk `v − n1` of these: its row, the
    // second-best parallel arc per source, the dependent of the best arc.
    let mut rows: Vec<Option<T>> = Vec::new();
    let mut secs: Vec<Option<T>> = Vec::new();
    let mut deps: Vec<u32> = Vec::new();
    let mut members: Vec<Vec<usize>> = (0..n1).map(|x| vec![x]).collect();
    let mut top: Vec<usize> = (0..n1).collect();
    let mut finished = vec![false; n1];
    finished[0] = true;
    let mut on_path = vec![false; n1];
    let mut path: Vec<usize> = Vec::new();
    let mut new_row: Vec<Option<T>> = vec![None; n1];
    let mut new_sec: Vec<Option<T>> = vec![None; n1];
    let mut new_dep: Vec<u32> = vec![0; n1];

    for start in 1..n1 {
        let mut a = top[start];
        if finished[a] {
            continue;
        }
        loop {
            let (row, dep) = if a < n1 {
                (&leaf[a * n1..(a + 1) * n1], None)
            } else {
                let c = (a - n1) * n1;
                (&rows[c..c + n1], Some(&deps[c..c + n1]))
            };
            let mut best: Option<(usize, &T)> = None;
            for (x, s) in row.iter().enumerate() {
                if let Some(s) = s {
                    if top[x] != a && beats(s, best.map(|b| b.1)) {
                        best = Some((x, s));
                    }
                }
            }
            let (x, s) = best?;
            in_arc[a] = (x, dep.map_or(a, |d| d[x] as usize));
            in_score[a] = Some(s.clone());
            on_path[a] = true;
            path.push(a);
            let u = top[x];
            if finished[u] {
                for p in path.drain(..) {
                    finished[p] = true;
                    on_path[p] = false;
                }
                break;
            }
            if !on_path[u] {
                a = u;
                continue;
            }
            // The path closed a cycle from `u` to `a`: contract it into `id`,
            // merging the members' rows reduced by their cycle arcs.
            let at = path.iter().position(|&p| p == u).expect("u is on the path");
            let mut cycle = path.split_off(at);
            cycle.sort_unstable();
            let id = parent.len();
            new_row.iter_mut().for_each(|x| *x = None);
            new_sec.iter_mut().for_each(|x| *x = None);
            for &v in &cycle {
                let s_v = in_score[v].as_ref().expect("cycle nodes have an arc");
                let (row, sec_row, dep) = if v < n1 {
                    (
                        &leaf[v * n1..(v + 1) * n1],
                        &sec[v * n1..(v + 1) * n1],
                        None,
                    )
                } else {
                    let c = (v - n1) * n1;
                    (&rows[c..c + n1], &secs[c..c + n1], Some(&deps[c..c + n1]))
                };
                for x in 0..n1 {
                    let Some(r) = &row[x] else { continue };
                    let cand = r.remove(s_v);
                    if beats(&cand, new_row[x].as_ref()) {
                        new_sec[x] = new_row[x].take();
                        new_row[x] = Some(cand);
                        new_dep[x] = dep.map_or(v as u32, |d| d[x]);
                    } else if beats(&cand, new_sec[x].as_ref()) {
                        new_sec[x] = Some(cand);
                    }
                    if let Some(q) = &sec_row[x] {
                        let cand = q.remove(s_v);
                        if beats(&cand, new_sec[x].as_ref()) {
                            new_sec[x] = Some(cand);
                        }
                    }
                }
            }
            rows.extend_from_slice(&new_row);
            secs.extend_from_slice(&new_sec);
            deps.extend_from_slice(&new_dep);
            let mut all = Vec::new();
            for &v in &cycle {
                parent[v] = id;
                on_path[v] = false;
                all.append(&mut members[v]);
            }
            for &x in &all {
                top[x] = id;
            }
            members.push(all);
            parent.push(NONE);
            children.push(cycle);
            in_arc.push((0, 0));
            in_score.push(None);
            finished.push(false);
            on_path.push(false);
            a = id;
        }
    }

    // Expansion (Camerini et al. 1979), recording the arc of `A` that enters
    // every node: a forest root's own arc, which also enters every node on
    // the forest path down to its dependent.
    let nodes = parent.len();
    let mut enter = vec![(0usize, 0usize); nodes];
    let mut heads = vec![NONE; n];
    let mut stack: Vec<usize> = (1..nodes).filter(|&x| parent[x] == NONE).collect();
    while let Some(x) = stack.pop() {
        let (h, m) = in_arc[x];
        heads[m - 1] = h;
        enter[x] = (h, m);
        let mut y = m;
        while y != x {
            enter[y] = (h, m);
            let p = parent[y];
            stack.extend(children[p].iter().copied().filter(|&c| c != y));
            y = p;
        }
    }

    // Subtrees of `A` by entry and exit times of a depth-first walk.
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); n1];
    for (i, &h) in heads.iter().enumerate() {
        kids[h].push(i + 1);
    }
    let (mut tin, mut tout) = (vec![0usize; n1], vec![0usize; n1]);
    let mut clock = 0;
    let mut walk = vec![(0usize, 0usize)];
    while let Some((x, i)) = walk.pop() {
        if i == 0 {
            tin[x] = clock;
            clock += 1;
        }
        if let Some(&c) = kids[x].get(i) {
            walk.push((x, i + 1));
            walk.push((c, 0));
        } else {
            tout[x] = clock;
        }
    }

    let mut swap: Option<(T, usize)> = None;
    for (v, &(h, m)) in enter.iter().enumerate().skip(1) {
        let (row, sec_row) = if v < n1 {
            (&leaf[v * n1..(v + 1) * n1], &sec[v * n1..(v + 1) * n1])
        } else {
            let c = (v - n1) * n1;
            (&rows[c..c + n1], &secs[c..c + n1])
        };
        let a = row[h].as_ref().expect("A's arc enters v");
        let mut b = sec_row[h].as_ref();
        for (x, s) in row.iter().enumerate() {
            let Some(s) = s else { continue };
            // Sources in the subtree of `m` (which holds `v`'s members)
            // would close a cycle.
            if x != h && !(tin[m] <= tin[x] && tin[x] < tout[m]) && beats(s, b) {
                b = Some(s);
            }
        }
        if let Some(b) = b {
            let delta = b.remove(a);
            if beats(&delta, swap.as_ref().map(|s| &s.0)) {
                swap = Some((delta, m));
            }
        }
    }
    let total = heads.iter().enumerate().fold(T::identity(), |t, (i, &h)| {
        t.combine(leaf[(i + 1) * n1 + h].as_ref().expect("A's arcs exist"))
    });
    Some((heads, swap.map(|(d, m)| (total.combine(&d), m))))
}

/// As [`k_best_arborescences`], by the plain partitioning scheme: every
/// child subproblem of an output tree is decoded afresh, `O(|labels| n² + k n³)`.
/// Kept as a simple reference that [`k_best_arborescences`] is tested
/// against; same list, same order on scores without ties.
///
/// # Errors
/// As [`k_best_arborescences`].
///
/// ```
/// use spantree_core::decode::kbest::k_best_arborescences_lawler;
/// use spantree_core::Rooting;
/// let s = [[None, Some(10.0), Some(9.0)], [None, None, Some(1.0)], [None, Some(0.0), None]];
/// let list = k_best_arborescences_lawler(2, 1, Rooting::Single, 5, |h, m, _| s[h][m])?;
/// assert_eq!(list.iter().map(|r| r.score).collect::<Vec<_>>(), vec![11.0, 9.0]);
/// # Ok::<(), spantree_core::Error>(())
/// ```
pub fn k_best_arborescences_lawler<G: OrderedGroup>(
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

/// The arc scores, and per arc its two best labels, computed once.
struct Table<G, F> {
    n: usize,
    labels: usize,
    score: F,
    /// `[m][h]`: the best score over labels and the first label reaching it.
    best: Vec<Option<(G, usize)>>,
    /// `[m][h]`: the second-best score over labels (another label).
    second: Vec<Option<G>>,
}

impl<G: OrderedGroup, F: Fn(usize, usize, usize) -> Option<G>> Table<G, F> {
    fn new(n: usize, labels: usize, score: F) -> Self {
        let n1 = n + 1;
        let mut t = Table {
            n,
            labels,
            score,
            best: vec![None; n1 * n1],
            second: vec![None; n1 * n1],
        };
        for m in 1..n1 {
            for h in (0..n1).filter(|&h| h != m) {
                let (b, s) = t.top_two(h, m, &[]);
                t.best[m * n1 + h] = b;
                t.second[m * n1 + h] = s;
            }
        }
        t
    }

    /// The best label of `h → m` not in `excluded`, first maximum.
    fn best_label(&self, h: usize, m: usize, excluded: &[(usize, usize)]) -> Option<(G, usize)> {
        self.top_two(h, m, excluded).0
    }

    /// The best label of `h → m` not in `excluded` (first maximum) and the
    /// score of the second best. `O(|labels|)`.
    fn top_two(
        &self,
        h: usize,
        m: usize,
        excluded: &[(usize, usize)],
    ) -> (Option<(G, usize)>, Option<G>) {
        let mut best: Option<(G, usize)> = None;
        let mut second: Option<G> = None;
        for l in 0..self.labels {
            if excluded.contains(&(h, l)) {
                continue;
            }
            if let Some(s) = (self.score)(h, m, l) {
                if beats(&s, best.as_ref().map(|b| &b.0)) {
                    second = best.take().map(|b| b.0);
                    best = Some((s, l));
                } else if beats(&s, second.as_ref()) {
                    second = Some(s);
                }
            }
        }
        (best, second)
    }

    /// The best swap of subproblem `sub` whose best tree is `tree`: the value
    /// (under `wrap`) of its second-best tree and the word whose arc that tree
    /// avoids; `None` when `tree` is the only tree. `O(n²)` plus
    /// `O(|labels|)` per excluded arc.
    fn best_swap<T: OrderedGroup>(
        &self,
        sub: &Subproblem,
        tree: &Ranked<G>,
        wrap: &impl Fn(usize, G) -> T,
    ) -> Option<(T, usize)> {
        let n = self.n;
        let n1 = n + 1;
        let mut leaf: Vec<Option<Tie<T>>> = vec![None; n1 * n1];
        let mut sec: Vec<Option<Tie<T>>> = vec![None; n1 * n1];
        let tie = |h: usize, g: G, bonus: bool| Tie {
            value: wrap(h, g),
            bonus: i64::from(bonus),
        };
        for m in 1..n1 {
            let i = m - 1;
            let mine = tree.heads[i];
            let row = m * n1..(m + 1) * n1;
            if let Some((h, l)) = sub.fixed[i] {
                leaf[m * n1 + h] = (self.score)(h, m, l).map(|s| tie(h, s, true));
                continue;
            }
            for (h, (b, s)) in self.best[row.clone()]
                .iter()
                .zip(&self.second[row])
                .enumerate()
            {
                let (b, s) = if sub.excluded[i].iter().any(|&(e, _)| e == h) {
                    self.top_two(h, m, &sub.excluded[i])
                } else {
                    (b.clone(), s.clone())
                };
                leaf[m * n1 + h] = b.map(|(g, l)| {
                    debug_assert!(h != mine || l == tree.labels[i]);
                    tie(h, g, h == mine)
                });
                sec[m * n1 + h] = s.map(|g| tie(h, g, false));
            }
        }
        let (heads, swap) = best_swap_search(n, &leaf, &sec)?;
        debug_assert_eq!(
            heads, tree.heads,
            "the bonus makes the tree the unique maximum"
        );
        swap.map(|(t, m)| (t.value, m))
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
    /// `O(|labels| n² + k n²)`: [`kbest`](crate::decode::kbest).
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
        match self.potentials() {
            Potentials::Scores => graph_k_best(self, rooting, k, log_score_of_score),
            Potentials::Weights => graph_k_best(self, rooting, k, log_score_of_weight),
        }
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
    /// see [`Graph::k_best`]. `O(|labels| n² + k n²)`, no factorisation needed.
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
