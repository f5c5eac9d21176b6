//! The `f64` specialisation of the maximum-arborescence decoder.
//!
//! The same algorithm as the generic decoder (dense Chu–Liu–Edmonds, Tarjan
//! 1977, with the expansion of Camerini, Fratta & Maffioli 1979), and the
//! same choices in the same order, so both return identical trees (tested on
//! random graphs with ties and forbidden arcs). What changes is the
//! representation:
//!
//! * one dense `f64` matrix, row `m` holding the arcs into `m` (the
//!   input's transpose, written by stripes of rows that are scanned for
//!   their words' best incoming arcs while still in cache), `−∞` for a
//!   forbidden arc instead of an `Option`;
//! * a contracted node gets a fresh row below the words' rows, the
//!   element-wise maximum of its members' rows minus their cycle arcs: `k + 1`
//!   contiguous row passes for a `k`-cycle, `O(k n)`, which the compiler
//!   vectorises; rows are never changed after they are written; the arcs
//!   from inside the new node are masked by walking its member list, or,
//!   for a node of at least `(n + 1) / 8` words, by one branch-free pass over
//!   all words (nested contractions would walk the same words again);
//! * the original dependent behind a contracted node's arc is not stored per
//!   entry: it is recovered, for the one arc the node takes, by descending
//!   the contraction forest to the first member whose reduced score equals
//!   the node's (the same floating-point expression, so the equality is
//!   exact, and the first member is the one the maximum kept);
//! * the single-root constraint's lexicographic pairs `(−[h = 0], θ)` need no
//!   integer part: reduced scores never change the first component (a cycle
//!   arc never comes from the root, whose node is finished), so a root arc
//!   only wins a row that has no other arc, which the row scan tests directly;
//! * all buffers live in one per-thread workspace reused across calls (rows
//!   of up to `RETAIN` values are kept; larger ones are freed after the call),
//!   so decoding a corpus does not reallocate them per sentence.
//!
//! Reduced scores are differences of at most `2n + 1` input scores; inputs
//! whose magnitude could overflow that (`|θ| (2n + 2) > f64::MAX`) go to the
//! generic decoder, so that an overflow to `−∞` is never mistaken for a
//! forbidden arc.

use std::cell::RefCell;

use crate::graph::Rooting;

/// No node.
const NONE: usize = usize::MAX;

/// Rows of at most this many `f64` values (32 MB) are kept between calls.
const RETAIN: usize = 1 << 22;

/// The rows filled together: `32` open cache lines of writes (2 KB).
const STRIPE: usize = 32;

/// What the fast decoder found.
pub(crate) enum Outcome {
    /// The heads, `heads[i]` of word `i + 1`.
    Heads(Vec<usize>),
    /// No tree of the rooting exists.
    NoTree,
    /// Scores too large for the `f64` reduced scores: use the generic path.
    TooLarge,
}

/// The buffers of one decoding, indexed by node: words `0..=n`, contracted
/// nodes after them (at most `n − 1` of those).
#[derive(Default)]
struct Workspace {
    /// Row `v` (`n + 1` values): the (reduced) score of the arc from every
    /// original node into node `v`, `−∞` when absent or inside `v`.
    rows: Vec<f64>,
    /// The score of the arc each node took, in the graph where it took it.
    in_score: Vec<f64>,
    /// That arc's original head and dependent.
    in_head: Vec<usize>,
    in_dep: Vec<usize>,
    parent: Vec<usize>,
    /// Children lists in increasing order of their smallest word.
    first_child: Vec<usize>,
    last_child: Vec<usize>,
    next_sibling: Vec<usize>,
    /// The smallest word of a node (the generic decoder's slot number).
    key: Vec<usize>,
    /// Member lists over the words: from `first_member[v]` through
    /// `next_member`, ending at `last_member[v]`.
    first_member: Vec<usize>,
    last_member: Vec<usize>,
    next_member: Vec<usize>,
    /// The current (outermost) node holding each word.
    current: Vec<usize>,
    /// The number of words in a node.
    size: Vec<usize>,
    /// Marks the members of the cycle being contracted.
    inside: Vec<bool>,
    finished: Vec<bool>,
    on_path: Vec<bool>,
    path: Vec<usize>,
    cycle: Vec<usize>,
    /// Per word, the first maximum of its row, found while filling.
    best: Vec<f64>,
    arg: Vec<usize>,
}

thread_local! {
    static WORKSPACE: RefCell<Workspace> = RefCell::new(Workspace::default());
}

/// Decodes arc scores (`−∞`: forbidden) exactly as the generic decoder
/// does. `segment(h, m0, out)` writes the scores of the arcs `h → m0 + j`
/// into `out[j]` (`h ∈ 0..=n`, `m0 ≥ 1`; the value of `h → h` is ignored).
/// `O(n²)`.
pub(crate) fn decode(
    n: usize,
    rooting: Rooting,
    segment: impl FnMut(usize, usize, &mut [f64]),
) -> Outcome {
    WORKSPACE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut ws) => {
            let out = ws.decode(n, rooting, segment);
            if ws.rows.capacity() > RETAIN {
                *ws = Workspace::default();
            }
            out
        }
        // Only reachable if `segment` decodes too; then use a fresh workspace.
        Err(_) => Workspace::default().decode(n, rooting, segment),
    })
}

/// Resets `v` to `len` copies of `x`.
fn reset<T: Clone>(v: &mut Vec<T>, len: usize, x: T) {
    v.clear();
    v.resize(len, x);
}

/// `max(a, b)` for numbers without NaN, as one `maxsd`/`maxpd` (`f64::max`
/// adds NaN handling).
fn larger(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// The maximum of eight lanes, as a tree (a chained iterator here compiles
/// to a serial blend of many cycles per step).
fn reduce(l: [f64; 8]) -> f64 {
    larger(
        larger(larger(l[0], l[1]), larger(l[2], l[3])),
        larger(larger(l[4], l[5]), larger(l[6], l[7])),
    )
}

/// The first maximum of `row` and its index; `None` if every entry is `−∞`.
/// Eight independent lanes so that the maximum vectorises (a single running
/// maximum is a serial dependency chain).
fn first_max(row: &[f64]) -> Option<(usize, f64)> {
    let mut lanes = [f64::NEG_INFINITY; 8];
    let mut chunks = row.chunks_exact(8);
    for c in &mut chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l = larger(*l, x);
        }
    }
    let best = chunks
        .remainder()
        .iter()
        .fold(reduce(lanes), |a, &x| larger(a, x));
    if best == f64::NEG_INFINITY {
        return None;
    }
    // `==` also matches a `−0` before a `+0` maximum: equal, as in the
    // generic decoder's strict comparison, which keeps the first. Whole
    // chunks are tested without branches, then the hit is located.
    let mut chunks = row.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        if c.iter().fold(false, |hit, &s| hit | (s == best)) {
            break;
        }
        at += 8;
    }
    let x = at + row[at..].iter().position(|&s| s == best)?;
    Some((x, best))
}

/// The best arc of a row: the first maximum in head order; under `single`,
/// the root arc (entry `0`) only when there is no other.
fn best_arc(row: &[f64], single: bool) -> Option<(usize, f64)> {
    if !single {
        return first_max(row);
    }
    match first_max(&row[1..]) {
        Some((x, s)) => Some((x + 1, s)),
        None => (row[0] > f64::NEG_INFINITY).then_some((0, row[0])),
    }
}

/// The largest finite `|x|` in `row` (`0` if none), in eight lanes.
fn magnitude(row: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let mut chunks = row.chunks_exact(8);
    let finite = |x: f64| {
        if x.abs() < f64::INFINITY {
            x.abs()
        } else {
            0.0
        }
    };
    for c in &mut chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l = larger(*l, finite(x));
        }
    }
    chunks
        .remainder()
        .iter()
        .fold(reduce(lanes), |a, &x| larger(a, finite(x)))
}

impl Workspace {
    fn decode(
        &mut self,
        n: usize,
        rooting: Rooting,
        segment: impl FnMut(usize, usize, &mut [f64]),
    ) -> Outcome {
        let n1 = n + 1;
        let single = rooting == Rooting::Single;
        let largest = self.fill(n1, single, segment);
        if largest * (2 * n1 + 2) as f64 > f64::MAX {
            return Outcome::TooLarge;
        }
        let Some(heads) = self.chu_liu_edmonds(n1, single) else {
            return Outcome::NoTree;
        };
        if single && heads.iter().filter(|&&h| h == 0).count() != 1 {
            return Outcome::NoTree;
        }
        Outcome::Heads(heads)
    }

    /// Fills the words' rows, the transpose of `score`, by stripes of
    /// `STRIPE` rows: the stripe's open cache lines stay in L1 while the
    /// heads advance, and its rows are still in cache when they are scanned
    /// for every word's first maximum right after (over heads `≥ 1` when
    /// `single`: the root arc is looked at only when there is no other).
    /// Returns the largest finite `|θ|`.
    fn fill(
        &mut self,
        n1: usize,
        single: bool,
        mut segment: impl FnMut(usize, usize, &mut [f64]),
    ) -> f64 {
        let len = n1 * n1;
        // Rows of words are all written below, so stale values may stay;
        // reserve room for the contracted nodes' rows without touching it.
        if self.rows.len() < len {
            self.rows.resize(len, 0.0);
        } else {
            self.rows.truncate(len);
        }
        self.rows.reserve(len.saturating_sub(2 * n1));
        reset(&mut self.best, n1, f64::NEG_INFINITY);
        reset(&mut self.arg, n1, NONE);
        let mut largest = 0.0f64;
        let mut buf = [0.0; STRIPE];
        for m0 in (1..n1).step_by(STRIPE) {
            let m1 = (m0 + STRIPE).min(n1);
            let buf = &mut buf[..m1 - m0];
            let block = &mut self.rows[m0 * n1..m1 * n1];
            for h in 0..n1 {
                segment(h, m0, buf);
                for (row, &v) in block.chunks_exact_mut(n1).zip(buf.iter()) {
                    row[h] = v;
                }
            }
            for m in m0..m1 {
                let row = &mut self.rows[m * n1..(m + 1) * n1];
                row[m] = f64::NEG_INFINITY;
                largest = largest.max(magnitude(row));
                if let Some((x, s)) = best_arc(row, single) {
                    self.arg[m] = x;
                    self.best[m] = s;
                }
            }
        }
        largest
    }

    /// The original dependent of the arc from word `x` into node `v`: descend
    /// to the first child whose reduced score is the one `v`'s row holds.
    fn dependent(&self, n1: usize, mut v: usize, x: usize) -> usize {
        while v >= n1 {
            let target = self.rows[v * n1 + x];
            let mut c = self.first_child[v];
            loop {
                if self.rows[c * n1 + x] - self.in_score[c] == target {
                    break;
                }
                c = self.next_sibling[c];
                debug_assert!(c != NONE, "some child holds the maximum");
            }
            v = c;
        }
        v
    }

    /// Chu–Liu–Edmonds on the filled rows, root `0`, making the generic
    /// decoder's choices in the same order. `None` when some node has no
    /// incoming arc.
    fn chu_liu_edmonds(&mut self, n1: usize, single: bool) -> Option<Vec<usize>> {
        let most = 2 * n1;
        reset(&mut self.in_score, most, 0.0);
        reset(&mut self.in_head, most, 0);
        reset(&mut self.in_dep, most, 0);
        reset(&mut self.parent, most, NONE);
        reset(&mut self.first_child, most, NONE);
        reset(&mut self.last_child, most, NONE);
        reset(&mut self.next_sibling, most, NONE);
        reset(&mut self.key, most, NONE);
        reset(&mut self.first_member, most, NONE);
        reset(&mut self.last_member, most, NONE);
        reset(&mut self.next_member, n1, NONE);
        reset(&mut self.finished, most, false);
        reset(&mut self.on_path, most, false);
        reset(&mut self.inside, most, false);
        reset(&mut self.size, most, 1);
        self.current.clear();
        self.current.extend(0..n1);
        for w in 0..n1 {
            self.key[w] = w;
            self.first_member[w] = w;
            self.last_member[w] = w;
        }
        self.finished[0] = true;
        self.path.clear();
        let mut nodes = n1;

        for start in 1..n1 {
            if self.finished[self.current[start]] {
                continue;
            }
            let mut a = start;
            loop {
                let (x, s) = if a < n1 {
                    match self.arg[a] {
                        NONE => return None,
                        x => (x, self.best[a]),
                    }
                } else {
                    best_arc(&self.rows[a * n1..(a + 1) * n1], single)?
                };
                let u = self.current[x];
                self.in_head[a] = x;
                self.in_dep[a] = self.dependent(n1, a, x);
                self.in_score[a] = s;
                self.on_path[a] = true;
                self.path.push(a);
                if self.finished[u] {
                    for &p in &self.path {
                        self.finished[p] = true;
                        self.on_path[p] = false;
                    }
                    self.path.clear();
                    break;
                }
                if !self.on_path[u] {
                    a = u;
                    continue;
                }
                let at = self.path.iter().rposition(|&p| p == u)?;
                self.cycle.clear();
                self.cycle.extend(self.path.drain(at..));
                let key = &self.key;
                self.cycle.sort_unstable_by_key(|&v| key[v]);
                a = self.contract(n1, nodes);
                nodes += 1;
            }
        }

        // Expansion (Camerini et al. 1979): every forest root keeps its arc,
        // which breaks the cycle arcs on the forest path down to its dependent.
        let mut heads = vec![NONE; n1 - 1];
        self.path.clear();
        self.path
            .extend((1..nodes).filter(|&v| self.parent[v] == NONE));
        while let Some(v) = self.path.pop() {
            let m = self.in_dep[v];
            heads[m - 1] = self.in_head[v];
            let mut y = m;
            while y != v {
                let p = self.parent[y];
                let mut c = self.first_child[p];
                while c != NONE {
                    if c != y {
                        self.path.push(c);
                    }
                    c = self.next_sibling[c];
                }
                y = p;
            }
        }
        debug_assert!(heads.iter().all(|&h| h != NONE));
        Some(heads)
    }

    /// Contracts `self.cycle` (sorted by smallest word) into node `id`: its
    /// row is `max_v (row_v − θ(in(v)))`, first maximum to the smallest
    /// member, with `−∞` for the arcs from inside.
    fn contract(&mut self, n1: usize, id: usize) -> usize {
        let base = id * n1;
        debug_assert_eq!(self.rows.len(), base);
        self.rows.resize(base + n1, 0.0);
        let (old, new) = self.rows.split_at_mut(base);
        let first = self.cycle[0];
        let in_first = self.in_score[first];
        for (y, &s) in new.iter_mut().zip(&old[first * n1..(first + 1) * n1]) {
            *y = s - in_first;
        }
        for &v in &self.cycle[1..] {
            let in_v = self.in_score[v];
            for (y, &s) in new.iter_mut().zip(&old[v * n1..(v + 1) * n1]) {
                let cand = s - in_v;
                *y = larger(*y, cand);
            }
        }
        self.key[id] = self.key[first];
        self.first_member[id] = self.first_member[first];
        self.last_member[id] = self.last_member[first];
        self.first_child[id] = first;
        self.last_child[id] = first;
        for i in 0..self.cycle.len() {
            let v = self.cycle[i];
            self.parent[v] = id;
            self.on_path[v] = false;
            if i > 0 {
                self.next_sibling[self.last_child[id]] = v;
                self.last_child[id] = v;
                self.next_member[self.last_member[id]] = self.first_member[v];
                self.last_member[id] = self.last_member[v];
            }
        }
        let size = self.cycle.iter().map(|&v| self.size[v]).sum();
        self.size[id] = size;
        if size * 8 < n1 {
            // A small node: walk its member list.
            let mut w = self.first_member[id];
            while w != NONE {
                self.current[w] = id;
                new[w] = f64::NEG_INFINITY;
                w = self.next_member[w];
            }
        } else {
            // A large one: one branch-free pass over every word instead of a
            // pointer chase through the list (nested contractions would walk
            // the same words again and again).
            for &v in &self.cycle {
                self.inside[v] = true;
            }
            let ninf = f64::NEG_INFINITY.to_bits();
            for (y, c) in new.iter_mut().zip(self.current.iter_mut()) {
                // All ones inside the cycle, else zero: selects by masks, as
                // `if` compiles to an unpredictable branch here.
                let mask = 0u64.wrapping_sub(u64::from(self.inside[*c]));
                *c = (*c & !(mask as usize)) | (id & mask as usize);
                *y = f64::from_bits((y.to_bits() & !mask) | (ninf & mask));
            }
            for &v in &self.cycle {
                self.inside[v] = false;
            }
        }
        id
    }
}

#[cfg(test)]
mod tests {
    //! The fast path against the generic decoder (the oracle here: the same
    //! algorithm on `Option` scores and lexicographic pairs, itself checked
    //! against brute-force enumeration in `tests/decode.rs`): identical
    //! heads, not merely equal scores, on random graphs of every kind.

    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::{decode, Outcome};
    use crate::decode::{decode_graph, decode_scores, log_score_of_score, log_score_of_weight};
    use crate::error::NoTree;
    use crate::graph::{Graph, Rooting};

    /// `N(0, 1)` by Box–Muller.
    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        let u1: f64 = 1.0 - rng.random::<f64>();
        let u2: f64 = rng.random();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// How the scores of a test graph are drawn.
    #[derive(Clone, Copy, Debug)]
    enum Kind {
        Normal,
        /// Integers from `0..k`: many tied maxima, in rows and in merges.
        Ties(u32),
        /// `N(0, 1)`, each arc forbidden with this probability.
        Forbidden(f64),
        /// Integer ties, root arcs `+10`: the multi-root maximum attaches
        /// most words to the root, the single-root one must not.
        RootHeavy,
    }

    /// `[h][m]` scores of `n` words (`−∞` on column 0 and the diagonal).
    fn scores(rng: &mut ChaCha8Rng, n: usize, kind: Kind) -> Vec<f64> {
        let n1 = n + 1;
        let mut s = vec![f64::NEG_INFINITY; n1 * n1];
        for h in 0..n1 {
            for m in (1..n1).filter(|&m| m != h) {
                s[h * n1 + m] = match kind {
                    Kind::Normal => normal(rng),
                    Kind::Ties(k) => f64::from(rng.random_range(0..k)),
                    Kind::Forbidden(p) if rng.random_bool(p) => f64::NEG_INFINITY,
                    Kind::Forbidden(_) => normal(rng),
                    Kind::RootHeavy => {
                        f64::from(rng.random_range(0..3u32) + 10 * u32::from(h == 0))
                    }
                };
            }
        }
        s
    }

    /// Both decoders on `s`: identical heads, or both find no tree. Returns
    /// whether a tree exists.
    fn agree(n: usize, rooting: Rooting, s: &[f64]) -> bool {
        let n1 = n + 1;
        let generic = decode_scores(
            n,
            rooting,
            |h, m| log_score_of_score(&s[h * n1 + m]),
            || Err(NoTree::NoRootArc),
        );
        match (
            decode(n, rooting, |h, m0, out| {
                out.copy_from_slice(&s[h * n1 + m0..h * n1 + m0 + out.len()]);
            }),
            generic,
        ) {
            (Outcome::Heads(fast), Ok(generic)) => {
                assert_eq!(fast, generic, "n = {n}, {rooting:?}, scores {s:?}");
                true
            }
            (Outcome::NoTree, Err(_)) => false,
            (Outcome::Heads(h), Err(_)) => panic!("fast found {h:?}, generic no tree"),
            (Outcome::NoTree, Ok(h)) => panic!("generic found {h:?}, fast no tree"),
            (Outcome::TooLarge, _) => panic!("scores of N(0, 1) size are not too large"),
        }
    }

    /// Sizes up to 60 in a mixed order, so the reused workspace goes from
    /// large to small and back.
    const SIZES: [usize; 14] = [1, 2, 3, 60, 4, 5, 7, 41, 9, 12, 2, 23, 36, 17];

    #[test]
    fn fast_path_gives_the_generic_heads() {
        let mut rng = ChaCha8Rng::seed_from_u64(2026);
        let kinds = [
            Kind::Normal,
            Kind::Ties(2),
            Kind::Ties(3),
            Kind::Forbidden(0.3),
            Kind::Forbidden(0.8),
            Kind::RootHeavy,
        ];
        let (mut trees, mut none) = (0, 0);
        for kind in kinds {
            for &n in &SIZES {
                for _ in 0..6 {
                    let s = scores(&mut rng, n, kind);
                    for rooting in Rooting::ALL {
                        if agree(n, rooting, &s) {
                            trees += 1;
                        } else {
                            none += 1;
                        }
                    }
                }
            }
        }
        // Both outcomes were exercised (forbidden arcs leave some graphs
        // without a tree).
        assert!(trees > 800 && none > 50, "{trees} trees, {none} without");
    }

    /// Labeled graphs (ties among labels and arcs) and weight graphs (zeros
    /// forbidden): `Graph::best_tree`, which takes the fast path, against
    /// the generic decoder on the same graph: the same heads and labels.
    #[test]
    fn graphs_decode_as_the_generic_decoder_does() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        for &n in &SIZES {
            for _ in 0..4 {
                let n1 = n + 1;
                let labeled: Vec<Vec<Vec<f64>>> = (0..n1)
                    .map(|_| {
                        (0..n1)
                            .map(|_| {
                                (0..3)
                                    .map(|_| f64::from(rng.random_range(0..4u32)))
                                    .collect()
                            })
                            .collect()
                    })
                    .collect();
                let g = Graph::from_labeled_scores(&labeled).unwrap();
                let weights: Vec<Vec<f64>> = (0..n1)
                    .map(|_| {
                        (0..n1)
                            .map(|_| {
                                if rng.random_bool(0.2) {
                                    0.0
                                } else {
                                    normal(&mut rng).exp()
                                }
                            })
                            .collect()
                    })
                    .collect();
                let w = Graph::from_weights(&weights).unwrap();
                for rooting in Rooting::ALL {
                    assert_eq!(
                        g.best_tree(rooting),
                        decode_graph(&g, rooting, log_score_of_score)
                    );
                    assert_eq!(
                        w.best_tree(rooting),
                        decode_graph(&w, rooting, log_score_of_weight)
                    );
                }
            }
        }
    }

    /// Scores near `f64::MAX`, whose reduced scores would overflow: the fast
    /// path declines and `best_tree` answers through the generic decoder.
    #[test]
    fn huge_scores_take_the_generic_path() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let n = 5;
        let s: Vec<f64> = scores(&mut rng, n, Kind::Normal)
            .into_iter()
            .map(|x| x * 1e307)
            .collect();
        assert!(matches!(
            decode(n, Rooting::Multi, |h, m0, out| {
                let i = h * (n + 1) + m0;
                out.copy_from_slice(&s[i..i + out.len()]);
            }),
            Outcome::TooLarge
        ));
        let rows: Vec<&[f64]> = s.chunks(n + 1).collect();
        let g = Graph::from_scores(&rows).unwrap();
        for rooting in Rooting::ALL {
            assert_eq!(
                g.best_tree(rooting),
                decode_graph(&g, rooting, log_score_of_score)
            );
        }
    }
}
