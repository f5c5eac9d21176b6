//! Sentence graphs: validated input, and the combinatorial test for `Z = 0`.
//!
//! A graph over `n` words is given in the `(n+1) × (n+1)` layout: entry
//! `[h][m]` is the arc `h → m`, node `0` is the root and `1..=n` are words.
//! Column `0` (arcs into the root) and the diagonal (self-loops) do not exist:
//! whatever their cells hold (`0`, `-∞`, a parser's `-1e9` mask, even NaN, or
//! in a labeled graph a cell of any length) is ignored, as SynJax does, so a
//! zero-initialised or masked tensor is accepted as it is. Labeled graphs
//! give one value per label in every arc's cell.
//!
//! Other layouts (torch-struct's `n × n` with root scores on the diagonal,
//! SuPar's `[dependent][head]`) convert to this one with
//! [`crate::layout::Layout`].

use crate::error::{ArcRef, Error, NoTree, Result};
use crate::scalar::{log_sum_exp, Scalar, Sign};
use std::sync::Arc;

/// Which trees the distribution ranges over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rooting {
    /// Exactly one word attaches to the root (the Universal Dependencies convention).
    Single,
    /// Any non-zero number of words attach to the root.
    Multi,
}

impl Rooting {
    /// Both rootings, single first.
    pub const ALL: [Rooting; 2] = [Rooting::Single, Rooting::Multi];

    /// `"single"` or `"multi"`.
    pub fn name(self) -> &'static str {
        match self {
            Rooting::Single => "single",
            Rooting::Multi => "multi",
        }
    }
}

/// How the values of a [`Graph`] are to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Potentials {
    /// Non-negative weights `w`; `0` forbids an arc.
    Weights,
    /// Scores (log-potentials) `θ = ln w`; `-∞` forbids an arc.
    Scores,
}

/// The arc a value is checked on in the validating sweep, where only
/// whether it is valid is asked.
const ANY_ARC: ArcRef = ArcRef {
    head: 0,
    dependent: 1,
    label: None,
};

impl Potentials {
    /// The error of value `v` on `arc` when it is not valid
    /// ([`Graph::from_weights`], [`Graph::from_scores`]): NaN, and a weight
    /// infinite or negative, or a score of `+∞`. The one statement of the
    /// rule: the validating sweep asks it of every value (with a stand-in
    /// arc), the arc-by-arc loop of an invalid graph to name the arc. `O(1)`.
    #[inline]
    fn check<W: Scalar>(self, arc: ArcRef, v: &W) -> Result<()> {
        let x = v.to_f64();
        match self {
            Potentials::Weights => {
                if x.is_nan() {
                    return Err(Error::NotANumber {
                        arc,
                        what: "weight",
                    });
                }
                if !v.is_finite() {
                    return Err(Error::Infinite {
                        arc,
                        what: "weight",
                        value: x,
                    });
                }
                if v.sign() == Sign::Negative {
                    return Err(Error::NegativeWeight { arc, value: x });
                }
            }
            Potentials::Scores => {
                if x.is_nan() {
                    return Err(Error::NotANumber { arc, what: "score" });
                }
                if x == f64::INFINITY {
                    return Err(Error::Infinite {
                        arc,
                        what: "score",
                        value: x,
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether a valid value `v` allows its arc: a non-zero weight, a score
    /// above `−∞`. `O(1)`.
    fn allows<W: Scalar>(self, v: &W) -> bool {
        match self {
            Potentials::Weights => !v.is_zero(),
            Potentials::Scores => v.to_f64() != f64::NEG_INFINITY,
        }
    }
}

/// A validated sentence graph: no NaN, no negative weight, no `+∞`, the right
/// shape, `n ≥ 1`. `W` is the number type of the values: `f64` (weights or
/// scores), or a backend's scalar (weights only), for example exact rationals.
///
/// `n = 1` is legal: it has exactly one tree, `0 → 1`, under both rootings,
/// so `Z = w(0 → 1)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph<W = f64> {
    n: usize,
    labels: usize,
    labeled: bool,
    potentials: Potentials,
    /// `[h][m][ℓ]`, row-major, `(n+1)² · labels` values, shared: a model
    /// keeps its graph ([`Model::graph`](crate::Model::graph)), and a clone
    /// per model copied `(n+1)²` values (5% of `ln Z` at `n = 36`). An
    /// `Arc<Vec<_>>`, not an `Arc<[_]>`: the validated vector moves in, where
    /// a slice would be copied once more.
    values: Arc<Vec<W>>,
    /// Whether every arc is allowed (no forbidden arc): then a spanning tree
    /// exists under both rootings, decided in `O(1)`.
    complete: bool,
}

fn check_rows(rows: usize, lens: impl Iterator<Item = usize>) -> Result<usize> {
    if rows <= 1 {
        return Err(Error::Empty);
    }
    for (row, found) in lens.enumerate() {
        if found != rows {
            return Err(Error::Shape {
                row,
                found,
                expected: rows,
            });
        }
    }
    Ok(rows - 1)
}

/// The rows one after the other, a row at a time (`O(total)`).
fn concatenated<W: Clone, R: AsRef<[W]>>(rows: &[R]) -> Vec<W> {
    let mut values = Vec::with_capacity(rows.iter().map(|r| r.as_ref().len()).sum());
    for row in rows {
        values.extend_from_slice(row.as_ref());
    }
    values
}

fn exists(h: usize, m: usize) -> bool {
    m != 0 && h != m
}

impl<W: Scalar> Graph<W> {
    /// A graph from non-negative weights in the `(n+1) × (n+1)` layout.
    ///
    /// # Errors
    /// [`Error::Empty`] for `n = 0`, [`Error::Shape`] for a row of the wrong
    /// length, [`Error::NotANumber`], [`Error::Infinite`] and
    /// [`Error::NegativeWeight`] for an arc's weight (the value as given).
    /// The diagonal and column `0` are not arcs: whatever they hold is
    /// ignored.
    ///
    /// ```
    /// use spantree_core::Graph;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]]).unwrap();
    /// assert_eq!(g.n(), 2);
    /// ```
    pub fn from_weights<R: AsRef<[W]>>(rows: &[R]) -> Result<Self> {
        let n = check_rows(rows.len(), rows.iter().map(|r| r.as_ref().len()))?;
        Self::validated(n, 1, false, Potentials::Weights, concatenated(rows))
    }

    /// A labeled graph from weights: `rows[h][m][ℓ]` is the weight of arc
    /// `h → m` with label `ℓ`; every arc's cell has the same number of labels
    /// (the cells of non-arcs may have any length, even `0`: they are
    /// ignored). The label order of the library is `[h][m][ℓ]` here, as in
    /// the command's input and output.
    ///
    /// # Errors
    /// As [`Graph::from_weights`], plus [`Error::NoLabels`] when arc `0 → 1`
    /// has no label values and [`Error::LabelCount`] naming the first arc
    /// whose cell has another length.
    pub fn from_labeled_weights<C: AsRef<[W]>, R: AsRef<[C]>>(rows: &[R]) -> Result<Self> {
        let (n, labels, values) = flatten_labeled(rows)?;
        Self::validated(n, labels, true, Potentials::Weights, values)
    }

    /// The graph of `values` (`[h][m][ℓ]`, row-major) once every arc's
    /// value is valid ([`Potentials::check`]); the cells of non-arcs are
    /// overwritten with the forbidding value. One sweep over the values
    /// decides validity and whether every arc is allowed (branch-free on
    /// `f64`); only an invalid graph takes the arc-by-arc loop, which names
    /// the first invalid arc. `O(n² · labels)`.
    fn validated(
        n: usize,
        labels: usize,
        labeled: bool,
        potentials: Potentials,
        mut values: Vec<W>,
    ) -> Result<Self> {
        let forbidden = match potentials {
            Potentials::Weights => W::zero(),
            Potentials::Scores => W::from_f64(f64::NEG_INFINITY),
        };
        let n1 = n + 1;
        // Not arcs (column 0 and the diagonal): whatever the cells held is
        // ignored.
        for h in 0..=n {
            for m in [0, h] {
                if let Some(cell) = values.get_mut((h * n1 + m) * labels..(h * n1 + m + 1) * labels)
                {
                    cell.fill(forbidden.clone());
                }
            }
        }
        // Every cell is valid now that non-arcs hold `forbidden` (allowed
        // nowhere): the graph is complete when its `n²` arcs are allowed.
        let (mut valid, mut allowed) = (true, 0usize);
        if labels == 1 {
            for v in &values {
                valid &= potentials.check(ANY_ARC, v).is_ok();
                allowed += usize::from(potentials.allows(v));
            }
        } else {
            for cell in values.chunks_exact(labels.max(1)) {
                let mut any = false;
                for v in cell {
                    valid &= potentials.check(ANY_ARC, v).is_ok();
                    any |= potentials.allows(v);
                }
                allowed += usize::from(any);
            }
        }
        let g = Graph {
            n,
            labels,
            labeled,
            potentials,
            values: Arc::new(values),
            complete: allowed == n * n,
        };
        if !valid {
            g.first_invalid()?;
        }
        Ok(g)
    }

    /// The first arc (in `[h][m][ℓ]` order) whose value is not valid, as
    /// its error. `O(n² · labels)`.
    fn first_invalid(&self) -> Result<()> {
        for h in 0..=self.n {
            for m in (1..=self.n).filter(|&m| m != h) {
                for l in 0..self.labels {
                    let arc = ArcRef {
                        head: h,
                        dependent: m,
                        label: self.labeled.then_some(l),
                    };
                    self.potentials
                        .check(arc, &self.values[self.index(h, m, l)])?;
                }
            }
        }
        Ok(())
    }

    /// All values, `[h][m][ℓ]` row-major: `(n+1)² · labels` of them (the
    /// `f64` decoder reads rows of heads at once).
    pub(crate) fn raw_values(&self) -> &[W] {
        &self.values
    }

    fn index(&self, h: usize, m: usize, l: usize) -> usize {
        ((h * (self.n + 1)) + m) * self.labels + l
    }

    /// The number of words `n`.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The number of labels (`1` for an unlabeled graph).
    pub fn labels(&self) -> usize {
        self.labels
    }

    /// Whether the graph was given with labels.
    pub fn is_labeled(&self) -> bool {
        self.labeled
    }

    /// Whether the values are weights or scores.
    pub fn potentials(&self) -> Potentials {
        self.potentials
    }

    /// The value (weight or score) of arc `h → m` with label `l`.
    pub fn value(&self, h: usize, m: usize, l: usize) -> &W {
        &self.values[self.index(h, m, l)]
    }

    /// The values of all labels of arc `h → m`.
    pub fn values(&self, h: usize, m: usize) -> &[W] {
        let i = self.index(h, m, 0);
        &self.values[i..i + self.labels]
    }

    /// Whether arc `h → m` has positive weight under some label.
    pub fn is_allowed(&self, h: usize, m: usize) -> bool {
        exists(h, m)
            && self.values(h, m).iter().any(|v| match self.potentials {
                Potentials::Weights => !v.is_zero(),
                Potentials::Scores => v.to_f64() != f64::NEG_INFINITY,
            })
    }

    /// The collapsed log-weight `ln Σ_ℓ w(h → m, ℓ)` in `f64` (`-∞` if forbidden).
    pub fn log_weight(&self, h: usize, m: usize) -> f64 {
        if !exists(h, m) {
            return f64::NEG_INFINITY;
        }
        let vals = self.values(h, m);
        match self.potentials {
            // One score is its own log-weight (`log_sum_exp` of one value
            // returns it exactly, after an `exp` and a `ln`).
            Potentials::Scores => match vals {
                [one] => one.to_f64(),
                _ => log_sum_exp(vals.iter().map(|v| v.to_f64())),
            },
            Potentials::Weights => {
                let mut total = W::zero();
                for v in vals {
                    total += v;
                }
                total.ln_abs()
            }
        }
    }

    /// Whether every arc `h → m` (`m ≥ 1`, `h ≠ m`) is allowed: no weight
    /// zero, no score `−∞` (in a labeled graph, some label allowed). Known
    /// from construction, `O(1)`.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Decides combinatorially whether a spanning tree exists (`Z > 0`), on
    /// the support of the positive weights: `O(1)` when no arc is forbidden
    /// ([`Graph::is_complete`]: the root's star is a tree), `O(n²)` otherwise.
    ///
    /// Multi-root: every word is reachable from the root. Single-root: some
    /// word `r` with a root arc reaches every word through word-to-word arcs.
    ///
    /// # Errors
    /// The [`NoTree`] reason when there is none.
    ///
    /// ```
    /// use spantree_core::{Graph, NoTree, Rooting};
    /// // Word 2 has no incoming arc.
    /// let g = Graph::from_weights(&[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]).unwrap();
    /// assert_eq!(g.spanning_tree(Rooting::Multi), Err(NoTree::Unreachable { word: 2 }));
    /// ```
    pub fn spanning_tree(&self, rooting: Rooting) -> std::result::Result<(), NoTree> {
        if self.complete {
            return Ok(());
        }
        let n = self.n;
        let root_arcs: Vec<usize> = (1..=n).filter(|&m| self.is_allowed(0, m)).collect();
        if root_arcs.is_empty() {
            return Err(NoTree::NoRootArc);
        }
        let reach = |starts: &[usize], forward: bool| -> Vec<bool> {
            let mut seen = vec![false; n + 1];
            let mut stack: Vec<usize> = starts.to_vec();
            for &s in starts {
                seen[s] = true;
            }
            while let Some(u) = stack.pop() {
                for (v, seen_v) in seen.iter_mut().enumerate().skip(1) {
                    let allowed = if forward {
                        self.is_allowed(u, v)
                    } else {
                        self.is_allowed(v, u)
                    };
                    if !*seen_v && allowed {
                        *seen_v = true;
                        stack.push(v);
                    }
                }
            }
            seen
        };
        let from_root = reach(&root_arcs, true);
        if let Some(word) = (1..=n).find(|&m| !from_root[m]) {
            return Err(NoTree::Unreachable { word });
        }
        if rooting == Rooting::Multi {
            return Ok(());
        }
        // The word that finishes last in a depth-first search lies in a source
        // component; if any word reaches all words, this one does.
        let candidate = last_finished(n, |u, v| self.is_allowed(u, v));
        let from_candidate = reach(&[candidate], true);
        if (1..=n).any(|m| !from_candidate[m]) {
            return Err(NoTree::NoSingleRoot);
        }
        // The words that reach everything are exactly those that reach the candidate.
        let to_candidate = reach(&[candidate], false);
        if root_arcs.iter().any(|&r| to_candidate[r]) {
            Ok(())
        } else {
            Err(NoTree::NoSingleRoot)
        }
    }
}

fn last_finished(n: usize, allowed: impl Fn(usize, usize) -> bool) -> usize {
    let mut seen = vec![false; n + 1];
    let mut last = 1;
    for s in 1..=n {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        // Iterative DFS: (node, next neighbour to try).
        let mut stack = vec![(s, 1usize)];
        while let Some(&mut (u, ref mut next)) = stack.last_mut() {
            if let Some(v) = (*next..=n).find(|&v| !seen[v] && allowed(u, v)) {
                *next = v + 1;
                seen[v] = true;
                stack.push((v, 1));
            } else {
                last = u;
                stack.pop();
            }
        }
    }
    last
}

impl Graph<f64> {
    /// A graph from scores (log-potentials) in the `(n+1) × (n+1)` layout;
    /// `-∞` forbids an arc. The diagonal and column `0` are not arcs and are
    /// ignored whatever they hold, so a zero-initialised matrix with the
    /// arcs filled in is accepted as it is. `O(n²)`.
    ///
    /// # Errors
    /// [`Error::Empty`], [`Error::Shape`], [`Error::NotANumber`] and
    /// [`Error::Infinite`] for an arc's score of `+∞` (the score as given).
    ///
    /// ```
    /// use spantree_core::Graph;
    /// // Zeros on the diagonal and in column 0 (a zero-initialised tensor): ignored.
    /// let g = Graph::from_scores(&[[0.0, 0.5, -1.0], [0.0, 0.0, 2.0], [0.0, -1e9, 0.0]]).unwrap();
    /// assert!(g.is_allowed(1, 2));
    /// assert!(!g.is_allowed(1, 1));
    /// ```
    pub fn from_scores<R: AsRef<[f64]>>(rows: &[R]) -> Result<Self> {
        let n = check_rows(rows.len(), rows.iter().map(|r| r.as_ref().len()))?;
        Self::validated(n, 1, false, Potentials::Scores, concatenated(rows))
    }

    /// A labeled graph from scores: `rows[h][m][ℓ]`, with the conventions of
    /// [`Graph::from_labeled_weights`] (non-arc cells ignored, of any length).
    ///
    /// # Errors
    /// As [`Graph::from_scores`], plus [`Error::NoLabels`] and [`Error::LabelCount`].
    pub fn from_labeled_scores<C: AsRef<[f64]>, R: AsRef<[C]>>(rows: &[R]) -> Result<Self> {
        let (n, labels, values) = flatten_labeled(rows)?;
        Self::validated(n, labels, true, Potentials::Scores, values)
    }
}

impl Graph<f64> {
    /// The graph of the weights raised to the power `α ≥ 0`, as scores
    /// `α θ` (labels kept): `Z` of it is `Σ_d w(d)^α`. For `α = 0` every
    /// allowed arc gets weight `1` and forbidden ones stay forbidden, so `Z`
    /// counts the trees of the support. `O(|labels| n²)`.
    pub fn powered(&self, alpha: f64) -> Graph<f64> {
        let n = self.n;
        let mut values = Vec::with_capacity(self.values.len());
        for h in 0..=n {
            for m in 0..=n {
                for &v in self.values(h, m) {
                    let log_w = match self.potentials {
                        Potentials::Scores => v,
                        Potentials::Weights => v.ln(),
                    };
                    values.push(if !exists(h, m) || log_w == f64::NEG_INFINITY {
                        f64::NEG_INFINITY
                    } else {
                        alpha * log_w
                    });
                }
            }
        }
        Graph {
            n,
            labels: self.labels,
            labeled: self.labeled,
            potentials: Potentials::Scores,
            values: Arc::new(values),
            // α θ is finite wherever θ is (α ≥ 0 finite): the support is kept.
            complete: self.complete && alpha.is_finite(),
        }
    }
}

fn flatten_labeled<W: Clone, C: AsRef<[W]>, R: AsRef<[C]>>(
    rows: &[R],
) -> Result<(usize, usize, Vec<W>)> {
    let n = check_rows(rows.len(), rows.iter().map(|r| r.as_ref().len()))?;
    // The first arc, 0 → 1, sets the label count (`n ≥ 1` here).
    let first = rows[0].as_ref()[1].as_ref();
    let labels = first.len();
    if labels == 0 {
        return Err(Error::NoLabels);
    }
    let mut values = Vec::with_capacity((n + 1) * (n + 1) * labels);
    for (h, row) in rows.iter().enumerate() {
        for (m, cell) in row.as_ref().iter().enumerate() {
            let cell = cell.as_ref();
            if !exists(h, m) {
                // Ignored whatever it holds: any stand-in of the right length.
                values.extend(std::iter::repeat_n(first[0].clone(), labels));
                continue;
            }
            if cell.len() != labels {
                return Err(Error::LabelCount {
                    arc: ArcRef {
                        head: h,
                        dependent: m,
                        label: None,
                    },
                    found: cell.len(),
                    expected: labels,
                });
            }
            values.extend(cell.iter().cloned());
        }
    }
    Ok((n, labels, values))
}
