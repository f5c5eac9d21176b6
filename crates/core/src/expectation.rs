//! First-order expectations of additively decomposable functions
//! (Zmigrod, Vieira & Cotterell 2021, "T1"; [§1.3](crate::mathematics)), and the
//! reverse-mode gradient of any function of the (label) marginals.

use crate::engine::Engine;
use crate::error::{ArcRef, Error, Result};
use crate::matrix::Matrix;
use crate::model::Model;
use crate::scalar::Scalar;

/// An additively decomposable function `r(d) = Σ_{e ∈ d} r_e ∈ S^dim`, stored
/// sparse: only arcs (or labeled arcs) with non-zero values are listed, each
/// with its non-zero coordinates.
///
/// An entry whose [`ArcRef::label`] is `None` applies to the arc whatever its
/// label; `Some(ℓ)` applies to label `ℓ` only (labeled graphs).
#[derive(Clone, Debug, PartialEq)]
pub struct ArcFeatures<S> {
    dim: usize,
    entries: Vec<(ArcRef, Vec<(usize, S)>)>,
    reach: Reach,
}

/// What the entries' arcs reach, kept up to date by [`ArcFeatures::push`]
/// (a function of the entries): checking every arc against a graph is then
/// `O(1)` per call instead of `O(1)` per entry.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Reach {
    /// The largest head or dependent named.
    node: usize,
    /// One more than the largest label named (`0` when no entry names one).
    labels: usize,
    /// Some entry names the root as dependent, or a self-loop: an arc of
    /// no graph.
    malformed: bool,
}

impl Reach {
    fn with(self, arc: ArcRef) -> Reach {
        Reach {
            node: self.node.max(arc.head).max(arc.dependent),
            labels: self
                .labels
                .max(arc.label.map_or(0, |l| l.saturating_add(1))),
            malformed: self.malformed || arc.dependent == 0 || arc.head == arc.dependent,
        }
    }

    /// Whether every arc is an arc of a graph of `n` words and `labels`
    /// labels ([`arc_of`] of each).
    fn within(self, n: usize, labels: usize) -> bool {
        !self.malformed && self.node <= n && self.labels <= labels
    }
}

impl<S: Scalar> ArcFeatures<S> {
    /// No features yet, of dimension `dim`.
    pub fn new(dim: usize) -> Self {
        ArcFeatures {
            dim,
            entries: Vec::new(),
            reach: Reach::default(),
        }
    }

    /// Adds `r_e` for one arc as `(coordinate, value)` pairs.
    ///
    /// # Errors
    /// [`Error::FeatureIndex`] for a coordinate `≥ dim`. (Whether the arc
    /// exists is checked against the graph when the features are used.)
    pub fn push(&mut self, arc: ArcRef, values: Vec<(usize, S)>) -> Result<()> {
        if let Some(&(index, _)) = values.iter().find(|(i, _)| *i >= self.dim) {
            return Err(Error::FeatureIndex {
                arc,
                index,
                dim: self.dim,
            });
        }
        self.reach = self.reach.with(arc);
        self.entries.push((arc, values));
        Ok(())
    }

    /// The dimension `R`.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The entries, as pushed.
    pub fn entries(&self) -> &[(ArcRef, Vec<(usize, S)>)] {
        &self.entries
    }

    /// The number of stored non-zeros `R'`-style: `Σ_e |r_e|`.
    pub fn nonzeros(&self) -> usize {
        self.entries.iter().map(|(_, v)| v.len()).sum()
    }

    /// Checks every entry's arc against a graph of `n` words and `labels`
    /// labels, as [`Model::check_arc`]: `O(1)` when all are arcs of it,
    /// `O(entries)` to name the first that is not.
    fn check(&self, n: usize, labels: usize) -> Result<()> {
        if self.reach.within(n, labels) {
            return Ok(());
        }
        self.entries
            .iter()
            .try_for_each(|(arc, _)| arc_of(n, labels, *arc))
    }

    /// The same features in another number type.
    pub fn map<T: Scalar>(&self, mut f: impl FnMut(&S) -> T) -> ArcFeatures<T> {
        ArcFeatures {
            dim: self.dim,
            entries: self
                .entries
                .iter()
                .map(|(a, v)| (*a, v.iter().map(|(i, x)| (*i, f(x))).collect()))
                .collect(),
            reach: self.reach,
        }
    }
}

impl<E: Engine> Model<E> {
    /// Checks that `arc` is an arc (and label) of this graph: a head in
    /// `0..=n`, a word `1..=n` as dependent, no self-loop, a label below the
    /// label count. `O(1)`.
    ///
    /// # Errors
    /// [`Error::NoSuchArc`].
    pub fn check_arc(&self, arc: ArcRef) -> Result<()> {
        arc_of(self.n(), self.labels(), arc)
    }

    /// `E[r] = Σ_e μ_e r_e` (label marginals for labeled entries), `O(n³)`
    /// once for the marginals, then `O(R')` for `R'` stored non-zeros.
    ///
    /// # Errors
    /// [`Error::NoSuchArc`] for an entry naming no arc of the graph; otherwise
    /// as [`Model::marginals`].
    ///
    /// ```
    /// use spantree_core::{expectation::ArcFeatures, ArcRef, Graph, Model, Rooting};
    /// use spantree_faer::F64;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let model = Model::new(F64, &g, Rooting::Multi)?;
    /// // r(d) = number of root attachments: E = 2·(2/13) + 1·(3/13) + 1·(8/13).
    /// let mut r = ArcFeatures::new(1);
    /// for m in 1..=2 {
    ///     r.push(ArcRef { head: 0, dependent: m, label: None }, vec![(0, 1.0)])?;
    /// }
    /// let e = model.expect_additive(&r)?;
    /// assert!((e[0] - 15.0 / 13.0).abs() < 1e-12);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn expect_additive(&self, r: &ArcFeatures<E::Scalar>) -> Result<Vec<E::Scalar>> {
        let mu = self.marginals_kept()?;
        let (n, labels) = (self.n(), self.labels());
        let n1 = n + 1;
        // Every tree has one arc into each word, `Σ_h μ_hm = 1`: the arc of
        // marginal above 1/2 enters as `1 − Σ_{h ≠ t} μ_hm`, its two terms
        // apart, and the sum is compensated. On nearly deterministic graphs
        // that `μ ≈ 1` is off by an ulp in `f64`, and those ulps, one per
        // word, cost GE's residual `E[f] − t` 3–5 bits, which its seed
        // amplified to 5–6 of the gradient's worst entry (spread ±50,
        // n = 60: 39.6–40.9 bits against 44.4–44.5; `HONEST_SEEDS=1
        // HONEST_FAMILY=spread cargo run --profile test -p spantree-faer
        // --example honest_accuracy 60`). Exact arithmetic is unchanged.
        // Cost: 5% more instructions on a whole `grad_ge_objective` of
        // `N(0, 1)` graphs (callgrind, `op_loop grad_ge 36 200 0 accurate`
        // and `… 10 2000 …`, 20 feature dimensions).
        // One pass along the rows (the marginals' layout): each word's first
        // head above 1/2, and the sum of the others.
        let mu = mu.as_slice();
        r.check(n, labels)?;
        let (top, rest) = top_and_rest(mu, n1);
        let mut total = vec![Compensated::<E::Scalar>::zero(); r.dim()];
        // The label share `s` where an entry names a label of a labeled
        // graph, and none where it is one: `μ · 1` and `1 · r` are exact, so
        // skipping them keeps every bit. Features naming no label take the
        // loop without shares.
        if self.is_labeled() && r.reach.labels > 0 {
            self.accumulate::<true>(r, mu, (&top, &rest), &mut total);
        } else {
            self.accumulate::<false>(r, mu, (&top, &rest), &mut total);
        }
        Ok(total.into_iter().map(Compensated::value).collect())
    }

    /// The body of [`Model::expect_additive`]: each entry's `μ_e s r_e` into
    /// `total`, the label share `s` read only when `SHARES` (a labeled graph
    /// and some entry naming a label). `O(R')`.
    fn accumulate<const SHARES: bool>(
        &self,
        r: &ArcFeatures<E::Scalar>,
        mu: &[E::Scalar],
        (top, rest): (&[usize], &[E::Scalar]),
        total: &mut [Compensated<E::Scalar>],
    ) {
        let n1 = self.n() + 1;
        for (arc, values) in r.entries() {
            let (h, m) = (arc.head, arc.dependent);
            let share = (SHARES && arc.label.is_some()).then(|| self.share(*arc));
            let mu_e = &mu[h * n1 + m];
            let weight = match &share {
                Some(s) => mu_e.clone() * s.clone(),
                None => mu_e.clone(),
            };
            if weight.is_zero() {
                continue;
            }
            if top[m] == h {
                for (i, v) in values {
                    let x = match &share {
                        Some(s) => s.clone() * v.clone(),
                        None => v.clone(),
                    };
                    let t = &mut total[*i];
                    t.add(-(x.clone() * rest[m].clone()));
                    t.add(x);
                }
            } else {
                for (i, v) in values {
                    total[*i].add(weight.clone() * v.clone());
                }
            }
        }
    }

    /// The total `r̄ = Σ_d w(d) r(d) = Z · E[r]` ("T1"). On stabilised
    /// backends `Z` may overflow: prefer [`Model::expect_additive`].
    ///
    /// # Errors
    /// As [`Model::expect_additive`].
    pub fn total_additive(&self, r: &ArcFeatures<E::Scalar>) -> Result<Vec<E::Scalar>> {
        let z = self.partition()?;
        Ok(self
            .expect_additive(r)?
            .into_iter()
            .map(|x| x * z.clone())
            .collect())
    }

    /// The seed `ḡ_e = Σ_k a_k r_{e,k}` that reverse mode needs for a function
    /// whose derivative with respect to `E[r]` is `a`: one `(n+1) × (n+1)`
    /// matrix per label (one in all for an unlabeled graph). `O(R')`.
    ///
    /// # Errors
    /// [`Error::Mismatch`] when `a.len() ≠ dim`; [`Error::NoSuchArc`].
    pub fn contract_features(
        &self,
        r: &ArcFeatures<E::Scalar>,
        a: &[E::Scalar],
    ) -> Result<Vec<Matrix<E::Scalar>>> {
        if a.len() != r.dim() {
            return Err(Error::Mismatch {
                what: "coefficients against feature dimension",
                expected: r.dim(),
                found: a.len(),
            });
        }
        r.check(self.n(), self.labels())?;
        Ok(self.contract_checked(r, a))
    }

    /// [`Model::contract_features`] for features whose arcs are known to
    /// be arcs of this graph, and `a.len() = dim` (an entry naming a label
    /// or coefficient out of range is skipped). `O(R')`.
    pub(crate) fn contract_checked(
        &self,
        r: &ArcFeatures<E::Scalar>,
        a: &[E::Scalar],
    ) -> Vec<Matrix<E::Scalar>> {
        let n1 = self.n() + 1;
        let mut seeds = vec![Matrix::zeros(n1, n1); self.labels()];
        for (arc, values) in r.entries() {
            let mut g = E::Scalar::zero();
            for (i, v) in values {
                if let Some(a) = a.get(*i) {
                    g += a.clone() * v.clone();
                }
            }
            let k = arc.head * n1 + arc.dependent;
            match arc.label {
                Some(l) => {
                    if let Some(x) = seeds.get_mut(l).and_then(|s| s.as_mut_slice().get_mut(k)) {
                        *x += g;
                    }
                }
                None => {
                    for seed in &mut seeds {
                        if let Some(x) = seed.as_mut_slice().get_mut(k) {
                            *x += &g;
                        }
                    }
                }
            }
        }
        seeds
    }
}

/// [`Model::check_arc`] for a graph of `n` words and `labels` labels. `O(1)`.
fn arc_of(n: usize, labels: usize, arc: ArcRef) -> Result<()> {
    let ok = arc.head <= n
        && (1..=n).contains(&arc.dependent)
        && arc.head != arc.dependent
        && arc.label.is_none_or(|l| l < labels);
    if ok {
        Ok(())
    } else {
        Err(Error::NoSuchArc { arc, n })
    }
}

/// Each word's first head `t_m` of marginal above `1/2` (`usize::MAX` when
/// none; [`top_heads`](crate::gradient::top_heads)'s rule) and `Σ_{h ≠ t_m} μ_hm`, the others summed in row order: one pass
/// along the rows of the row-major `(n+1) × (n+1)` marginals. `O(n²)`.
fn top_and_rest<S: Scalar>(mu: &[S], n1: usize) -> (Vec<usize>, Vec<S>) {
    let mut top = vec![usize::MAX; n1];
    let mut rest = vec![S::zero(); n1];
    for (h, row) in mu.chunks_exact(n1).enumerate() {
        // A row without an entry above 1/2 names no top head: every entry
        // joins its word's sum, in one pass without branches.
        if !row.iter().fold(false, |any, x| any | (x.to_f64() > 0.5)) {
            for (r, x) in rest.iter_mut().zip(row) {
                *r += x;
            }
            continue;
        }
        for (m, ((t, r), x)) in top.iter_mut().zip(&mut rest).zip(row).enumerate() {
            if crate::gradient::first_above_half(*t, h, m, x) {
                *t = h;
            } else {
                *r += x;
            }
        }
    }
    (top, rest)
}

/// A sum with its rounding errors carried apart (Knuth's two-sum, no
/// branch): the error of `k` additions is `ε` of the sum plus `k ε²` of the
/// terms, where the plain sum's is `k ε` of the partial sums. For exact
/// scalars the carry stays `0`. Six operations per term.
#[derive(Clone)]
struct Compensated<S> {
    sum: S,
    carry: S,
}

impl<S: Scalar> Compensated<S> {
    fn zero() -> Self {
        Compensated {
            sum: S::zero(),
            carry: S::zero(),
        }
    }

    fn add(&mut self, x: S) {
        let s = self.sum.clone() + x.clone();
        let x_part = s.clone() - self.sum.clone();
        let sum_part = s.clone() - x_part.clone();
        self.carry += (self.sum.clone() - sum_part) + (x - x_part);
        self.sum = s;
    }

    fn value(self) -> S {
        self.sum + self.carry
    }
}
