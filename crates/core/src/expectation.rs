//! First-order expectations of additively decomposable functions
//! (Zmigrod, Vieira & Cotterell 2021, "T1"; [§1.3](crate::mathematics)), and the
//! reverse-mode gradient of any function of the (label) marginals.

use crate::engine::Engine;
use crate::error::{ArcRef, Error, Result};
use crate::gradient::{top_head_lanes, MAX_LANES};
use crate::matrix::Matrix;
use crate::model::Model;
use crate::scalar::Scalar;
use pulp::WithSimd;

/// An additively decomposable function `r(d) = Σ_{e ∈ d} r_e ∈ S^dim`, stored
/// sparse: only arcs (or labeled arcs) with non-zero values are listed, each
/// with its non-zero coordinates.
///
/// An entry whose [`ArcRef::label`] is `None` applies to the arc whatever its
/// label; `Some(ℓ)` applies to label `ℓ` only (labeled graphs).
#[derive(Clone, Debug, PartialEq)]
pub struct ArcFeatures<S> {
    dim: usize,
    /// Each entry's arc, in the order pushed.
    arcs: Vec<ArcRef>,
    /// Entry `e`'s `(coordinate, value)` pairs are `values[ends[e]..ends[e + 1]]`
    /// (`ends[0] = 0`): one flat array for all entries.
    ends: Vec<usize>,
    values: Vec<(usize, S)>,
    /// `Some(k)` while every entry has `k` pairs (`k = 1` and `2`, the
    /// common shapes, take loops without offsets); `None` once two differ.
    width: Option<usize>,
    reach: Reach,
}

/// The entries of [`ArcFeatures`], as pushed: each arc with its
/// `(coordinate, value)` pairs ([`ArcFeatures::entries`]).
#[derive(Clone, Debug)]
pub struct Entries<'a, S> {
    arcs: std::slice::Iter<'a, ArcRef>,
    ends: std::slice::Windows<'a, usize>,
    values: &'a [(usize, S)],
}

impl<'a, S> Iterator for Entries<'a, S> {
    type Item = (ArcRef, &'a [(usize, S)]);

    fn next(&mut self) -> Option<Self::Item> {
        let arc = *self.arcs.next()?;
        let (start, end) = match self.ends.next()? {
            &[start, end] => (start, end),
            _ => return None,
        };
        Some((arc, self.values.get(start..end).unwrap_or(&[])))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.arcs.size_hint()
    }
}

impl<S> ExactSizeIterator for Entries<'_, S> {}

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

/// `$body` on each entry `($arc, $entry)` of the features `$r`, in order, a
/// `for` loop (`continue` skips an entry): entries of one or two pairs
/// throughout take fixed-width chunks of the flat array, others
/// [`ArcFeatures::entries`] (the body written out in each, so the hot
/// loops stay inside their instruction-set dispatch). `O(R')`.
macro_rules! for_each_entry {
    ($r:expr, |$arc:ident, $entry:ident| $body:block) => {{
        let r = $r;
        match r.width {
            Some(1) => {
                for ($arc, $entry) in r.arcs.iter().zip(r.values.chunks_exact(1)) $body
            }
            Some(2) => {
                for ($arc, $entry) in r.arcs.iter().zip(r.values.chunks_exact(2)) $body
            }
            _ => {
                for ($arc, $entry) in r.entries() $body
            }
        }
    }};
}

impl<S: Scalar> ArcFeatures<S> {
    /// No features yet, of dimension `dim`.
    pub fn new(dim: usize) -> Self {
        ArcFeatures {
            dim,
            arcs: Vec::new(),
            ends: vec![0],
            values: Vec::new(),
            width: None,
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
        self.width = match (self.arcs.is_empty(), self.width) {
            (true, _) => Some(values.len()),
            (false, Some(k)) if k == values.len() => Some(k),
            _ => None,
        };
        self.arcs.push(arc);
        self.values.extend(values);
        self.ends.push(self.values.len());
        Ok(())
    }

    /// The dimension `R`.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The entries, as pushed: each arc with its `(coordinate, value)`
    /// pairs. `O(1)` per entry.
    pub fn entries(&self) -> Entries<'_, S> {
        Entries {
            arcs: self.arcs.iter(),
            ends: self.ends.windows(2),
            values: &self.values,
        }
    }

    /// The number of stored non-zeros `R'`-style: `Σ_e |r_e|`. `O(1)`.
    pub fn nonzeros(&self) -> usize {
        self.values.len()
    }

    /// Checks every entry's arc against a graph of `n` words and `labels`
    /// labels, as [`Model::check_arc`]: `O(1)` when all are arcs of it,
    /// `O(entries)` to name the first that is not.
    fn check(&self, n: usize, labels: usize) -> Result<()> {
        if self.reach.within(n, labels) {
            return Ok(());
        }
        self.arcs.iter().try_for_each(|arc| arc_of(n, labels, *arc))
    }

    /// The same features in another number type.
    pub fn map<T: Scalar>(&self, mut f: impl FnMut(&S) -> T) -> ArcFeatures<T> {
        ArcFeatures {
            dim: self.dim,
            arcs: self.arcs.clone(),
            ends: self.ends.clone(),
            values: self.values.iter().map(|(i, x)| (*i, f(x))).collect(),
            width: self.width,
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
        r.check(n, labels)?;
        let shares = self.is_labeled() && r.reach.labels > 0;
        // `f64` without shares: the same sums under one instruction-set
        // dispatch, the top heads in vectors (`expect_additive_f64`).
        if !shares {
            if let Some(e) = expect_additive_f64(&mu, r) {
                return Ok(e);
            }
        }
        // One pass along the rows (the marginals' layout): each word's first
        // head above 1/2, and the sum of the others.
        let mu = mu.as_slice();
        let (top, rest) = top_and_rest(mu, n1);
        let mut total = vec![Compensated::<E::Scalar>::zero(); r.dim()];
        // The label share `s` where an entry names a label of a labeled
        // graph, and none where it is one: `μ · 1` and `1 · r` are exact, so
        // skipping them keeps every bit. Features naming no label take the
        // loop without shares.
        if shares {
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
            let share = (SHARES && arc.label.is_some()).then(|| self.share(arc));
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
        seeds_of(r, a, self.n() + 1, self.labels())
    }
}

/// [`Model::contract_checked`] for `labels` seeds of `n1 × n1`. When no
/// entry names a label every seed takes the same sums: one is formed and
/// copied (the same bits as forming each; on labeled graphs the arcs'
/// loop then writes one matrix, not one per label). `O(R' + labels n1²)`.
fn seeds_of<S: Scalar>(r: &ArcFeatures<S>, a: &[S], n1: usize, labels: usize) -> Vec<Matrix<S>> {
    if r.reach.labels == 0 {
        let mut seed = Matrix::zeros(n1, n1);
        if !contract_f64(r, a, &mut seed) {
            contract_into(r, a, std::slice::from_mut(&mut seed));
        }
        return vec![seed; labels];
    }
    let mut seeds = vec![Matrix::zeros(n1, n1); labels];
    contract_into(r, a, &mut seeds);
    seeds
}

/// The body of [`seeds_of`]: each entry's `ḡ_e = Σ_k a_k
/// r_{e,k}` (summed from `0` in the entry's order) added to its label's
/// seed, or to every seed for an entry naming no label. `O(R')`.
fn contract_into<S: Scalar>(r: &ArcFeatures<S>, a: &[S], seeds: &mut [Matrix<S>]) {
    let n1 = seeds.first().map_or(0, Matrix::rows);
    for (arc, values) in r.entries() {
        let mut g = S::zero();
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
                for seed in seeds.iter_mut() {
                    if let Some(x) = seed.as_mut_slice().get_mut(k) {
                        *x += &g;
                    }
                }
            }
        }
    }
}

/// [`Model::expect_additive`] without label shares on `f64` marginals and
/// features: the same sums as [`top_and_rest`] and
/// [`Model::accumulate`]`::<false>`, term for term, in one instruction-set
/// dispatch ([`AdditiveF64`]); `None` for other scalars. `O(n² + R')`.
fn expect_additive_f64<S: Scalar>(mu: &Matrix<S>, r: &ArcFeatures<S>) -> Option<Vec<S>> {
    use std::any::Any;
    let mu = (mu as &dyn Any).downcast_ref::<Matrix<f64>>()?;
    let r = (r as &dyn Any).downcast_ref::<ArcFeatures<f64>>()?;
    let mut out = vec![S::zero(); r.dim()];
    let out64 = (&mut out as &mut dyn Any).downcast_mut::<Vec<f64>>()?;
    let n1 = mu.rows();
    let mut total = vec![(0.0, 0.0); r.dim()];
    let (mut top, mut rest) = (vec![usize::MAX; n1], vec![0.0; n1]);
    pulp::Arch::new().dispatch(AdditiveF64 {
        mu: mu.as_slice(),
        r,
        top: &mut top,
        rest: &mut rest,
        total: &mut total,
    });
    for (o, (sum, carry)) in out64.iter_mut().zip(total) {
        *o = sum + carry;
    }
    Some(out)
}

/// The `f64` body of [`expect_additive_f64`]: [`top_and_rest`] in vectors
/// ([`TopAndRestF64`]), then each entry's terms into its compensated sums
/// `(sum, carry)` as [`Compensated::add`] adds them (a scalar loop, under
/// the dispatch for the three-operand instructions). `O(n² + R')`.
struct AdditiveF64<'a> {
    mu: &'a [f64],
    r: &'a ArcFeatures<f64>,
    top: &'a mut [usize],
    rest: &'a mut [f64],
    total: &'a mut [(f64, f64)],
}

impl WithSimd for AdditiveF64<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<Sm: pulp::Simd>(self, simd: Sm) {
        let n1 = self.top.len();
        let (top, rest) = (self.top, self.rest);
        TopAndRestF64 {
            mu: self.mu,
            top: &mut *top,
            rest: &mut *rest,
        }
        .with_simd(simd);
        let total = self.total;
        let mu = self.mu;
        for_each_entry!(self.r, |arc, entry| {
            let (h, m) = (arc.head, arc.dependent);
            let Some(&w) = mu.get(h * n1 + m) else {
                continue;
            };
            if w == 0.0 {
                continue;
            }
            match (top.get(m), rest.get(m)) {
                (Some(&t), Some(&rest_m)) if t == h => {
                    for &(i, v) in entry {
                        if let Some(t) = total.get_mut(i) {
                            two_sum(t, -(v * rest_m));
                            two_sum(t, v);
                        }
                    }
                }
                _ => {
                    let mut add = |values: &[(usize, f64)]| {
                        for &(i, v) in values {
                            if let Some(t) = total.get_mut(i) {
                                two_sum(t, w * v);
                            }
                        }
                    };
                    // One or two coordinates (the common shapes) as
                    // straight-line code, the same terms in the same order.
                    match *entry {
                        [x] => add(&[x]),
                        [x, y] => add(&[x, y]),
                        _ => add(entry),
                    }
                }
            }
        });
    }
}

/// [`top_and_rest`] on `f64` marginals for the words `1..=n` (no arc
/// enters the root: its column is left as it is), a block of columns in
/// vector registers down the rows: in each column the first row whose
/// entry exceeds `1/2` (off the diagonal) is the top head, selected where
/// none was, and every other entry joins the column's sum, in row order.
/// The same heads and sums, bit for bit, as [`top_and_rest`]. Fewer words
/// than lanes take the scalar instruction set. `O(n²)`, no allocation.
struct TopAndRestF64<'a> {
    mu: &'a [f64],
    top: &'a mut [usize],
    rest: &'a mut [f64],
}

impl WithSimd for TopAndRestF64<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<Sm: pulp::Simd>(self, simd: Sm) {
        use crate::linalg::column_blocks;
        let n1 = self.top.len().min(self.rest.len());
        let n = n1.saturating_sub(1);
        if n == 0 || self.mu.len() < n1 * n1 {
            return;
        }
        if n < Sm::F64_LANES || Sm::F64_LANES > MAX_LANES {
            return self.with_simd(pulp::Scalar::new());
        }
        let lanes = Sm::F64_LANES;
        for c in column_blocks(n, lanes) {
            // Each row's entry joins the lane's sum unless it is the top head.
            let (heads, sums) =
                top_head_lanes(simd, self.mu, n1, c, |rest, x, _| simd.add_f64s(rest, x));
            let words = self.top[1 + c..].iter_mut().zip(&mut self.rest[1 + c..]);
            for ((t, r), (&head, &sum)) in words.zip(heads.iter().zip(&sums)).take(lanes) {
                *t = if head < 0.0 {
                    usize::MAX
                } else {
                    head as usize
                };
                *r = sum;
            }
        }
    }
}

/// [`Compensated::add`] on `f64`: `x` into `(sum, carry)`, the same bits.
/// Knuth's two-sum there and Dekker's fast two-sum here, with the larger
/// operand first, both give the rounding error of `s = sum + x` exactly (a
/// double in round-to-nearest, `+0` when none): the same `s`, error and
/// carry in three additions instead of six (five with both orders formed
/// and one selected, as LLVM compiles it on x86: still one fewer, and a
/// shorter chain). A sum that overflows carries a NaN or an infinity
/// against the other's NaN: its value is NaN either way.
#[inline(always)]
fn two_sum((sum, carry): &mut (f64, f64), x: f64) {
    let s = *sum + x;
    let error = if sum.abs() >= x.abs() {
        x - (s - *sum)
    } else {
        *sum - (s - x)
    };
    *carry += error;
    *sum = s;
}

/// [`contract_into`] for one seed on `f64` features and coefficients,
/// under one instruction-set dispatch ([`ContractF64`]); `false` (and
/// nothing done) for other scalars. `O(R')`.
fn contract_f64<S: Scalar>(r: &ArcFeatures<S>, a: &[S], seed: &mut Matrix<S>) -> bool {
    use std::any::Any;
    let (Some(r), Some(seed)) = (
        (r as &dyn Any).downcast_ref::<ArcFeatures<f64>>(),
        (seed as &mut dyn Any).downcast_mut::<Matrix<f64>>(),
    ) else {
        return false;
    };
    // `S` is `f64`: `to_f64` is the identity.
    let a: Vec<f64> = a.iter().map(Scalar::to_f64).collect();
    let n1 = seed.rows();
    pulp::Arch::new().dispatch(ContractF64 {
        r,
        a: &a,
        seed: seed.as_mut_slice(),
        n1,
    });
    true
}

/// The `f64` body of [`contract_f64`]: each entry's `ḡ_e`, summed from `0`
/// in the entry's order, added to `seed[h][m]`; entries naming a label are
/// the caller's to exclude. `O(R')`.
struct ContractF64<'a> {
    r: &'a ArcFeatures<f64>,
    a: &'a [f64],
    seed: &'a mut [f64],
    n1: usize,
}

impl WithSimd for ContractF64<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<Sm: pulp::Simd>(self, _simd: Sm) {
        let a = self.a;
        let sum = |values: &[(usize, f64)]| {
            let mut g = 0.0;
            for &(i, v) in values {
                if let Some(&a) = a.get(i) {
                    g += a * v;
                }
            }
            g
        };
        let (seed, n1) = (self.seed, self.n1);
        for_each_entry!(self.r, |arc, entry| {
            // One or two coordinates (the common shapes) as straight-line
            // code, the same sum.
            let g = match entry {
                &[x] => sum(&[x]),
                &[x, y] => sum(&[x, y]),
                values => sum(values),
            };
            if let Some(x) = seed.get_mut(arc.head * n1 + arc.dependent) {
                *x += g;
            }
        });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::by_lanes;
    use pulp::Simd;

    fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut stream = crate::testing::stream(seed);
        move || 0.5 * (stream() + 1.0)
    }

    /// Row-major `n1 × n1` "marginals" in `[0, 1)`: about a third of the
    /// columns below `1/2` throughout (no top head), the others with
    /// several entries above it (the first in row order is the top),
    /// diagonal entries above `1/2` included (never a top), some zeros.
    fn marginals(n1: usize, u: &mut impl FnMut() -> f64) -> Vec<f64> {
        let low: Vec<bool> = (0..n1).map(|_| u() < 0.35).collect();
        (0..n1 * n1)
            .map(|k| match u() {
                x if x < 0.1 => 0.0,
                x if low[k % n1] => 0.5 * x,
                x => x,
            })
            .collect()
    }

    /// The definition of [`top_and_rest`] for the words `1..n1`: the first
    /// row `h ≠ m` (in order) whose entry exceeds `1/2`, and the sum from
    /// `0` of the column's other entries in row order.
    fn top_rest_definition(mu: &[f64], n1: usize) -> (Vec<usize>, Vec<f64>) {
        let (mut top, mut rest) = (vec![usize::MAX; n1], vec![0.0; n1]);
        for m in 1..n1 {
            let t = (0..n1).find(|&h| h != m && mu[h * n1 + m] > 0.5);
            top[m] = t.unwrap_or(usize::MAX);
            rest[m] = (0..n1)
                .filter(|&h| Some(h) != t)
                .fold(0.0, |s, h| s + mu[h * n1 + m]);
        }
        (top, rest)
    }

    #[derive(Clone, Copy)]
    struct TopRestPass<'a> {
        mu: &'a [f64],
        n1: usize,
    }

    impl WithSimd for TopRestPass<'_> {
        type Output = (Vec<usize>, Vec<f64>);

        fn with_simd<Sm: Simd>(self, simd: Sm) -> Self::Output {
            let (mut top, mut rest) = (vec![usize::MAX; self.n1], vec![0.0; self.n1]);
            TopAndRestF64 {
                mu: self.mu,
                top: &mut top,
                rest: &mut rest,
            }
            .with_simd(simd);
            (top, rest)
        }
    }

    const SIZES: [usize; 12] = [1, 2, 3, 4, 5, 8, 9, 10, 12, 13, 17, 37];

    /// Under every instruction set, the vector pass finds the same top heads
    /// and the same sums, bit for bit, as the definition, overlapping last
    /// blocks and words fewer than lanes included.
    #[test]
    fn top_heads_and_rest_are_the_column_definition() {
        for n1 in SIZES {
            let mut u = uniform(n1 as u64 + 11);
            let mu = marginals(n1, &mut u);
            let (top, rest) = top_rest_definition(&mu, n1);
            for (fast_top, fast_rest) in by_lanes(TopRestPass { mu: &mu, n1 }) {
                assert_eq!(fast_top[1..], top[1..], "n1 = {n1}");
                let bits = |r: &[f64]| r[1..].iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&fast_rest), bits(&rest), "n1 = {n1}");
            }
        }
    }

    /// Label-free features of dimension `dim` on arcs of `n1 − 1` words:
    /// every arc (the order of `h`, then `m`), each with up to three values
    /// (zeros, repeats of a coordinate and empty entries included), and one
    /// arc twice.
    fn entries(n1: usize, dim: usize, u: &mut impl FnMut() -> f64) -> ArcFeatures<f64> {
        let mut f = ArcFeatures::new(dim);
        let arc = |head, dependent| ArcRef {
            head,
            dependent,
            label: None,
        };
        for h in 0..n1 {
            for m in (1..n1).filter(|&m| m != h) {
                let count = (u() * 4.0) as usize;
                let values = (0..count)
                    .map(|_| {
                        let i = (u() * dim as f64) as usize % dim;
                        let v = if u() < 0.1 { 0.0 } else { 8.0 * u() - 4.0 };
                        (i, v)
                    })
                    .collect();
                f.push(arc(h, m), values).expect("indices below dim");
            }
        }
        if n1 > 2 {
            f.push(arc(0, 1), vec![(0, 0.25), (0, -1.5)])
                .expect("indices below dim");
        }
        f
    }

    /// `two_sum` is Knuth's two-sum of [`Compensated::add`], bit for bit,
    /// on sums of hostile terms: magnitudes from `2⁻¹⁰⁸⁰` (subnormal) to
    /// `2¹⁰⁰⁰`, both signs, zeros of both signs, exact negations of the sum
    /// and terms of its magnitude (the branch's tie), each sum's `(sum,
    /// carry)` compared after every term.
    #[test]
    fn two_sum_is_knuths() {
        let mut u = uniform(97);
        for round in 0..200 {
            let (mut fast, mut knuth) = ((0.0, 0.0), Compensated::<f64>::zero());
            // Each round its own range of exponents, so that some sums stay
            // near their terms and others dwarf them.
            let (low, span) = ((u() * 2080.0) as i32 - 1080, 1 + (u() * 120.0) as i32);
            for _ in 0..60 {
                let sign = if u() < 0.5 { -1.0 } else { 1.0 };
                let x = match u() {
                    c if c < 0.05 => 0.0 * sign,
                    c if c < 0.1 => -fast.0,
                    c if c < 0.15 => fast.0 * sign,
                    _ => {
                        sign * (1.0 + u()) * 2f64.powi((low + (u() * span as f64) as i32).min(1000))
                    }
                };
                two_sum(&mut fast, x);
                knuth.add(x);
                assert_eq!(
                    fast.0.to_bits(),
                    knuth.sum.to_bits(),
                    "round {round}, x = {x:e}"
                );
                assert_eq!(
                    fast.1.to_bits(),
                    knuth.carry.to_bits(),
                    "round {round}, x = {x:e}"
                );
            }
        }
    }

    #[derive(Clone, Copy)]
    struct AdditivePass<'a> {
        mu: &'a [f64],
        n1: usize,
        r: &'a ArcFeatures<f64>,
    }

    impl WithSimd for AdditivePass<'_> {
        type Output = Vec<(f64, f64)>;

        fn with_simd<Sm: Simd>(self, simd: Sm) -> Self::Output {
            let mut total = vec![(0.0, 0.0); self.r.dim()];
            let (mut top, mut rest) = (vec![usize::MAX; self.n1], vec![0.0; self.n1]);
            AdditiveF64 {
                mu: self.mu,
                r: self.r,
                top: &mut top,
                rest: &mut rest,
                total: &mut total,
            }
            .with_simd(simd);
            total
        }
    }

    /// Under every instruction set, the `f64` body adds the same terms to
    /// the same compensated sums as the definition: entries in order, a
    /// zero marginal skipped, the top arc of its word as `−r rest` then
    /// `r`, any other as `μ_e r`.
    #[test]
    fn additive_sums_are_the_entrywise_definition() {
        let dim = 5;
        for n1 in SIZES {
            let mut u = uniform(n1 as u64 + 23);
            let mu = marginals(n1, &mut u);
            let r = entries(n1, dim, &mut u);
            let (top, rest) = top_rest_definition(&mu, n1);
            let mut want = vec![Compensated::<f64>::zero(); dim];
            for (arc, values) in r.entries() {
                let (h, m) = (arc.head, arc.dependent);
                let w = mu[h * n1 + m];
                if w == 0.0 {
                    continue;
                }
                for &(i, v) in values {
                    if top[m] == h {
                        want[i].add(-(v * rest[m]));
                        want[i].add(v);
                    } else {
                        want[i].add(w * v);
                    }
                }
            }
            for got in by_lanes(AdditivePass { mu: &mu, n1, r: &r }) {
                for (k, ((sum, carry), c)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(sum.to_bits(), c.sum.to_bits(), "n1 = {n1}, k = {k}");
                    assert_eq!(carry.to_bits(), c.carry.to_bits(), "n1 = {n1}, k = {k}");
                }
            }
        }
    }

    /// The definition of one seed: `ḡ_e = 0 + Σ_k a_k r_{e,k}` in the
    /// entry's order, added to entry `(h, m)` of a zero matrix.
    fn seed_definition<S: Scalar>(r: &ArcFeatures<S>, a: &[S], n1: usize, label: usize) -> Vec<S> {
        let mut seed = vec![S::zero(); n1 * n1];
        for (arc, values) in r.entries() {
            if arc.label.is_some_and(|l| l != label) {
                continue;
            }
            let mut g = S::zero();
            for (i, v) in values {
                g += a[*i].clone() * v.clone();
            }
            seed[arc.head * n1 + arc.dependent] += g;
        }
        seed
    }

    #[derive(Clone, Copy)]
    struct ContractPass<'a> {
        r: &'a ArcFeatures<f64>,
        a: &'a [f64],
        n1: usize,
    }

    impl WithSimd for ContractPass<'_> {
        type Output = Vec<f64>;

        fn with_simd<Sm: Simd>(self, simd: Sm) -> Vec<f64> {
            let mut seed = vec![0.0; self.n1 * self.n1];
            ContractF64 {
                r: self.r,
                a: self.a,
                seed: &mut seed,
                n1: self.n1,
            }
            .with_simd(simd);
            seed
        }
    }

    /// Under every instruction set, the `f64` seed body forms each entry's
    /// sum and adds it where the definition does, bit for bit.
    #[test]
    fn contraction_is_the_entrywise_definition() {
        let dim = 4;
        for n1 in SIZES {
            let mut u = uniform(n1 as u64 + 31);
            let r = entries(n1, dim, &mut u);
            let a: Vec<f64> = (0..dim).map(|_| 6.0 * u() - 3.0).collect();
            let want = seed_definition(&r, &a, n1, 0);
            for got in by_lanes(ContractPass { r: &r, a: &a, n1 }) {
                let bits = |s: &[f64]| s.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "n1 = {n1}");
            }
        }
    }

    /// The seeds of every label: label-free features (one seed formed and
    /// copied; `f64` and the generic loop of complex numbers) and features
    /// with labeled entries (one loop over all seeds) are each label's
    /// definition.
    #[test]
    fn every_label_has_its_seed() {
        let (dim, labels) = (3, 3);
        for n1 in [1, 2, 5, 12] {
            let mut u = uniform(n1 as u64 + 41);
            let mut r = entries(n1, dim, &mut u);
            let a: Vec<f64> = (0..dim).map(|_| 6.0 * u() - 3.0).collect();
            let check = |r: &ArcFeatures<f64>| {
                let got = seeds_of(r, &a, n1, labels);
                assert_eq!(got.len(), labels);
                for (l, seed) in got.iter().enumerate() {
                    let want = seed_definition(r, &a, n1, l);
                    let bits = |s: &[f64]| s.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(seed.as_slice()), bits(&want), "n1 = {n1}, l = {l}");
                }
                let c = r.map(|&x| num_complex::Complex64::new(x, -x / 3.0));
                let ac: Vec<_> = a
                    .iter()
                    .map(|&x| num_complex::Complex64::new(x, 0.5))
                    .collect();
                for (l, seed) in seeds_of(&c, &ac, n1, labels).iter().enumerate() {
                    assert_eq!(
                        seed.as_slice(),
                        seed_definition(&c, &ac, n1, l),
                        "n1 = {n1}"
                    );
                }
            };
            check(&r);
            if n1 > 2 {
                for l in 0..labels {
                    let arc = ArcRef {
                        head: 0,
                        dependent: 1 + l % (n1 - 1),
                        label: Some(l),
                    };
                    r.push(arc, vec![(l % dim, 1.0 + l as f64)])
                        .expect("index below dim");
                }
                check(&r);
            }
        }
    }
}
