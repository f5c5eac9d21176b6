//! Graph weights in an engine's number type.

use std::ops::{Deref, DerefMut, Index, IndexMut};

use crate::error::{ArcRef, Error, Result};
use crate::graph::{Graph, Potentials};
use crate::linalg::{exp_difference, exp_row, exp_rows};
use crate::matrix::{from_f64, Matrix, Spare};
use crate::scalar::{FromScore, Scalar};
use pulp::{Arch, Simd, WithSimd};
use std::any::{Any, TypeId};
use std::marker::PhantomData;

/// One `(n+1) × (n+1)` matrix per label, indexed `[(ℓ, h, m)]`: label
/// marginals, label shares and the gradients with respect to labeled scores
/// (one matrix in all for an unlabeled graph). Dereferences to the slice of
/// matrices, so `g[ℓ]` is label `ℓ`'s matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct PerLabel<S>(Vec<Matrix<S>>);

impl<S> PerLabel<S> {
    /// The matrices, label by label.
    pub fn new(matrices: Vec<Matrix<S>>) -> Self {
        PerLabel(matrices)
    }

    /// The number of labels.
    pub fn labels(&self) -> usize {
        self.0.len()
    }

    /// The matrices, label by label, by value.
    pub fn into_vec(self) -> Vec<Matrix<S>> {
        self.0
    }
}

impl<S: Scalar> PerLabel<S> {
    /// `labels` zero matrices of `(n+1) × (n+1)`.
    pub fn zeros(labels: usize, n: usize) -> Self {
        PerLabel(vec![Matrix::zeros(n + 1, n + 1); labels])
    }
}

impl<S> Deref for PerLabel<S> {
    type Target = [Matrix<S>];
    fn deref(&self) -> &[Matrix<S>] {
        &self.0
    }
}

impl<S> DerefMut for PerLabel<S> {
    fn deref_mut(&mut self) -> &mut [Matrix<S>] {
        &mut self.0
    }
}

impl<S> Index<(usize, usize, usize)> for PerLabel<S> {
    type Output = S;
    fn index(&self, (l, h, m): (usize, usize, usize)) -> &S {
        &self.0[l][(h, m)]
    }
}

impl<S> IndexMut<(usize, usize, usize)> for PerLabel<S> {
    fn index_mut(&mut self, (l, h, m): (usize, usize, usize)) -> &mut S {
        &mut self.0[l][(h, m)]
    }
}

impl<S> Index<usize> for PerLabel<S> {
    type Output = Matrix<S>;
    fn index(&self, l: usize) -> &Matrix<S> {
        &self.0[l]
    }
}

impl<S> IndexMut<usize> for PerLabel<S> {
    fn index_mut(&mut self, l: usize) -> &mut Matrix<S> {
        &mut self.0[l]
    }
}

impl<S> FromIterator<Matrix<S>> for PerLabel<S> {
    fn from_iter<I: IntoIterator<Item = Matrix<S>>>(iter: I) -> Self {
        PerLabel(iter.into_iter().collect())
    }
}

impl<S: PartialEq> PartialEq<Vec<Matrix<S>>> for PerLabel<S> {
    fn eq(&self, other: &Vec<Matrix<S>>) -> bool {
        &self.0 == other
    }
}

impl<S> From<Vec<Matrix<S>>> for PerLabel<S> {
    fn from(matrices: Vec<Matrix<S>>) -> Self {
        PerLabel(matrices)
    }
}

impl<S> IntoIterator for PerLabel<S> {
    type Item = Matrix<S>;
    type IntoIter = std::vec::IntoIter<Matrix<S>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, S> IntoIterator for &'a PerLabel<S> {
    type Item = &'a Matrix<S>;
    type IntoIter = std::slice::Iter<'a, Matrix<S>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// The collapsed weights `w(h → m) = Σ_ℓ w(h → m, ℓ)` of a graph in an
/// engine's number type, possibly divided column by column by `e^{c_m}`
/// (an engine's private policy: the marginals do not change and
/// `ln Z = ln det L(w) + Σ_m c_m`), and the label shares
/// `w(h → m, ℓ) / w(h → m)` of a labeled graph.
#[derive(Clone, Debug)]
pub struct Prepared<S> {
    pub(crate) weights: Matrix<S>,
    pub(crate) shift: Vec<f64>,
    pub(crate) ln_scale: f64,
    pub(crate) shares: Option<PerLabel<S>>,
    /// The arc whose weight, formed in `f64` as `e^{θ − c_m}`, fell below
    /// `f64`'s normal range (zero or subnormal: lost, in whole or in part),
    /// with the largest true `θ − c_m` among such arcs, and the bound of
    /// [`lost_mass_ln`] on `ln` of the weight of the trees through such
    /// arcs; `None` when every allowed arc kept its weight.
    pub(crate) lost: Option<(LostArc, f64)>,
    /// Whether the weights are `e^{θ − c_m}` of one score per arc, formed
    /// in `f64` to a few ulps: then `ln w = θ − c_m` needs no logarithm
    /// (`Model::log_weights_from_scores`).
    pub(crate) from_scores: bool,
    /// The scores of a labeled graph, label-major (`[ℓ][h][m]`, `−∞` off
    /// the arcs), when its weights were formed from them in `f64`
    /// ([`labeled_scores`]): the log-weights `θ − c_m` are read off them
    /// contiguously, label by label.
    pub(crate) label_scores: Option<Vec<f64>>,
}

/// An allowed arc whose `f64` weight underflowed in the preparation: arc
/// `head → dependent`, of true shifted log-weight `gap = θ − c_m` (below
/// `ln 2⁻¹⁰²²`, about `−708.4`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LostArc {
    pub(crate) head: usize,
    pub(crate) dependent: usize,
    pub(crate) gap: f64,
}

impl LostArc {
    /// Keeps the arc of larger `gap` (the worse loss).
    fn worse(this: Option<LostArc>, other: LostArc) -> Option<LostArc> {
        match this {
            Some(a) if a.gap >= other.gap => Some(a),
            _ => Some(other),
        }
    }
}

/// [`Error::Overflow`] for arc `head → dependent` of log-weight `score`.
fn overflow(head: usize, dependent: usize, score: f64) -> Error {
    Error::Overflow {
        arc: ArcRef {
            head,
            dependent,
            label: None,
        },
        score,
    }
}

/// Whether an `f64` weight of an allowed arc lost bits to underflow.
fn underflowed(w: f64) -> bool {
    w < f64::MIN_POSITIVE
}

/// An upper bound on `ln` of the total weight, in the units of `ln Z`, of
/// the trees through the arcs whose `f64` weight underflowed (`lost`, the
/// one of largest `gap`), given `columns = Σ_m c_m`, `c_m` the largest
/// log-weight into word `m`. Every tree through such an arc `h → m` weighs
/// at most `e^{θ(h→m)} Π_{m' ≠ m} e^{c_{m'}} = e^{gap + Σ c}`, and there
/// are at most `(n+1)^{n−1}` trees (Cayley), so the weight the preparation
/// lost or rounded is below `e^{gap + Σ c + (n−1) ln(n+1)}`. `O(1)`.
fn lost_mass_ln(lost: Option<LostArc>, columns: f64, n: usize) -> Option<(LostArc, f64)> {
    let lost = lost?;
    let trees = (n as f64 - 1.0).max(0.0) * (n as f64 + 1.0).ln();
    Some((lost, lost.gap + columns + trees))
}

impl<S> Prepared<S> {
    /// The prepared weights, `(n+1) × (n+1)`.
    pub fn weights(&self) -> &Matrix<S> {
        &self.weights
    }

    /// `Σ_m c_m`: `ln Z = ln det L(w) + Σ_m c_m` (`0` when as given).
    pub fn ln_scale(&self) -> f64 {
        self.ln_scale
    }

    /// `e^{Σ_{m' ≠ m} c_{m'}}`, the factor that takes `∂Z/∂w` of the
    /// prepared weights of column `m` back to the graph's, to a few ulps:
    /// the shifts are summed in double-double (two-sum), so the exponential
    /// sees their sum exactly, not rounded to `|Σ c| ε` (`2⁻⁴⁵` at
    /// `Σ c ≈ 250`). `O(n)`; `+∞` beyond `f64`.
    pub(crate) fn scale_without(&self, m: usize) -> f64 {
        let (mut hi, mut lo) = (0.0f64, 0.0f64);
        for (k, &c) in self.shift.iter().enumerate() {
            if k != m {
                let s = hi + c;
                let bb = s - hi;
                lo += (hi - (s - bb)) + (c - bb);
                hi = s;
            }
        }
        let e = hi.exp();
        e + e * lo
    }
}

impl<S: FromScore> Prepared<S> {
    /// The weights as given, converted by `convert` (weights) or as `e^θ`
    /// (scores; [`FromScore::from_score`] where the type has its own
    /// exponential, `f64`'s `exp` otherwise; on `f64` itself
    /// ([`FromScore::VECTORISED_EXP`]) one vectorised exponential per arc,
    /// or per label and arc of a labeled graph). Exact
    /// engines need this: `Z` comes out exact. `O(|labels| n²)`.
    ///
    /// # Errors
    /// [`Error::Overflow`] for a score whose weight is not a finite `f64`
    /// (above ~709) on a type without its own exponential.
    pub fn as_given<W: Scalar>(graph: &Graph<W>, convert: impl Fn(&W) -> S) -> Result<Self> {
        if S::VECTORISED_EXP && graph.potentials() == Potentials::Scores {
            return if graph.labels() == 1 {
                unlabeled_scores(graph, false)
            } else {
                labeled_scores(graph, false)
            };
        }
        let n = graph.n();
        let mut weights = Matrix::zeros(n + 1, n + 1);
        let (mut lost, mut columns) = (None, 0.0);
        for m in 1..=n {
            let c = (0..=n)
                .map(|h| graph.log_weight(h, m))
                .fold(f64::NEG_INFINITY, f64::max);
            if c.is_finite() {
                columns += c;
            }
            for h in (0..=n).filter(|&h| graph.is_allowed(h, m)) {
                weights[(h, m)] = match graph.potentials() {
                    Potentials::Weights => {
                        let mut total = S::zero();
                        for v in graph.values(h, m) {
                            total += convert(v);
                        }
                        total
                    }
                    Potentials::Scores => {
                        // One score is its own log-weight: one exponential.
                        let lw = match graph.values(h, m) {
                            [one] => one.to_f64(),
                            _ => graph.log_weight(h, m),
                        };
                        let e = lw.exp();
                        match own_weight::<S, W>(graph.values(h, m)) {
                            Some(w) => w,
                            None if e.is_finite() => {
                                if underflowed(e) {
                                    let arc = LostArc {
                                        head: h,
                                        dependent: m,
                                        gap: lw - c,
                                    };
                                    lost = LostArc::worse(lost, arc);
                                }
                                S::from_f64(e)
                            }
                            None => return Err(overflow(h, m, lw)),
                        }
                    }
                };
            }
        }
        Ok(Prepared {
            weights,
            shift: vec![0.0; n + 1],
            ln_scale: 0.0,
            shares: shares(graph, &convert),
            lost: lost_mass_ln(lost, columns, n),
            from_scores: false,
            label_scores: None,
        })
    }

    /// Every column `m` divided by its largest weight `e^{c_m}`, so that the
    /// weights lie in `[0, 1]` and `ln Z = ln det L(w) + Σ_m c_m` never
    /// overflows whatever the scores. Labeled scores (on types without an
    /// exponential of their own) take `c_m` the largest *label* score into
    /// `m`, one vectorised exponential per label and arc: their collapsed
    /// weights lie in `[0, |labels|]`.
    /// `O(|labels| n²)`.
    pub fn shifted<W: Scalar>(graph: &Graph<W>, convert: impl Fn(&W) -> S) -> Self {
        if graph.labels() == 1 && graph.potentials() == Potentials::Scores {
            return unlabeled_scores(graph, true)
                .expect("unlabeled_scores refuses no weight when shifted");
        }
        // Types with an exponential of their own keep their own shares.
        if graph.potentials() == Potentials::Scores && S::from_score(0.0).is_none() {
            return labeled_scores(graph, true)
                .expect("labeled_scores refuses no weight when shifted");
        }
        // Only now: the routes above form their own weights (a zeroed
        // `(n+1)²` buffer was formed and dropped unused before them).
        let n = graph.n();
        let mut weights = Matrix::zeros(n + 1, n + 1);
        let mut shift = vec![0.0; n + 1];
        let mut lost = None;
        for m in 1..=n {
            let logs: Vec<f64> = (0..=n).map(|h| graph.log_weight(h, m)).collect();
            let c = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            shift[m] = if c.is_finite() { c } else { 0.0 };
            for (h, lw) in logs.into_iter().enumerate() {
                if lw == f64::NEG_INFINITY {
                    continue;
                }
                let w = match graph.potentials() {
                    // Each label's e^{θ − c} to a few ulps, summed: no
                    // rounded log-sum-exp of scores hundreds below c.
                    Potentials::Scores => graph
                        .values(h, m)
                        .iter()
                        .map(|v| exp_difference(v.to_f64(), shift[m]))
                        .sum(),
                    Potentials::Weights => (lw - shift[m]).exp(),
                };
                if underflowed(w) {
                    let arc = LostArc {
                        head: h,
                        dependent: m,
                        gap: lw - shift[m],
                    };
                    lost = LostArc::worse(lost, arc);
                }
                weights[(h, m)] = S::from_f64(w);
            }
        }
        let ln_scale = shift.iter().sum();
        Prepared {
            weights,
            ln_scale,
            shift,
            shares: shares(graph, &convert),
            lost: lost_mass_ln(lost, ln_scale, n),
            from_scores: false,
            label_scores: None,
        }
    }
}

/// The weights of an unlabeled graph of scores, `e^{θ − c_m}` with
/// `c_m` the column's largest score (`shifted`, row by row) or `e^θ` (as
/// given: the whole matrix in one run, without the two-sum), one
/// vectorised exponential per arc
/// ([`exp_differences`](crate::linalg::exp_differences): a few ulps, `S`
/// converted from `f64`), reading the graph's row-major scores in place
/// (`−∞` off the arcs). The arc of a lost (underflowed) or overflowing
/// weight is the one the per-arc loops found: column by column for the
/// weights as given, row by row when shifted; the rows are scanned for it
/// only where some lane left the vector path (the others hold normal
/// weights). `O(n²)`; besides the weights and the shifts, no buffer for
/// `f64` graphs and weights, two rows of `n + 1` otherwise. Instructions
/// per `Model::new` + `ln Z` (callgrind, AVX2 path, `op_loop log_z N 2000 0
/// f64`, against `op_loop kernel/exp+lu N 2000 0 lu`): this preparation
/// 6.2k → 2.0k at `n = 10`, 53.6k → 29.0k at `36`, before and after
/// session 17.
///
/// # Errors
/// [`Error::Overflow`] for a weight above `f64`'s range (as given only).
fn unlabeled_scores<S: FromScore, W: Scalar>(
    graph: &Graph<W>,
    shifted: bool,
) -> Result<Prepared<S>> {
    Arch::new().dispatch(FromScores {
        graph,
        shifted,
        labeled: false,
        scalar: PhantomData::<S>,
    })
}

/// The arguments of [`unlabeled_scores`] and [`labeled_scores`], run under
/// one instruction-set dispatch: the exponentials of every row
/// ([`exp_row`], what [`exp_differences`](crate::linalg::exp_differences)
/// runs) and the element-wise loops around them compiled for the detected
/// instruction set.
struct FromScores<'a, S, W> {
    graph: &'a Graph<W>,
    shifted: bool,
    labeled: bool,
    scalar: PhantomData<S>,
}

impl<S: FromScore, W: Scalar> WithSimd for FromScores<'_, S, W> {
    type Output = Result<Prepared<S>>;

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, simd: Sm) -> Result<Prepared<S>> {
        if self.labeled {
            labeled_rows(simd, self.graph, self.shifted)
        } else {
            unlabeled_rows(simd, self.graph, self.shifted)
        }
    }
}

/// The body of [`unlabeled_scores`]. Where the graph's values and the
/// weights are `f64` (the `f64` engines) the exponentials read the scores
/// in place and write the weights in place; the column maxima are formed
/// only when shifted (as given, only if some weight left the normal range,
/// for the bound on the lost mass).
#[inline(always)]
fn unlabeled_rows<S: FromScore, W: Scalar, Sm: Simd>(
    simd: Sm,
    graph: &Graph<W>,
    shifted: bool,
) -> Result<Prepared<S>> {
    let n1 = graph.n() + 1;
    let values = graph.raw_values();
    let direct = (graph as &dyn Any)
        .downcast_ref::<Graph<f64>>()
        .map(Graph::raw_values);
    let shift: Vec<f64> = if shifted {
        let mut best = vec![f64::NEG_INFINITY; n1];
        match direct {
            Some(v) => column_maxima_f64(simd, v, &mut best),
            None => column_maxima(values, &mut best),
        }
        for c in &mut best {
            if *c == f64::NEG_INFINITY {
                *c = 0.0;
            }
        }
        best
    } else {
        vec![0.0; n1]
    };
    // Summed before the exponentials, in the same order: the chain of
    // additions runs beside them rather than after.
    let ln_scale = if shifted { shift.iter().sum() } else { 0.0 };
    let b = if shifted { Some(&shift[..]) } else { None };
    // `f64` weights from `f64` scores: one of this thread's spares
    // ([`Spare`](crate::matrix::Spare)), every entry written below.
    let spare = direct
        .filter(|_| TypeId::of::<S>() == TypeId::of::<f64>())
        .and_then(|_| from_f64(Matrix::from_row_major(n1, n1, Spare::take(n1 * n1))));
    let mut weights = spare.unwrap_or_else(|| Matrix::<S>::zeros(n1, n1));
    let mut suspect = false;
    if let (Some(wf), Some(v)) = (
        (&mut weights as &mut dyn Any).downcast_mut::<Matrix<f64>>(),
        direct,
    ) {
        // `f64` in and out: the scores read and the weights written in
        // place; as given (no shift), the whole matrix in one run.
        let out = wf.as_mut_slice();
        if b.is_none() {
            if exp_row(simd, v, None, out) {
                suspect = row_suspect(v, out.iter().copied());
            }
        } else if exp_rows(simd, v, &shift, out) {
            // Shifted: the whole matrix in one run too, the shift read at
            // each vector's column offset (the same bits as row by row).
            suspect = row_suspect(v, out.iter().copied());
        }
    } else {
        let mut scratch = vec![0.0; 2 * n1];
        let (row, w) = scratch.split_at_mut(n1);
        for (r, out) in values
            .chunks_exact(n1)
            .zip(weights.as_mut_slice().chunks_exact_mut(n1))
        {
            for (a, v) in row.iter_mut().zip(r) {
                *a = v.to_f64();
            }
            let odd = exp_row(simd, row, b, w);
            for (o, &x) in out.iter_mut().zip(&*w) {
                *o = S::from_f64(x);
            }
            if odd {
                suspect |= row_suspect(row, w.iter().copied());
            }
        }
    }
    let mut lost = None;
    let mut columns = ln_scale;
    if suspect {
        // Rare: scan again in the order of the per-arc loops.
        let mut best = vec![f64::NEG_INFINITY; n1];
        column_maxima(values, &mut best);
        if !shifted {
            columns = best.iter().filter(|c| c.is_finite()).sum();
        }
        let arcs: Vec<(usize, usize)> = if shifted {
            (0..n1).flat_map(|h| (1..n1).map(move |m| (h, m))).collect()
        } else {
            (1..n1).flat_map(|m| (0..n1).map(move |h| (h, m))).collect()
        };
        for (h, m) in arcs {
            let theta = values[h * n1 + m].to_f64();
            if theta == f64::NEG_INFINITY {
                continue;
            }
            let x = weights[(h, m)].to_f64();
            // Shifted weights stay in [0, 1] for finite scores; a score made
            // infinite elsewhere (`Graph::powered`) is left to the checks of
            // `ln Z` (not finite), as the per-arc loop did.
            if !shifted && !x.is_finite() {
                return Err(overflow(h, m, theta));
            }
            if underflowed(x) {
                let c = if shifted { shift[m] } else { best[m] };
                let arc = LostArc {
                    head: h,
                    dependent: m,
                    gap: theta - c,
                };
                lost = LostArc::worse(lost, arc);
            }
        }
    }
    Ok(Prepared {
        weights,
        ln_scale,
        shift,
        shares: None,
        lost: lost_mass_ln(lost, columns, n1 - 1),
        from_scores: true,
        label_scores: None,
    })
}

/// Whether the weight `x` of an arc of score `a > −∞` lost bits to underflow
/// or overflowed, in a row of scores `a` and weights `x`. `O(n)`.
fn row_suspect(a: &[f64], x: impl Iterator<Item = f64>) -> bool {
    a.iter()
        .zip(x)
        .any(|(&a, x)| a > f64::NEG_INFINITY && !(f64::MIN_POSITIVE..=f64::MAX).contains(&x))
}

/// [`column_maxima`] of `f64` scores, the same bits: the columns in blocks
/// one vector wide, up to eight blocks kept in registers over all the rows
/// (as many chains as the maximum's latency needs to keep both pipes busy:
/// `n + 1 = 37` is one pass of 5 blocks on AVX-512, two of 5 on AVX2), the
/// last block overlapping the one before it when the row is not a whole
/// number of vectors (its columns' maxima are the same in both, and a later
/// pass's fold leaves a maximum as it is). The fold is [`vector_max`], one
/// `maxpd` on x86. Rows shorter than a vector fall back to the row-by-row
/// loop. `O(n²)`.
#[inline(always)]
fn column_maxima_f64<Sm: Simd>(simd: Sm, values: &[f64], best: &mut [f64]) {
    let n1 = best.len();
    let lanes = core::mem::size_of::<Sm::f64s>() / core::mem::size_of::<f64>();
    if n1 < lanes || lanes == 1 {
        column_maxima(values, best);
        return;
    }
    let blocks = n1.div_ceil(lanes);
    let passes = blocks.div_ceil(8);
    let mut first = 0;
    for pass in 0..passes {
        // The blocks shared out evenly among the passes.
        let k = (blocks - first).div_ceil(passes - pass);
        match k {
            1 => fold_blocks::<Sm, 1>(simd, values, best, first),
            2 => fold_blocks::<Sm, 2>(simd, values, best, first),
            3 => fold_blocks::<Sm, 3>(simd, values, best, first),
            4 => fold_blocks::<Sm, 4>(simd, values, best, first),
            5 => fold_blocks::<Sm, 5>(simd, values, best, first),
            6 => fold_blocks::<Sm, 6>(simd, values, best, first),
            7 => fold_blocks::<Sm, 7>(simd, values, best, first),
            _ => fold_blocks::<Sm, 8>(simd, values, best, first),
        }
        first += k;
    }
}

/// `K` blocks of [`column_maxima_f64`] from block `first` (the last
/// block of the row moved back to end at the row's end), folded over all
/// the rows, `K` chains side by side. `O(K · lanes · rows)`.
#[inline(always)]
fn fold_blocks<Sm: Simd, const K: usize>(simd: Sm, values: &[f64], best: &mut [f64], first: usize) {
    let n1 = best.len();
    let lanes = core::mem::size_of::<Sm::f64s>() / core::mem::size_of::<f64>();
    let load = |x: &[f64]| {
        Sm::as_simd_f64s(x)
            .0
            .first()
            .copied()
            .unwrap_or(simd.splat_f64s(f64::NAN))
    };
    let starts: [usize; K] = core::array::from_fn(|j| ((first + j) * lanes).min(n1 - lanes));
    let mut c = starts.map(|start| load(&best[start..start + lanes]));
    for row in values.chunks_exact(n1) {
        for (c, &start) in c.iter_mut().zip(&starts) {
            *c = vector_max(simd, load(&row[start..start + lanes]), *c);
        }
    }
    for (c, &start) in c.iter().zip(&starts) {
        let (o, _) = Sm::as_mut_simd_f64s(&mut best[start..start + lanes]);
        if let Some(o) = o.first_mut() {
            *o = *c;
        }
    }
}

/// `v > c ? v : c` lane by lane (the fold of [`column_maxima`]: `c` kept
/// on ties, so `+0` and `−0` come out in the order seen, and where `v` is
/// NaN). On x86's vector instruction sets that is exactly `maxpd(v, c)`
/// (it returns its second operand unless the first is greater), one
/// instruction of two cycles' latency against a compare and a blend;
/// elsewhere, and on the one-lane `Scalar` set (whose `max` is `f64::max`,
/// which may order the zeros or pass a NaN on), the compare and the select.
#[inline(always)]
fn vector_max<Sm: Simd>(simd: Sm, v: Sm::f64s, c: Sm::f64s) -> Sm::f64s {
    #[cfg(target_arch = "x86_64")]
    if Sm::F64_LANES > 1 {
        return simd.max_f64s(v, c);
    }
    simd.select_f64s(simd.greater_than_f64s(v, c), v, c)
}

/// `best[m] = max(best[m], max_h values[h][m])` over the rows of an
/// `(n+1) × (n+1)` matrix of scores, as `f64::max` folds them (NaN
/// ignored): a select, which vectorises. `O(n²)`.
fn column_maxima<W: Scalar>(values: &[W], best: &mut [f64]) {
    for r in values.chunks_exact(best.len()) {
        for (c, v) in best.iter_mut().zip(r) {
            let v = v.to_f64();
            *c = if v > *c { v } else { *c };
        }
    }
}

/// The collapsed weights and label shares of a labeled graph of scores, in
/// `f64`: one vectorised exponential per label and arc,
/// `e_{hmℓ} = e^{θ_{hmℓ} − c_m}` ([`exp_row`] over a whole row of heads,
/// `[m][ℓ]` contiguous as the graph holds it; a few ulps, low bits of the
/// difference kept), with `c_m = max_{h,ℓ} θ_{hmℓ}` when `shifted` (the
/// collapsed weights then lie in `[0, |labels|]`, `ln Z = ln det L(w) + Σ_m
/// c_m` exactly as the exponentials see the same `c_m`) and `c_m = 0` as
/// given. The collapsed weight is `w_{hm} = Σ_ℓ e_{hmℓ}` (labels in order)
/// and the shares `e_{hmℓ} / w_{hm}`: no logarithm, no second exponential.
///
/// Where a label's `e_{hmℓ}` fell below `f64`'s normal range although its
/// score is within `746` of its arc's best (all of an arc's labels far below
/// `c_m`, or overflow as given), that arc's shares are taken relative to its
/// best label instead, each label's `e^{θ_ℓ − max_ℓ' θ_ℓ'}` by
/// [`exp_difference`], as [`shares`] does: they keep their digits however
/// low the scores. The lost (underflowed) and overflowing arcs are found
/// and reported as by the per-arc loop of [`Prepared::as_given`]: column by
/// column, `gap` against `max_h ln w(h → m)`. `O(|labels| n²)`; four vectors
/// of `(n + 1) |labels|` besides the weights, shares and kept scores.
///
/// # Errors
/// [`Error::Overflow`] for a collapsed weight above `f64`'s range (as given only).
fn labeled_scores<S: FromScore, W: Scalar>(graph: &Graph<W>, shifted: bool) -> Result<Prepared<S>> {
    Arch::new().dispatch(FromScores {
        graph,
        shifted,
        labeled: true,
        scalar: PhantomData::<S>,
    })
}

/// The body of [`labeled_scores`].
#[inline(always)]
fn labeled_rows<S: FromScore, W: Scalar, Sm: Simd>(
    simd: Sm,
    graph: &Graph<W>,
    shifted: bool,
) -> Result<Prepared<S>> {
    let (n, labels) = (graph.n(), graph.labels());
    let n1 = n + 1;
    let width = n1 * labels;
    let values = graph.raw_values();
    // One allocation for the four row vectors; `cells`, `row` and `e` are
    // label-major (`[ℓ][m]`), `row` the transpose of a row of the graph's
    // values, kept in `kept` (label-major, `[ℓ][h][m]`).
    let mut scratch = vec![f64::NEG_INFINITY; 4 * width];
    let (best, rest) = scratch.split_at_mut(width);
    let (cells, rest) = rest.split_at_mut(width);
    let (row, e) = rest.split_at_mut(width);
    let mut kept = vec![f64::NEG_INFINITY; n1 * width];
    for r in values.chunks_exact(width) {
        for (c, v) in best.iter_mut().zip(r) {
            let v = v.to_f64();
            // A select rather than `f64::max`: it vectorises (no NaN here).
            *c = if v > *c { v } else { *c };
        }
    }
    let shift: Vec<f64> = best
        .chunks_exact(labels)
        .map(|b| {
            let c = b.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if shifted && c > f64::NEG_INFINITY {
                c
            } else {
                0.0
            }
        })
        .collect();
    for cell in cells.chunks_exact_mut(n1) {
        cell.copy_from_slice(&shift);
    }
    let mut weights = Matrix::zeros(n1, n1);
    let mut shares = PerLabel::zeros(labels, n);
    let mut collapsed = vec![0.0f64; n1];
    // The rare arcs whose shares are taken relative to their best label.
    let (mut scores, mut arc_e) = (Vec::new(), Vec::new());
    let mut suspect = false;
    for (h, r) in values.chunks_exact(width).enumerate() {
        for (l, out) in row.chunks_exact_mut(n1).enumerate() {
            for (a, v) in out.iter_mut().zip(r[l..].iter().step_by(labels)) {
                *a = v.to_f64();
            }
        }
        exp_row(simd, row, Some(cells), e);
        for (k, r) in kept.chunks_exact_mut(n1 * n1).zip(row.chunks_exact(n1)) {
            k[h * n1..(h + 1) * n1].copy_from_slice(r);
        }
        let mut odd = false;
        for (&x, &a) in e.iter().zip(&*row) {
            // A label's weight lost in whole or in part, or overflowing.
            odd |= a > f64::NEG_INFINITY && !(f64::MIN_POSITIVE..=f64::MAX).contains(&x);
        }
        // Each arc's labels summed in order, all arcs of the row side by side.
        collapsed.fill(0.0);
        for el in e.chunks_exact(n1) {
            for (w, &x) in collapsed.iter_mut().zip(el) {
                *w += x;
            }
        }
        for (out, &w) in weights.as_mut_slice()[h * n1..(h + 1) * n1]
            .iter_mut()
            .zip(&*collapsed)
        {
            *out = S::from_f64(w);
        }
        for (share, el) in shares.iter_mut().zip(e.chunks_exact(n1)) {
            let out = &mut share.as_mut_slice()[h * n1..(h + 1) * n1];
            for ((o, &w), &x) in out.iter_mut().zip(&*collapsed).zip(el) {
                let q = x / w;
                *o = S::from_f64(if w > 0.0 { q } else { 0.0 });
            }
        }
        if odd {
            suspect = true;
            for m in 0..n1 {
                scores.clear();
                scores.extend(r[m * labels..(m + 1) * labels].iter().map(Scalar::to_f64));
                arc_e.clear();
                arc_e.extend(e[m..].iter().step_by(n1));
                relative_shares(&mut shares, h, m, &scores, &arc_e);
            }
        }
    }
    let ln_scale = if shifted { shift.iter().sum() } else { 0.0 };
    let mut lost = None;
    let mut columns = ln_scale;
    if suspect {
        // Rare: scan again in the order of the per-arc loop of `as_given`.
        columns = 0.0;
        for m in 1..n1 {
            let c = (0..n1)
                .map(|h| graph.log_weight(h, m))
                .fold(f64::NEG_INFINITY, f64::max);
            if c.is_finite() {
                columns += c;
            }
            for h in (0..n1).filter(|&h| graph.is_allowed(h, m)) {
                let x = weights[(h, m)].to_f64();
                if !shifted && !x.is_finite() {
                    return Err(overflow(h, m, graph.log_weight(h, m)));
                }
                if underflowed(x) {
                    let arc = LostArc {
                        head: h,
                        dependent: m,
                        gap: graph.log_weight(h, m) - c,
                    };
                    lost = LostArc::worse(lost, arc);
                }
            }
        }
    }
    Ok(Prepared {
        weights,
        ln_scale,
        shift,
        shares: Some(shares),
        lost: lost_mass_ln(lost, columns, n),
        from_scores: false,
        label_scores: Some(kept),
    })
}

/// The shares of arc `h → m` relative to its best label (each label's
/// `e^{θ_ℓ − max θ}` by [`exp_difference`], as [`shares`] forms them) when
/// some label's weight `e` (formed against the column's `c_m`) fell below
/// the normal range while its score is within `746` of the arc's best:
/// then `e / Σ e` would lose digits that the relative form keeps. `O(|labels|)`.
fn relative_shares<S: Scalar>(
    shares: &mut PerLabel<S>,
    h: usize,
    m: usize,
    scores: &[f64],
    e: &[f64],
) {
    let best = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lost = scores
        .iter()
        .zip(e)
        .any(|(&t, &x)| t > f64::NEG_INFINITY && underflowed(x) && t - best > -746.0);
    if !lost {
        return;
    }
    let total: f64 = scores.iter().map(|&t| exp_difference(t, best)).sum();
    for (l, &t) in scores.iter().enumerate() {
        shares[(l, h, m)] = S::from_f64(exp_difference(t, best) / total);
    }
}

/// `Σ_ℓ e^{θ_ℓ}` at the type's own precision, where it has one.
fn own_weight<S: FromScore, W: Scalar>(scores: &[W]) -> Option<S> {
    let mut total = S::zero();
    for s in scores {
        let s = s.to_f64();
        if s > f64::NEG_INFINITY {
            total += S::from_score(s)?;
        }
    }
    Some(total)
}

/// `w(h → m, ℓ) / Σ_ℓ' w(h → m, ℓ')` per label; `0` for forbidden arcs;
/// `None` for unlabeled graphs.
fn shares<S: FromScore, W: Scalar>(
    graph: &Graph<W>,
    convert: &impl Fn(&W) -> S,
) -> Option<PerLabel<S>> {
    if !graph.is_labeled() {
        return None;
    }
    let (n, labels) = (graph.n(), graph.labels());
    let own_precision = S::from_score(0.0).is_some();
    let mut shares = PerLabel::zeros(labels, n);
    // One buffer for every arc's label weights (and one in `f64`).
    let mut ws: Vec<S> = Vec::with_capacity(labels);
    let mut relative: Vec<f64> = Vec::with_capacity(labels);
    for h in 0..=n {
        for m in (0..=n).filter(|&m| graph.is_allowed(h, m)) {
            let vals = graph.values(h, m);
            ws.clear();
            match graph.potentials() {
                Potentials::Scores if own_precision => {
                    ws.extend(vals.iter().map(|v| {
                        own_weight::<S, W>(std::slice::from_ref(v)).unwrap_or_else(S::zero)
                    }))
                }
                Potentials::Scores => {
                    // Relative to the best label, each to a few ulps: the
                    // shares keep their digits however low the scores.
                    let best = vals
                        .iter()
                        .map(Scalar::to_f64)
                        .fold(f64::NEG_INFINITY, f64::max);
                    relative.clear();
                    relative.extend(vals.iter().map(|v| exp_difference(v.to_f64(), best)));
                    let total: f64 = relative.iter().sum();
                    for (l, w) in relative.iter().enumerate() {
                        shares[(l, h, m)] = S::from_f64(w / total);
                    }
                    continue;
                }
                Potentials::Weights => ws.extend(vals.iter().map(convert)),
            }
            let mut total = S::zero();
            for w in &ws {
                total += w;
            }
            for (l, w) in ws.drain(..).enumerate() {
                shares[(l, h, m)] = w / total.clone();
            }
        }
    }
    Some(shares)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{by_lanes, stream};

    /// The shifted and as-given weights of `f64` scores, formed in one of
    /// this thread's spares ([`Spare`]), are those formed in a zeroed
    /// buffer (no spare kept), bit for bit, when the spares hold NaN: every
    /// entry is written. Sizes 1–40, with `−∞` scores (zero weights).
    #[test]
    fn weights_in_spares_are_those_in_zeroed_buffers() {
        let mut next = stream(41);
        for n in 1..=40 {
            let n1 = n + 1;
            let rows: Vec<Vec<f64>> = (0..n1)
                .map(|h| {
                    (0..n1)
                        .map(|m| {
                            let u = next();
                            if h == m || m == 0 || u < 0.1 {
                                f64::NEG_INFINITY
                            } else {
                                8.0 * u - 4.0
                            }
                        })
                        .collect()
                })
                .collect();
            let Ok(graph) = Graph::from_scores(&rows) else {
                panic!("scores of n = {n}");
            };
            for shifted in [true, false] {
                let weights = |poison: bool| {
                    if poison {
                        crate::matrix::poison_spares(n1 * n1);
                    } else {
                        crate::matrix::clear_spares();
                    }
                    let p: Prepared<f64> = if shifted {
                        Prepared::shifted(&graph, |&w| w)
                    } else {
                        Prepared::as_given(&graph, |&w| w).unwrap_or_else(|_| panic!("n = {n}"))
                    };
                    let bits: Vec<u64> = p.weights.as_slice().iter().map(|x| x.to_bits()).collect();
                    bits
                };
                assert_eq!(weights(true), weights(false), "n = {n}, shifted {shifted}");
            }
        }
    }

    #[derive(Clone, Copy)]
    struct Maxima<'a> {
        values: &'a [f64],
        start: &'a [f64],
    }

    impl WithSimd for Maxima<'_> {
        type Output = Vec<f64>;

        fn with_simd<Sm: Simd>(self, simd: Sm) -> Vec<f64> {
            let mut best = self.start.to_vec();
            column_maxima_f64(simd, self.values, &mut best);
            best
        }
    }

    /// The vector column maxima against their definition written out (a
    /// fold down each column keeping the earlier value unless the new one
    /// is greater, so `±0` ties keep the first seen), bit for bit, under
    /// every instruction set (`by_lanes`): every row length 1–40 (every
    /// block count and tail of 4 and 8 lanes, one and several passes),
    /// with `−∞` cells, whole `−∞` columns, ties and zeros of both signs,
    /// from `−∞` and from given starting maxima.
    #[test]
    fn column_maxima_are_the_fold_down_each_column() {
        let mut next = stream(22);
        for n1 in 1..=40 {
            let values: Vec<f64> = (0..n1 * n1)
                .map(|i| {
                    let (h, m) = (i / n1, i % n1);
                    let u = next();
                    if m == 0 || m % 7 == 3 || u < -0.6 {
                        f64::NEG_INFINITY
                    } else if u < -0.2 && m % 3 == 0 {
                        // Zeros of both signs tied for the maximum.
                        if h % 2 == 0 {
                            0.0
                        } else {
                            -0.0
                        }
                    } else if u < 0.0 {
                        // Ties among rows.
                        (4.0 * u).round()
                    } else {
                        -10.0 * u
                    }
                })
                .collect();
            for start in [
                vec![f64::NEG_INFINITY; n1],
                (0..n1)
                    .map(|m| match m % 4 {
                        0 => -0.0,
                        1 => 0.0,
                        2 => -3.0,
                        _ => f64::NEG_INFINITY,
                    })
                    .collect(),
            ] {
                let mut expected = start.clone();
                for m in 0..n1 {
                    for h in 0..n1 {
                        let v = values[h * n1 + m];
                        if v > expected[m] {
                            expected[m] = v;
                        }
                    }
                }
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                for got in by_lanes(Maxima {
                    values: &values,
                    start: &start,
                }) {
                    assert_eq!(bits(&got), bits(&expected), "n + 1 = {n1}");
                }
            }
        }
    }
}
