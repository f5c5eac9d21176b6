//! Projective trees: Eisner's (1996) `O(n³)` chart over any commutative semiring.
//!
//! A tree is projective when no two arcs cross with the root placed before the
//! first word ([`Tree::is_projective`]). Eisner's algorithm builds every
//! projective tree from *complete* spans (a head and all its descendants on
//! one side) and *incomplete* spans (an arc and the material between its
//! ends), for nodes `0 ≤ s ≤ t ≤ n`:
//!
//! ```text
//! I→[s,t] = w(s→t) ⊗ ⊕_{s≤r<t} C→[s,r] ⊗ C←[r+1,t]     I←[s,t] = w(t→s) ⊗ (same sum)
//! C→[s,t] = ⊕_{s<r≤t} I→[s,r] ⊗ C→[r,t]               C←[s,t] = ⊕_{s≤r<t} C←[s,r] ⊗ I←[r,t]
//! ```
//!
//! with `C[s,s] = 1`. Multi-root trees are `C→[0,n]`. Single-root trees allow
//! only the split `r = 0` in `I→[0,t]`, so the root takes exactly one child:
//! `Z = ⊕_r w(0→r) ⊗ C←[1,r] ⊗ C→[r,n]`. Each projective tree has exactly one
//! derivation, so the chart sums (or maximises) over projective trees.
//!
//! One [`Chart`] implementation, generic over a [`Semiring`], serves:
//!
//! * [`Max`]: the best projective tree (back-pointers recovered by
//!   re-checking which split attains each maximum, the first in split order);
//! * [`Log`]: projective `ln Z` in log space, which never overflows;
//! * [`Real`]: sums in any [`Scalar`], for example exact rational counts;
//! * [`LogExpectation`]: the expectation semiring (Li & Eisner 2009) kept in
//!   log space, giving `ln Z` and `E[θ(d)]`, hence the entropy.
//!
//! [`Chart::arc_totals`] is the outside pass, the reverse-mode derivative of
//! the inside pass (Eisner 2016): for every arc it gives `⊕_{d ∋ e} w(d)`.
//! In [`Log`] that is the arc marginal; in [`LogExpectation`] also
//! `E[θ(d) | e ∈ d]`, from which the gradient of the entropy follows:
//! `∂H/∂θ_e = −Cov(θ(d), 1[e ∈ d]) = −μ_e (E[θ(d) | e ∈ d] − E[θ(d)])`.
//! [`Projective`] packages these for a [`Graph`].

use std::cmp::Ordering;
use std::fmt::Debug;

use super::{finish_tree, OrderedGroup};
use crate::error::{Error, Result};
use crate::graph::{Graph, Potentials, Rooting};
use crate::matrix::Matrix;
use crate::scalar::Scalar;
use crate::tree::Tree;

/// A commutative semiring: what the Eisner chart computes in.
pub trait Semiring: Clone + Debug {
    /// The neutral element of `⊕` (no derivation).
    fn zero() -> Self;
    /// The neutral element of `⊗` (the empty derivation).
    fn one() -> Self;
    /// `a ⊕ b`: alternatives.
    fn plus(&self, other: &Self) -> Self;
    /// `a ⊗ b`: combination.
    fn times(&self, other: &Self) -> Self;
}

/// Log-weights under `(log-sum-exp, +)`: sums of weights in log space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Log(pub f64);

impl Semiring for Log {
    fn zero() -> Self {
        Log(f64::NEG_INFINITY)
    }
    fn one() -> Self {
        Log(0.0)
    }
    fn plus(&self, other: &Self) -> Self {
        let (hi, lo) = if self.0 >= other.0 {
            (self.0, other.0)
        } else {
            (other.0, self.0)
        };
        if lo == f64::NEG_INFINITY {
            return Log(hi);
        }
        Log(hi + (lo - hi).exp().ln_1p())
    }
    fn times(&self, other: &Self) -> Self {
        Log(self.0 + other.0)
    }
}

/// Values of any [`Scalar`] under `(+, ×)`: exact sums on exact rationals
/// (with unit weights: tree counts).
#[derive(Clone, Debug, PartialEq)]
pub struct Real<S>(pub S);

impl<S: Scalar> Semiring for Real<S> {
    fn zero() -> Self {
        Real(S::zero())
    }
    fn one() -> Self {
        Real(S::one())
    }
    fn plus(&self, other: &Self) -> Self {
        Real(self.0.clone() + other.0.clone())
    }
    fn times(&self, other: &Self) -> Self {
        Real(self.0.clone() * other.0.clone())
    }
}

/// An [`OrderedGroup`] under `(max, ∘)`; `None` is `−∞` (no derivation).
/// `⊕` keeps the left operand on ties.
#[derive(Clone, Debug, PartialEq)]
pub struct Max<G>(pub Option<G>);

impl<G: OrderedGroup> Semiring for Max<G> {
    fn zero() -> Self {
        Max(None)
    }
    fn one() -> Self {
        Max(Some(G::identity()))
    }
    fn plus(&self, other: &Self) -> Self {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) if b.compare(a) == Ordering::Greater => other.clone(),
            (None, _) => other.clone(),
            _ => self.clone(),
        }
    }
    fn times(&self, other: &Self) -> Self {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Max(Some(a.combine(b))),
            _ => Max(None),
        }
    }
}

/// The first-order expectation semiring (Li & Eisner 2009) in log space: a
/// pair `(ln p, r / p)` standing for `(p, r)` with `(p₁, r₁) ⊗ (p₂, r₂) =
/// (p₁p₂, p₁r₂ + p₂r₁)`. Over a chart with arc values `(θ_e, θ_e)` the total
/// is `(ln Z, E[θ(d)])`. Keeping `ln p` and the mean `r / p` instead of `p`
/// and `r` means nothing overflows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogExpectation {
    /// `ln p`.
    pub log: f64,
    /// `r / p` (`0` when `p = 0`).
    pub mean: f64,
}

impl Semiring for LogExpectation {
    fn zero() -> Self {
        LogExpectation {
            log: f64::NEG_INFINITY,
            mean: 0.0,
        }
    }
    fn one() -> Self {
        LogExpectation {
            log: 0.0,
            mean: 0.0,
        }
    }
    fn plus(&self, other: &Self) -> Self {
        let (hi, lo) = if self.log >= other.log {
            (self, other)
        } else {
            (other, self)
        };
        if lo.log == f64::NEG_INFINITY {
            return *hi;
        }
        // p_lo / p_hi ≤ 1: the shares of the two means.
        let ratio = (lo.log - hi.log).exp();
        LogExpectation {
            log: hi.log + ratio.ln_1p(),
            mean: (hi.mean + ratio * lo.mean) / (1.0 + ratio),
        }
    }
    fn times(&self, other: &Self) -> Self {
        if self.log == f64::NEG_INFINITY || other.log == f64::NEG_INFINITY {
            return Self::zero();
        }
        LogExpectation {
            log: self.log + other.log,
            mean: self.mean + other.mean,
        }
    }
}

/// Eisner's chart for `n` words, filled by the inside pass in a semiring `K`.
/// `O(n³)` time, `O(n²)` memory.
#[derive(Clone, Debug)]
pub struct Chart<K> {
    n: usize,
    rooting: Rooting,
    /// Arc values `[h][m]`, `(n+1)²`.
    arcs: Vec<K>,
    /// Complete spans with the head on the right, `[s][t]`.
    cl: Vec<K>,
    /// Complete spans with the head on the left.
    cr: Vec<K>,
    /// Incomplete spans `t → s`.
    il: Vec<K>,
    /// Incomplete spans `s → t`.
    ir: Vec<K>,
}

impl<K: Semiring> Chart<K> {
    /// The inside pass over arc values `arc(h, m)` (asked for `h ≠ m`,
    /// `m ≥ 1`; return [`Semiring::zero`] for forbidden arcs). `O(n³)`.
    ///
    /// # Errors
    /// [`Error::Empty`] for `n = 0`.
    ///
    /// ```
    /// use spantree_core::decode::projective::{Chart, Log};
    /// use spantree_core::Rooting;
    /// // Unit weights on 3 words: 12 multi-root projective trees.
    /// let chart = Chart::inside(3, Rooting::Multi, |_, _| Log(0.0))?;
    /// assert!((chart.total().0 - 12f64.ln()).abs() < 1e-12);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn inside(n: usize, rooting: Rooting, arc: impl Fn(usize, usize) -> K) -> Result<Self> {
        if n == 0 {
            return Err(Error::Empty);
        }
        let n1 = n + 1;
        let arcs = (0..n1 * n1)
            .map(|i| {
                let (h, m) = (i / n1, i % n1);
                if m == 0 || h == m {
                    K::zero()
                } else {
                    arc(h, m)
                }
            })
            .collect();
        let mut chart = Chart {
            n,
            rooting,
            arcs,
            cl: vec![K::zero(); n1 * n1],
            cr: vec![K::zero(); n1 * n1],
            il: vec![K::zero(); n1 * n1],
            ir: vec![K::zero(); n1 * n1],
        };
        for s in 0..n1 {
            chart.cl[s * n1 + s] = K::one();
            chart.cr[s * n1 + s] = K::one();
        }
        for width in 1..n1 {
            for s in 0..n1 - width {
                let t = s + width;
                let st = s * n1 + t;
                let mut sum = K::zero();
                for r in chart.incomplete_splits(s, t) {
                    sum = sum.plus(&chart.cr[s * n1 + r].times(&chart.cl[(r + 1) * n1 + t]));
                }
                chart.il[st] = sum.times(&chart.arcs[t * n1 + s]);
                chart.ir[st] = sum.times(&chart.arcs[s * n1 + t]);
                let mut left = K::zero();
                for r in s..t {
                    left = left.plus(&chart.cl[s * n1 + r].times(&chart.il[r * n1 + t]));
                }
                chart.cl[st] = left;
                let mut right = K::zero();
                for r in s + 1..=t {
                    right = right.plus(&chart.ir[s * n1 + r].times(&chart.cr[r * n1 + t]));
                }
                chart.cr[st] = right;
            }
        }
        Ok(chart)
    }

    /// The split points of an incomplete span: all of `s..t`, except that a
    /// single root takes no second child (`r = 0` only).
    fn incomplete_splits(&self, s: usize, t: usize) -> std::ops::Range<usize> {
        if s == 0 && self.rooting == Rooting::Single {
            0..1
        } else {
            s..t
        }
    }

    /// The number of words `n`.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The sum (or maximum) over all projective trees of the product of their
    /// arc values: `C→[0, n]`.
    pub fn total(&self) -> &K {
        &self.cr[self.n]
    }

    /// The outside pass: for every arc `e` (in the `(n+1) × (n+1)` layout),
    /// `⊕_{d ∋ e} ⊗_{f ∈ d} w_f`, as inside ⊗ outside of its incomplete
    /// span; [`Semiring::zero`] on the diagonal and column `0`. This is
    /// reverse-mode differentiation of [`Chart::inside`] (Eisner 2016), so in
    /// [`Log`] `exp(total_e − ln Z)` is the arc marginal `∂ ln Z / ∂θ_e`.
    /// `O(n³)`.
    ///
    /// ```
    /// use spantree_core::decode::projective::{Chart, Real};
    /// use spantree_core::Rooting;
    /// // Unit weights on 2 words, multi-root: 3 trees; 2 contain 0 → 1.
    /// let chart = Chart::inside(2, Rooting::Multi, |_, _| Real(1.0))?;
    /// assert_eq!(chart.arc_totals()[(0, 1)], Real(2.0));
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn arc_totals(&self) -> Matrix<K> {
        let n1 = self.n + 1;
        let mut ocl = vec![K::zero(); n1 * n1];
        let mut ocr = vec![K::zero(); n1 * n1];
        let mut oil = vec![K::zero(); n1 * n1];
        let mut oir = vec![K::zero(); n1 * n1];
        ocr[self.n] = K::one();
        let add = |v: &mut K, x: K| *v = v.plus(&x);
        for width in (1..n1).rev() {
            for s in 0..n1 - width {
                let t = s + width;
                let st = s * n1 + t;
                // Complete spans of this width first: they feed the
                // incomplete spans of the same width.
                let b = ocr[st].clone();
                for r in s + 1..=t {
                    add(&mut oir[s * n1 + r], b.times(&self.cr[r * n1 + t]));
                    add(&mut ocr[r * n1 + t], b.times(&self.ir[s * n1 + r]));
                }
                let b = ocl[st].clone();
                for r in s..t {
                    add(&mut ocl[s * n1 + r], b.times(&self.il[r * n1 + t]));
                    add(&mut oil[r * n1 + t], b.times(&self.cl[s * n1 + r]));
                }
                let b = oil[st]
                    .times(&self.arcs[t * n1 + s])
                    .plus(&oir[st].times(&self.arcs[s * n1 + t]));
                for r in self.incomplete_splits(s, t) {
                    add(&mut ocr[s * n1 + r], b.times(&self.cl[(r + 1) * n1 + t]));
                    add(&mut ocl[(r + 1) * n1 + t], b.times(&self.cr[s * n1 + r]));
                }
            }
        }
        Matrix::from_fn(n1, n1, |h, m| {
            if m == 0 || h == m {
                K::zero()
            } else if h < m {
                self.ir[h * n1 + m].times(&oir[h * n1 + m])
            } else {
                self.il[m * n1 + h].times(&oil[m * n1 + h])
            }
        })
    }
}

impl<G: OrderedGroup> Chart<Max<G>> {
    /// The heads of a best projective tree (`heads[i]` of word `i + 1`), by
    /// walking back through the chart and taking, in every span, the first
    /// split (in increasing order) that attains its maximum. `None` when no
    /// projective tree exists. `O(n²)`.
    pub fn best_heads(&self) -> Option<Vec<usize>> {
        let n1 = self.n + 1;
        self.total().0.as_ref()?;
        let equal = |a: &Max<G>, b: &Max<G>| match (&a.0, &b.0) {
            (Some(x), Some(y)) => x.compare(y) == Ordering::Equal,
            _ => false,
        };
        #[derive(Clone, Copy)]
        enum Item {
            CompleteLeft,
            CompleteRight,
            Incomplete { head_left: bool },
        }
        let mut heads = vec![usize::MAX; self.n];
        let mut stack = vec![(Item::CompleteRight, 0usize, self.n)];
        while let Some((item, s, t)) = stack.pop() {
            if s == t {
                continue;
            }
            let st = s * n1 + t;
            match item {
                Item::CompleteRight => {
                    let r = (s + 1..=t).find(|&r| {
                        equal(
                            &self.ir[s * n1 + r].times(&self.cr[r * n1 + t]),
                            &self.cr[st],
                        )
                    })?;
                    stack.push((Item::Incomplete { head_left: true }, s, r));
                    stack.push((Item::CompleteRight, r, t));
                }
                Item::CompleteLeft => {
                    let r = (s..t).find(|&r| {
                        equal(
                            &self.cl[s * n1 + r].times(&self.il[r * n1 + t]),
                            &self.cl[st],
                        )
                    })?;
                    stack.push((Item::CompleteLeft, s, r));
                    stack.push((Item::Incomplete { head_left: false }, r, t));
                }
                Item::Incomplete { head_left } => {
                    let (value, arc) = if head_left {
                        heads[t - 1] = s;
                        (&self.ir[st], &self.arcs[s * n1 + t])
                    } else {
                        heads[s - 1] = t;
                        (&self.il[st], &self.arcs[t * n1 + s])
                    };
                    let r = self.incomplete_splits(s, t).find(|&r| {
                        let split = self.cr[s * n1 + r].times(&self.cl[(r + 1) * n1 + t]);
                        equal(&split.times(arc), value)
                    })?;
                    stack.push((Item::CompleteRight, s, r));
                    stack.push((Item::CompleteLeft, r + 1, t));
                }
            }
        }
        Some(heads)
    }
}

/// The best projective tree of the complete graph on `0..=n` with arc scores
/// `score(h, m)` (`None`: forbidden), as heads (`heads[i]` of word `i + 1`);
/// Eisner (1996) in the [`Max`] semiring, `O(n³)`. Ties: the first maximising
/// split of every span, in increasing order. Exact on exact groups.
///
/// # Errors
/// [`Error::NoSpanningTree`] with the reason of [`Graph::spanning_tree`]
/// when the allowed arcs form no tree at all; [`Error::NoProjectiveTree`]
/// when they form only non-projective ones.
///
/// ```
/// use spantree_core::{decode::projective::max_projective, Rooting};
/// // Every word's best head: 0 → 3 → 2 → 1, a projective tree of score 10.
/// let s = [
///     [None, Some(0.0), Some(0.0), Some(5.0)],
///     [None, None, Some(1.0), Some(4.0)],
///     [None, Some(3.0), None, Some(0.0)],
///     [None, Some(0.0), Some(2.0), None],
/// ];
/// let heads = max_projective(3, Rooting::Single, |h, m| s[h][m])?;
/// assert_eq!(heads, vec![2, 3, 0]);
/// # Ok::<(), spantree_core::Error>(())
/// ```
pub fn max_projective<G: OrderedGroup>(
    n: usize,
    rooting: Rooting,
    score: impl Fn(usize, usize) -> Option<G>,
) -> Result<Vec<usize>> {
    if n == 0 {
        return Err(Error::Empty);
    }
    let n1 = n + 1;
    let support: Vec<Vec<f64>> = (0..n1)
        .map(|h| {
            (0..n1)
                .map(|m| f64::from(u8::from(m != 0 && h != m && score(h, m).is_some())))
                .collect()
        })
        .collect();
    Graph::from_weights(&support)?
        .spanning_tree(rooting)
        .map_err(Error::NoSpanningTree)?;
    Chart::inside(n, rooting, |h, m| Max(score(h, m)))?
        .best_heads()
        .ok_or(Error::NoProjectiveTree)
}

impl Graph<f64> {
    /// The highest-scoring projective tree of `rooting` (Eisner 1996), in
    /// `f64` log space like [`Graph::best_tree`]; labeled graphs give the best
    /// label of every arc. `O(|labels| n² + n³)`.
    ///
    /// # Errors
    /// As [`max_projective`].
    ///
    /// ```
    /// use spantree_core::{Graph, Rooting};
    /// let ninf = f64::NEG_INFINITY;
    /// // The best tree 0 → 2, 2 → 1, 1 → 3 is not projective (1 → 3 crosses 0 → 2).
    /// let g = Graph::from_scores(&[
    ///     [ninf, 0.0, 9.0, 0.0],
    ///     [ninf, ninf, 0.0, 9.0],
    ///     [ninf, 9.0, ninf, 1.0],
    ///     [ninf, 0.0, 0.0, ninf],
    /// ])?;
    /// assert_eq!(g.best_tree(Rooting::Single)?.heads(), &[2, 0, 1]);
    /// let p = g.best_projective_tree(Rooting::Single)?;
    /// assert!(p.is_projective());
    /// assert_eq!(p.score(&g)?, 19.0);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn best_projective_tree(&self, rooting: Rooting) -> Result<Tree> {
        let (scores, labels) = match self.potentials() {
            Potentials::Scores => super::best_labels(self, super::log_score_of_score),
            Potentials::Weights => super::best_labels(self, super::log_score_of_weight),
        };
        let n1 = self.n() + 1;
        let heads = max_projective(self.n(), rooting, |h, m| scores[m * n1 + h])?;
        finish_tree(self.n(), self.is_labeled(), heads, |h, m| {
            labels[m * n1 + h]
        })
    }
}

/// The sum over projective trees `Σ_{d projective} Π_{e ∈ d} w_e` of a
/// weight graph in its own number type ([`Real`]): exact on exact rationals,
/// the number of projective trees for unit weights. Labels are collapsed.
/// `0` when no projective tree exists. `O(|labels| n² + n³)`.
///
/// # Errors
/// [`Error::Unsupported`] for score graphs (use [`Projective::log_partition`]).
///
/// ```
/// use spantree_core::{decode::projective::partition, Graph, Rooting};
/// let ones = vec![vec![0.0, 1.0, 1.0, 1.0], vec![0.0, 0.0, 1.0, 1.0],
///                 vec![0.0, 1.0, 0.0, 1.0], vec![0.0, 1.0, 1.0, 0.0]];
/// let g = Graph::from_weights(&ones)?;
/// assert_eq!(partition(&g, Rooting::Single)?, 7.0);
/// assert_eq!(partition(&g, Rooting::Multi)?, 12.0);
/// # Ok::<(), spantree_core::Error>(())
/// ```
pub fn partition<W: Scalar>(graph: &Graph<W>, rooting: Rooting) -> Result<W> {
    if graph.potentials() == Potentials::Scores {
        return Err(Error::Unsupported(
            "an exact projective partition of scores",
        ));
    }
    let chart = Chart::inside(graph.n(), rooting, |h, m| {
        let mut w = W::zero();
        for v in graph.values(h, m) {
            w += v;
        }
        Real(w)
    })?;
    Ok(chart.total().0.clone())
}

/// The distribution over the *projective* trees of a graph: `ln Z`, arc
/// marginals, entropy and gradients from one Eisner chart in the
/// [`LogExpectation`] semiring (inside `O(n³)` at construction, outside
/// `O(n³)` once, on demand). Scores in log space: nothing overflows.
/// Labeled graphs: trees range over labelings too (collapsed arc weights,
/// label shares for the label marginals and the entropy).
#[derive(Clone, Debug)]
pub struct Projective {
    rooting: Rooting,
    labels: usize,
    /// `θ(h → m, ℓ)`, `[h][m][ℓ]`, `−∞` when forbidden.
    theta: Vec<f64>,
    /// Collapsed `ln w(h → m)` and the label-share-weighted mean score.
    chart: Chart<LogExpectation>,
    outside: std::sync::OnceLock<Matrix<LogExpectation>>,
    graph: Graph<f64>,
}

impl Projective {
    /// Runs the inside pass. `O(|labels| n² + n³)`.
    ///
    /// # Errors
    /// None for a validated graph today (the `Result` leaves room for checks);
    /// quantities report the absence of projective trees.
    ///
    /// ```
    /// use spantree_core::{decode::projective::Projective, Graph, Rooting};
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// // Every tree on two words is projective.
    /// let p = Projective::new(&g, Rooting::Multi)?;
    /// assert!((p.log_partition()? - 13f64.ln()).abs() < 1e-12);
    /// let mu = p.marginals()?;
    /// assert!((mu[(2, 1)] - 8.0 / 13.0).abs() < 1e-12);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn new(graph: &Graph<f64>, rooting: Rooting) -> Result<Self> {
        let n = graph.n();
        let labels = graph.labels();
        let n1 = n + 1;
        let is_scores = graph.potentials() == Potentials::Scores;
        let mut theta = Vec::with_capacity(n1 * n1 * labels);
        for h in 0..n1 {
            for m in 0..n1 {
                for &v in graph.values(h, m) {
                    let s = if is_scores { v } else { v.ln() };
                    theta.push(if m == 0 || h == m {
                        f64::NEG_INFINITY
                    } else {
                        s
                    });
                }
            }
        }
        let chart = Chart::inside(n, rooting, |h, m| {
            let th = &theta[(h * n1 + m) * labels..(h * n1 + m + 1) * labels];
            arc_value(th)
        })?;
        Ok(Projective {
            rooting,
            labels,
            theta,
            chart,
            outside: std::sync::OnceLock::new(),
            graph: graph.clone(),
        })
    }

    fn n(&self) -> usize {
        self.chart.n()
    }

    /// The rooting.
    pub fn rooting(&self) -> Rooting {
        self.rooting
    }

    fn check(&self) -> Result<()> {
        self.graph
            .spanning_tree(self.rooting)
            .map_err(Error::NoSpanningTree)?;
        if self.chart.total().log == f64::NEG_INFINITY {
            return Err(Error::NoProjectiveTree);
        }
        Ok(())
    }

    /// `ln Z` over projective trees; `−∞` when there is none. `O(1)`.
    ///
    /// # Errors
    /// [`Error::Numerical`] when the result is not finite although trees
    /// exist (scores near `±1e308`).
    pub fn log_partition(&self) -> Result<f64> {
        let v = self.chart.total().log;
        if v.is_nan() || v == f64::INFINITY {
            return Err(crate::Numerical::NotFinite.into());
        }
        Ok(v)
    }

    fn arc_totals(&self) -> &Matrix<LogExpectation> {
        self.outside.get_or_init(|| self.chart.arc_totals())
    }

    /// Projective arc marginals `μ[h][m]`, `(n+1) × (n+1)`, the gradient of
    /// `ln Z` with respect to the collapsed scores; every column sums to `1`.
    /// `O(n³)` once.
    ///
    /// # Errors
    /// [`Error::NoSpanningTree`], [`Error::NoProjectiveTree`].
    pub fn marginals(&self) -> Result<Matrix<f64>> {
        self.check()?;
        let ln_z = self.chart.total().log;
        Ok(self.arc_totals().map(|t| (t.log - ln_z).exp()))
    }

    /// `∂ ln Z / ∂θ`: the [`Projective::marginals`].
    ///
    /// # Errors
    /// As [`Projective::marginals`].
    pub fn grad_log_partition(&self) -> Result<Matrix<f64>> {
        self.marginals()
    }

    /// The share of label `l` in arc `i = h (n+1) + m`.
    fn share(&self, i: usize, l: usize) -> f64 {
        let th = &self.theta[i * self.labels..(i + 1) * self.labels];
        if th[l] == f64::NEG_INFINITY {
            return 0.0;
        }
        (th[l] - crate::scalar::log_sum_exp(th.iter().copied())).exp()
    }

    /// Label marginals `μ(h → m, ℓ) = μ(h → m) · w(h → m, ℓ) / Σ_ℓ' w(h → m, ℓ')`,
    /// one matrix per label: the gradient of `ln Z` with respect to the
    /// per-label scores. `O(n³)` once.
    ///
    /// # Errors
    /// As [`Projective::marginals`].
    pub fn label_marginals(&self) -> Result<Vec<Matrix<f64>>> {
        let mu = self.marginals()?;
        let n1 = self.n() + 1;
        Ok((0..self.labels)
            .map(|l| Matrix::from_fn(n1, n1, |h, m| mu[(h, m)] * self.share(h * n1 + m, l)))
            .collect())
    }

    /// Shannon entropy of the distribution over projective (labeled) trees,
    /// `H = ln Z − E[θ(d)]`, from the inside pass alone. `O(1)`.
    ///
    /// # Errors
    /// As [`Projective::marginals`].
    pub fn entropy(&self) -> Result<f64> {
        self.check()?;
        let t = self.chart.total();
        Ok(t.log - t.mean)
    }

    /// `∂H/∂θ(h → m, ℓ)`, one matrix per label, from the outside pass in the
    /// expectation semiring: with `c_e = E[θ(d) | e ∈ d]`, `r_e` the
    /// share-weighted mean label score of arc `e` and `H = ln Z − E[θ]`,
    /// `∂H/∂θ_{eℓ} = −μ_{eℓ} (c_e − r_e + θ_{eℓ} − E[θ])`
    /// (for unlabeled graphs `−μ_e (c_e − E[θ])`). `O(n³)` once.
    ///
    /// # Errors
    /// As [`Projective::marginals`].
    pub fn grad_entropy(&self) -> Result<Vec<Matrix<f64>>> {
        let mu = self.label_marginals()?;
        let n1 = self.n() + 1;
        let totals = self.arc_totals();
        let expected = self.chart.total().mean;
        Ok(mu
            .iter()
            .enumerate()
            .map(|(l, ml)| {
                Matrix::from_fn(n1, n1, |h, m| {
                    let i = h * n1 + m;
                    let th = self.theta[i * self.labels + l];
                    if ml[(h, m)] == 0.0 || th == f64::NEG_INFINITY {
                        return 0.0;
                    }
                    let r = self.chart.arcs[i].mean;
                    -ml[(h, m)] * (totals[(h, m)].mean - r + th - expected)
                })
            })
            .collect())
    }

    /// The best projective tree; see [`Graph::best_projective_tree`].
    ///
    /// # Errors
    /// As [`max_projective`].
    pub fn best_tree(&self) -> Result<Tree> {
        self.graph.best_projective_tree(self.rooting)
    }

    /// The projective minimum-Bayes-risk tree: the projective tree `d̂`
    /// maximising the expected attachment score `(1/n) Σ_m μ(ĥ_m → m)` under
    /// this distribution over projective trees, i.e. Eisner's algorithm with
    /// the *projective* arc marginals as additive arc scores (labeled: the
    /// label marginals, best label per arc). The projective marginals, not
    /// the non-projective ones, because the risk is taken under the model
    /// the structure names: the non-projective marginals would give the
    /// non-projective model's MBR tree restricted to projective outputs.
    /// Only arcs the graph allows are used. `O(|labels| n² + n³)`.
    ///
    /// # Errors
    /// As [`Projective::marginals`].
    ///
    /// ```
    /// use spantree_core::{decode::projective::Projective, Graph, Rooting};
    /// let g = Graph::from_weights(&[
    ///     [0.0, 1.0, 2.0, 1.0],
    ///     [0.0, 0.0, 3.0, 1.0],
    ///     [0.0, 4.0, 0.0, 2.0],
    ///     [0.0, 1.0, 5.0, 0.0],
    /// ])?;
    /// let p = Projective::new(&g, Rooting::Single)?;
    /// let mbr = p.mbr_tree()?;
    /// assert!(mbr.is_projective());
    /// let mu = p.marginals()?;
    /// let eas = |t: &spantree_core::Tree| t.arcs().map(|(h, m)| mu[(h, m)]).sum::<f64>();
    /// assert!(eas(&mbr) >= eas(&p.best_tree()?));
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn mbr_tree(&self) -> Result<Tree> {
        let mu = self.label_marginals()?;
        let n = self.n();
        let n1 = n + 1;
        let mut labels = vec![0; n1 * n1];
        let mut scores: Vec<Option<f64>> = vec![None; n1 * n1];
        for m in 1..n1 {
            for h in (0..n1).filter(|&h| h != m && self.graph.is_allowed(h, m)) {
                // The first label of largest marginal.
                let (l, v) = mu
                    .iter()
                    .enumerate()
                    .fold((0, f64::NEG_INFINITY), |b, (l, ml)| {
                        if ml[(h, m)] > b.1 {
                            (l, ml[(h, m)])
                        } else {
                            b
                        }
                    });
                labels[m * n1 + h] = l;
                scores[m * n1 + h] = Some(v);
            }
        }
        let heads = max_projective(n, self.rooting, |h, m| scores[m * n1 + h])?;
        finish_tree(n, self.graph.is_labeled(), heads, |h, m| labels[m * n1 + h])
    }
}

/// The [`LogExpectation`] value of an arc from its label scores: collapsed
/// `ln w` and the share-weighted mean label score.
fn arc_value(theta: &[f64]) -> LogExpectation {
    let log = crate::scalar::log_sum_exp(theta.iter().copied());
    if log == f64::NEG_INFINITY {
        return LogExpectation::zero();
    }
    let mean = theta
        .iter()
        .filter(|&&t| t > f64::NEG_INFINITY)
        .map(|&t| (t - log).exp() * t)
        .sum();
    LogExpectation { log, mean }
}
