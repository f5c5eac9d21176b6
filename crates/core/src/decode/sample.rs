//! Exact sampling of trees from `p(d) = w(d) / Z`, both rootings.
//!
//! A [`Sampler`] is built once from a [`Model`] (it takes the model's
//! Laplacian inverse `X = L⁻¹`, `O(n³)`, formed at most once per model) and
//! then draws any number of trees from it. Randomness is a ChaCha stream per
//! `(seed, sentence id)` ([`rng`]), so every sample is reproducible and the
//! streams of different sentences are independent.
//!
//! # The marginal sampler (Colbourn, Myrvold & Neufeld 1996)
//!
//! Decide the heads of words `1, 2, …, n` in turn, each from its marginal
//! *conditional on the heads already chosen*. `Z = det L` is linear in each
//! column `m` of the Laplacian (every arc into `m` appears only there), and
//! the column contributed by an arc `h → m` of weight `w` is `w · v(h, m)`:
//!
//! * multi-root: `v(0, m) = e_m`, `v(h, m) = e_m − e_h`;
//! * single-root (Koo et al. 2007, row `1` of the Laplacian replaced by the
//!   root weights): `v(0, m) = e_1`, `v(h, m) = [m ≠ 1] e_m − [h ≠ 1] e_h`.
//!
//! Conditioning word `m` on head `h` replaces column `m` of the current
//! Laplacian `L` by `w v(h, m)`; by the matrix determinant lemma the
//! partition function of the conditioned graph is
//! `Z_h = Z · w(h → m) · (X v(h, m))[m]` (with `X = L⁻¹`, using
//! `X · L e_m = e_m`), and these sum to `Z` over `h`. So word `m` takes head
//! `h` with probability `p(h) = w(h → m) · (X v(h, m))[m]`: two entries of
//! row `m` of `X`. The Laplacian then changes by a rank-one term in column
//! `m`, and Sherman–Morrison updates the rows of `X` still needed:
//! `X[r] ← X[r] − ((X v)[r] / (X v)[m]) · X[m]` for the undecided words `r`
//! (the denominator is `p(h) / w > 0`). Each step is `O(n · #undecided)`, a
//! sample `n³/2` multiply–adds after one `O(n³)` inverse shared by all
//! samples. **Exactness**: the probability of the sampled tree is the
//! telescoping product `Π_m Z_m / Z_{m−1} = w(d) / Z`, whatever the order of
//! the words. Only field operations are used, so on exact rationals every
//! step probability is exact ([`Sampler::step_probabilities`]); the draw
//! itself compares a uniform `f64` with the probabilities rounded to `f64`.
//!
//! # Wilson's random walk (1996)
//!
//! Multi-root: every word `u` not yet in the tree walks to a head drawn with
//! probability `w(h → u) / Σ_{h'} w(h' → u)` until the walk meets the tree
//! (initially the root); the loop-erased path joins the tree. This is
//! Wilson's `RandomTreeWithRoot`, exact for every weighting (Wilson 1996,
//! Theorem 1: the tree has probability `∝ Π_u w(head(u) → u)`). Its expected
//! number of steps is `Σ_u G(u, u)`, the expected number of visits to `u` of
//! the walk from `u` before it is absorbed at the root; here
//! `G(u, u) = d_u X[u][u]` with `d_u = Σ_h w(h → u)` (the walk's matrix is
//! `I − P = D⁻¹ Lᵀ`). It is fast when the weights mix well, slow when the
//! walk lingers in heavy cycles.
//!
//! # Single-root: root child first, then Wilson rooted at it
//!
//! Every single-root tree `d` has one root child `r(d)`, and
//! `p(d) = p(r) · p(d | r)` with `p(r) = μ(0 → r) = ρ_r X[r][1]` (Koo et al.),
//! an exact marginal. Given `r`, the rest of the tree is an arborescence of
//! the words rooted at `r` with probability `∝ Π_{u ≠ r} w(head(u) → u)`
//! (the factor `ρ_r` is common to all of them), which is exactly what
//! Wilson's algorithm rooted at `r`, on the word arcs only, samples. Hence
//! the two stages draw `d` with probability `p(r) · p(d | r) = p(d)`: exact.
//! (The root-constrained Wilson variant of Stanojević & Cohen 2021, which
//! reweights the root arcs and rejects, is biased, as Stanojević 2022
//! shows; this one is not, because `p(r)` comes from the exact marginals.)
//! Root children `r` from which some word is unreachable get probability
//! `0` combinatorially, never from rounding. The marginal sampler on the
//! single-root Laplacian is the other exact single-root method.
//!
//! # The automatic choice
//!
//! [`Method::Auto`] compares the expected cost of one sample:
//! the marginal sampler costs `n³/2` multiply–adds, Wilson's algorithm its
//! expected number of steps `E[T]` (computed exactly in `O(n²)` from `X`:
//! the formula above for multi-root, and for single-root
//! `Σ_r p(r) Σ_{u ≠ r} d'_u G_r(u, u)` where the Green's functions of the
//! walks rooted at every word come from `X` by two Sherman–Morrison steps
//! each). Wilson is chosen when `60 ns · E[T] < 0.25 ns · n³/2 + 5 ns · n²`.
//! The constants come from `crates/bench/benches/sample.rs` (release, one
//! shared core, `N(0, 1)` scores, 100 samples per model, per sample the
//! difference to one sample): a walk step cost 21 ns at `n = 10, 36` and
//! 66 ns at `n = 100` including the per-sample overhead (a uniform draw and
//! an alias-table lookup per step); a multiply–add of the marginal sampler
//! 0.24 ns at `n = 100`, more at small `n` (the `n²` term). On such scores
//! `E[T] ≈ 2n` (16, 66, 200 single-root and 17, 76, 189 multi-root at
//! `n = 10, 36, 100`), so Wilson wins from `n ≈ 15` on: per single-root
//! sample 1.6 µs against 9.4 µs at `n = 36`, 12 µs against 120 µs at
//! `n = 100`. Weights that trap the walk in heavy cycles raise `E[T]`, and
//! the rule then switches to the marginal sampler, whose cost does not
//! depend on the weights.
//!
//! End to end, model and factorisation included
//! (`cargo bench -p spantree-bench --bench sample -- 'samples/(single|multi)/auto'`,
//! measured while the 2 cores were shared by other builds, so upper bounds):
//! one sample costs 37 µs, 0.33 ms and 3.2 ms single-root, 24 µs, 0.23 ms and
//! 1.6 ms multi-root at `n = 10, 36, 100`; 100 samples from one factorisation
//! cost 2.7, 6.8 and 52 µs per sample single-root, 1.9, 6.1 and 36 µs
//! multi-root. Exact pure-Python samplers take about 38 ms per sample at
//! `n = 100`, and a compiled single-root sampler that refactorises per
//! sample about 4.7 ms.

use rand::SeedableRng;

/// The trait of random generators ([`Sampler::sample`] takes any).
pub use rand::Rng;
/// The generator type of [`rng`], re-exported so that callers need no
/// dependency of their own.
pub use rand_chacha::ChaCha8Rng;

use crate::engine::{Engine, Factors, PerLabel};
use crate::error::{Error, Numerical, Result};
use crate::graph::Rooting;
use crate::matrix::Matrix;
use crate::model::Model;
use crate::scalar::Scalar;
use crate::tree::Tree;

/// Nanoseconds per step of Wilson's walk (a uniform draw and an alias
/// lookup), measured by `crates/bench/benches/sample.rs`.
const NS_PER_WALK_STEP: f64 = 60.0;
/// Nanoseconds per multiply–add of the marginal sampler's row updates.
const NS_PER_UPDATE: f64 = 0.25;
/// Nanoseconds per `n²` of the marginal sampler's other work (copying `X`,
/// the step distributions).
const NS_PER_SQUARE: f64 = 5.0;

/// The random generator of sentence `sentence` under `seed`: ChaCha8 seeded
/// from `seed`, on stream `sentence`. Streams of different sentences are
/// independent (ChaCha's 64-bit stream id), so the samples of a sentence do
/// not depend on which other sentences are processed or in which order.
///
/// ```
/// use spantree_core::decode::sample::{rng, Rng};
/// let a: u64 = rng(7, 3).random();
/// assert_eq!(a, rng(7, 3).random::<u64>());
/// assert_ne!(a, rng(7, 4).random::<u64>());
/// ```
pub fn rng(seed: u64, sentence: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(sentence);
    r
}

/// Which sampling algorithm a [`Sampler`] runs; see the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// The cheaper of the two by the expected cost of one sample.
    Auto,
    /// Conditional marginals with Sherman–Morrison updates, `O(n³)` per sample.
    Marginal,
    /// Wilson's walk (single-root: after drawing the root child), expected
    /// `O(E[T])` per sample.
    Wilson,
}

/// Draws exact samples from one model's distribution; built by
/// [`Model::sampler`]. Holds `X = L⁻¹` and the walk tables, so `k` samples
/// cost one `O(n³)` inverse plus `k` times the per-sample cost.
#[derive(Clone, Debug)]
pub struct Sampler<S> {
    n: usize,
    rooting: Rooting,
    method: Method,
    expected_steps: f64,
    weights: Matrix<S>,
    /// `X = L⁻¹`, `n × n`, row-major.
    inverse: Vec<S>,
    shares: Option<PerLabel<S>>,
    /// Per word `u` (row `u − 1`), the cumulative walk weights over heads
    /// `0..=n` (the root excluded for single-root).
    walk: Vec<f64>,
    /// The same distributions as alias tables (Walker 1977; Vose 1991), for
    /// `O(1)` draws: per word, `n + 1` acceptance probabilities and aliases.
    walk_accept: Vec<f64>,
    walk_alias: Vec<u32>,
    /// Single-root: the cumulative root-child probabilities over words.
    root_child: Vec<f64>,
}

impl<E: Engine> Model<E> {
    /// A sampler for this model's distribution, running `method` (see
    /// [`sample`](crate::decode::sample) for the algorithms and the rule of
    /// [`Method::Auto`]). `O(n³)` for `X = L⁻¹` (shared with the marginals)
    /// plus `O(|labels| n²)`.
    ///
    /// # Errors
    /// [`Error::NoSpanningTree`] when the distribution is empty;
    /// [`Error::Numerical`] when `L` is singular to working precision.
    ///
    /// ```
    /// use spantree_core::decode::sample::{rng, Method};
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::Accurate;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let model = Model::new(Accurate, &g, Rooting::Single)?;
    /// let sampler = model.sampler(Method::Auto)?;
    /// let trees = sampler.samples(100, &mut rng(42, 0))?;
    /// // Single-root trees: {0→1, 1→2} (weight 3) and {0→2, 2→1} (weight 8).
    /// assert!(trees.iter().all(|t| t.heads() == [0, 1] || t.heads() == [2, 0]));
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn sampler(&self, method: Method) -> Result<Sampler<E::Scalar>> {
        self.tree.map_err(Error::NoSpanningTree)?;
        let inverse = self.factors.inverse()?.as_slice().to_vec();
        Sampler::build(
            self.rooting(),
            method,
            self.factors.weights().clone(),
            inverse,
            self.prepared.shares.clone(),
        )
    }

    /// `k` trees drawn from the model by [`Method::Auto`] with the generator
    /// [`rng`]`(seed, sentence)`. `O(n³ + k · per-sample cost)`.
    ///
    /// # Errors
    /// As [`Model::sampler`] and [`Sampler::sample`].
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::Accurate;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let model = Model::new(Accurate, &g, Rooting::Multi)?;
    /// let a = model.samples(5, 1, 0)?;
    /// assert_eq!(a, model.samples(5, 1, 0)?);
    /// for t in &a {
    ///     assert!(model.log_probability(t)? <= 0.0);
    /// }
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn samples(&self, k: usize, seed: u64, sentence: u64) -> Result<Vec<Tree>> {
        self.sampler(Method::Auto)?
            .samples(k, &mut rng(seed, sentence))
    }
}

impl<S: Scalar> Sampler<S> {
    fn build(
        rooting: Rooting,
        method: Method,
        weights: Matrix<S>,
        inverse: Vec<S>,
        shares: Option<PerLabel<S>>,
    ) -> Result<Self> {
        let n = weights.rows() - 1;
        let mut s = Sampler {
            n,
            rooting,
            method,
            expected_steps: f64::INFINITY,
            weights,
            inverse,
            shares,
            walk: Vec::new(),
            walk_accept: Vec::new(),
            walk_alias: Vec::new(),
            root_child: Vec::new(),
        };
        if method != Method::Marginal {
            s.build_walk()?;
            s.expected_steps = s.expected_walk_steps();
        }
        if method == Method::Auto {
            let nf = n as f64;
            let marginal = NS_PER_UPDATE * nf * nf * nf / 2.0 + NS_PER_SQUARE * nf * nf;
            let wilson = NS_PER_WALK_STEP * s.expected_steps;
            s.method = if wilson < marginal {
                Method::Wilson
            } else {
                Method::Marginal
            };
        }
        Ok(s)
    }

    /// The number of words.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The algorithm in use ([`Method::Auto`] resolved).
    pub fn method(&self) -> Method {
        self.method
    }

    /// The expected number of steps of Wilson's walk per sample, `E[T]`
    /// (see the [module docs](self)); `+∞` when not computed
    /// ([`Method::Marginal`] requested) or when a walk could fail to end.
    pub fn expected_walk_steps(&self) -> f64 {
        if self.walk.is_empty() {
            return f64::INFINITY;
        }
        let n = self.n;
        let x = |i: usize, j: usize| self.inverse[i * n + j].to_f64();
        let w = |h: usize, m: usize| self.weights[(h, m)].to_f64();
        let total = |u: usize| self.walk[(u + 1) * (n + 1) - 1];
        let e = match self.rooting {
            Rooting::Multi => (0..n).map(|u| total(u) * x(u, u)).sum(),
            Rooting::Single => {
                // y = L⁰[0]ᵀ X, with L⁰ the root-free Laplacian (0-based words).
                let l0 = |i: usize| {
                    if i == 0 {
                        total(0)
                    } else {
                        -w(1, i + 1)
                    }
                };
                let y: Vec<f64> = (0..n)
                    .map(|j| (0..n).map(|i| l0(i) * x(i, j)).sum())
                    .collect();
                let mut expected = 0.0;
                let mut last = 0.0;
                for r in 0..n {
                    let p = self.root_child[r] - last;
                    last = self.root_child[r];
                    if p <= 0.0 {
                        continue;
                    }
                    let mut t = 0.0;
                    if r == 0 {
                        for m in 1..n {
                            t += total(m) * (x(m, m) - x(m, 0) * x(0, m) / x(0, 0));
                        }
                    } else {
                        let xrr = x(r, r);
                        let z = |j: usize| {
                            y[j] - f64::from(u8::from(j == 0))
                                - y[r] * (x(r, j) - f64::from(u8::from(j == r))) / xrr
                        };
                        let z0 = z(0);
                        for m in (0..n).filter(|&m| m != r) {
                            let xmm = x(m, m) - x(m, r) * x(r, m) / xrr;
                            let xm0 = x(m, 0) - x(m, r) * x(r, 0) / xrr;
                            t += total(m) * (xmm - xm0 * z(m) / (1.0 + z0));
                        }
                    }
                    expected += p * t;
                }
                expected / last
            }
        };
        if e.is_finite() && e >= 0.0 {
            e
        } else {
            f64::INFINITY
        }
    }

    fn build_walk(&mut self) -> Result<()> {
        let n = self.n;
        let skip_root = self.rooting == Rooting::Single;
        self.walk = Vec::with_capacity(n * (n + 1));
        for m in 1..=n {
            let mut acc = 0.0;
            for h in 0..=n {
                if !(skip_root && h == 0) && h != m {
                    acc += self.weights[(h, m)].to_f64().max(0.0);
                }
                self.walk.push(acc);
            }
        }
        if !self.walk.iter().all(|c| c.is_finite()) {
            return Err(Numerical::NotFinite.into());
        }
        let mut weights = vec![0.0; n + 1];
        for u in 0..n {
            let cum = &self.walk[u * (n + 1)..(u + 1) * (n + 1)];
            let mut last = 0.0;
            for (w, &c) in weights.iter_mut().zip(cum) {
                *w = c - last;
                last = c;
            }
            alias_table(&weights, &mut self.walk_accept, &mut self.walk_alias);
        }
        if self.rooting == Rooting::Single {
            let valid = valid_root_children(n, |h, m| self.weights[(h, m)].to_f64() > 0.0);
            let mut acc = 0.0;
            self.root_child = (0..n)
                .map(|r| {
                    if valid[r] {
                        // μ(0 → r) = ρ_r X[r][1] (Koo et al.).
                        let p = self.weights[(0, r + 1)].to_f64() * self.inverse[r * n].to_f64();
                        acc += p.max(0.0);
                    }
                    acc
                })
                .collect();
            if !(acc > 0.0 && acc.is_finite()) {
                return Err(Numerical::NotFinite.into());
            }
        }
        Ok(())
    }

    /// One tree drawn from `p(d) = w(d) / Z`, labeled on labeled graphs.
    /// Per sample: `n³/2` multiply–adds (marginal) or `O(E[T])` expected
    /// (Wilson), plus `O(n · |labels|)` for labels.
    ///
    /// # Errors
    /// [`Error::Numerical`] when rounding made a step distribution empty or
    /// not finite (floating-point engines only).
    ///
    /// ```
    /// use spantree_core::decode::sample::{rng, Method};
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::Accurate;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 0.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// // Word 2 cannot attach to the root: the only tree is 0 → 1 → 2.
    /// let model = Model::new(Accurate, &g, Rooting::Multi)?;
    /// let t = model.sampler(Method::Marginal)?.sample(&mut rng(0, 0))?;
    /// assert_eq!(t.heads(), &[0, 1]);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<Tree> {
        let mut scratch = Vec::new();
        self.sample_with(rng, &mut scratch)
    }

    /// `k` samples sharing this sampler's inverse (and one scratch buffer).
    ///
    /// # Errors
    /// As [`Sampler::sample`].
    pub fn samples<R: Rng + ?Sized>(&self, k: usize, rng: &mut R) -> Result<Vec<Tree>> {
        let mut scratch = Vec::new();
        (0..k)
            .map(|_| self.sample_with(rng, &mut scratch))
            .collect()
    }

    fn sample_with<R: Rng + ?Sized>(&self, rng: &mut R, scratch: &mut Vec<S>) -> Result<Tree> {
        let heads = match self.method {
            Method::Wilson => self.wilson(rng).0,
            _ => {
                let mut p = Vec::with_capacity(self.n + 1);
                self.run_marginal(scratch, |_, probs| {
                    p.clear();
                    p.extend(probs.iter().map(|x| x.to_f64().max(0.0)));
                    draw(rng, &p).ok_or(Error::Numerical(Numerical::NotFinite))
                })?
            }
        };
        self.with_labels(heads, |_, _, shares| {
            draw(rng, shares).ok_or(Error::Numerical(Numerical::NotFinite))
        })
    }

    fn with_labels(
        &self,
        heads: Vec<usize>,
        mut pick: impl FnMut(usize, usize, &[f64]) -> Result<usize>,
    ) -> Result<Tree> {
        let Some(shares) = &self.shares else {
            return Tree::new(heads);
        };
        let mut row = Vec::with_capacity(shares.labels());
        let mut labels = Vec::with_capacity(self.n);
        for (i, &h) in heads.iter().enumerate() {
            row.clear();
            row.extend(shares.iter().map(|s| s[(h, i + 1)].to_f64().max(0.0)));
            labels.push(pick(h, i + 1, &row)?);
        }
        Tree::with_labels(heads, labels)
    }

    /// `(X v(h, m))` at a row of `X` (0-based word `m`, head `h ∈ 0..=n`).
    fn xv(&self, row: &[S], h: usize, m: usize) -> S {
        match (self.rooting, h) {
            (Rooting::Multi, 0) => row[m].clone(),
            (Rooting::Multi, _) => row[m].clone() - row[h - 1].clone(),
            (Rooting::Single, 0) => row[0].clone(),
            (Rooting::Single, _) => {
                let mut v = if m == 0 { S::zero() } else { row[m].clone() };
                if h != 1 {
                    v -= &row[h - 1];
                }
                v
            }
        }
    }

    /// The marginal sampler: `pick(m, p)` chooses word `m + 1`'s head from
    /// its conditional probabilities `p[h]`, `h ∈ 0..=n`. `x` is scratch.
    fn run_marginal(
        &self,
        x: &mut Vec<S>,
        mut pick: impl FnMut(usize, &[S]) -> Result<usize>,
    ) -> Result<Vec<usize>> {
        let n = self.n;
        x.clear();
        x.extend_from_slice(&self.inverse);
        let mut p: Vec<S> = vec![S::zero(); n + 1];
        let mut heads = vec![0; n];
        for m in 0..n {
            let (done, rest) = x.split_at_mut((m + 1) * n);
            let row = &done[m * n..];
            for (h, ph) in p.iter_mut().enumerate() {
                let w = &self.weights[(h, m + 1)];
                *ph = if h == m + 1 || w.is_zero() {
                    S::zero()
                } else {
                    w.clone() * self.xv(row, h, m)
                };
            }
            let h = pick(m, &p)?;
            heads[m] = h;
            let denom = self.xv(row, h, m);
            if denom.is_zero() {
                // Only a forced walk along a tree of probability 0 gets here.
                break;
            }
            for xr in rest.chunks_exact_mut(n) {
                let f = self.xv(xr, h, m) / denom.clone();
                if f.is_zero() {
                    continue;
                }
                for (a, b) in xr.iter_mut().zip(row) {
                    *a -= f.clone() * b.clone();
                }
            }
        }
        Ok(heads)
    }

    /// The step probabilities of the marginal sampler forced along `tree`:
    /// for each word `m = 1..=n` the conditional probability of its head given
    /// the heads of `1..m`, followed on labeled models by the share of its
    /// label. Their product is `p(tree) = w(tree) / Z` (see the
    /// [module docs](self)), exactly on exact rationals; a tree of
    /// probability `0` ends with a `0`. `O(n³)`.
    ///
    /// # Errors
    /// [`Error::Mismatch`] when `tree` has the wrong number of words, or is
    /// unlabeled on a labeled model.
    ///
    /// ```
    /// use spantree_core::decode::sample::Method;
    /// use spantree_core::{Graph, Model, Rooting, Tree};
    /// use spantree_exact::{Exact, Rational};
    /// let w = |x: i32| Rational::from(x);
    /// let g = Graph::from_weights(&[[w(0), w(1), w(2)], [w(0), w(0), w(3)], [w(0), w(4), w(0)]])?;
    /// let model = Model::from_scalar_graph(Exact, &g, Rooting::Multi)?;
    /// let steps = model.sampler(Method::Marginal)?.step_probabilities(&Tree::new(vec![2, 0])?)?;
    /// let p = steps.into_iter().fold(w(1), |a, b| a * b);
    /// assert_eq!(p, Rational::from(8) / Rational::from(13));
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn step_probabilities(&self, tree: &Tree) -> Result<Vec<S>> {
        if tree.n() != self.n {
            return Err(Error::Mismatch {
                what: "words of the tree",
                expected: self.n,
                found: tree.n(),
            });
        }
        let mut steps = Vec::with_capacity(2 * self.n);
        let mut x = Vec::new();
        self.run_marginal(&mut x, |m, p| {
            let h = tree.head(m + 1);
            steps.push(p[h].clone());
            Ok(h)
        })?;
        if let Some(shares) = &self.shares {
            let labels = tree.labels().ok_or(Error::Mismatch {
                what: "labels of the tree",
                expected: self.n,
                found: 0,
            })?;
            for (i, &l) in labels.iter().enumerate() {
                let share = shares
                    .get(l)
                    .map_or(S::zero(), |s| s[(tree.head(i + 1), i + 1)].clone());
                steps.push(share);
            }
        }
        Ok(steps)
    }

    /// Wilson's walk: the heads and the number of steps.
    fn wilson<R: Rng + ?Sized>(&self, rng: &mut R) -> (Vec<usize>, usize) {
        let n = self.n;
        let n1 = n + 1;
        let mut in_tree = vec![false; n1];
        let mut next = vec![0usize; n1];
        let mut steps = 0;
        match self.rooting {
            Rooting::Multi => in_tree[0] = true,
            Rooting::Single => {
                let total = self.root_child[n - 1];
                let u = rng.random::<f64>() * total;
                let r = self.root_child.partition_point(|&c| c <= u).min(n - 1) + 1;
                in_tree[r] = true;
                next[r] = 0;
            }
        }
        for i in 1..n1 {
            let mut u = i;
            while !in_tree[u] {
                let base = (u - 1) * n1;
                let x = rng.random::<f64>() * n1 as f64;
                let i = (x as usize).min(n);
                next[u] = if x - (i as f64) < self.walk_accept[base + i] {
                    i
                } else {
                    self.walk_alias[base + i] as usize
                };
                u = next[u];
                steps += 1;
            }
            u = i;
            while !in_tree[u] {
                in_tree[u] = true;
                u = next[u];
            }
        }
        next.remove(0);
        (next, steps)
    }
}

/// Appends the alias table of non-negative `weights` (not all zero) by
/// Vose's (1991) method, `O(k)`: index `i` is kept with probability
/// `accept[i]`, otherwise replaced by `alias[i]`. Zero weights are never
/// drawn (their acceptance is `0` and their alias has weight).
fn alias_table(weights: &[f64], accept: &mut Vec<f64>, alias: &mut Vec<u32>) {
    let k = weights.len();
    let total: f64 = weights.iter().sum();
    let mut p: Vec<f64> = weights.iter().map(|w| w * k as f64 / total).collect();
    let heaviest = (0..k)
        .max_by(|&a, &b| weights[a].total_cmp(&weights[b]))
        .unwrap_or(0);
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..k).partition(|&i| p[i] < 1.0);
    let start = accept.len();
    accept.extend(std::iter::repeat_n(1.0, k));
    alias.extend((0..k).map(|i| i as u32));
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        accept[start + s] = p[s];
        alias[start + s] = l as u32;
        p[l] = (p[l] + p[s]) - 1.0;
        if p[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // Left-overs are 1 up to rounding; a zero weight never keeps itself.
    for i in small {
        if weights[i] > 0.0 {
            accept[start + i] = 1.0;
        } else {
            accept[start + i] = 0.0;
            alias[start + i] = heaviest as u32;
        }
    }
}

/// An index drawn with probability proportional to `weights` (non-negative);
/// `None` when they sum to zero or are not finite.
fn draw<R: Rng + ?Sized>(rng: &mut R, weights: &[f64]) -> Option<usize> {
    let total: f64 = weights.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return None;
    }
    let u = rng.random::<f64>() * total;
    let mut acc = 0.0;
    let mut last = None;
    for (i, &w) in weights.iter().enumerate() {
        if w > 0.0 {
            acc += w;
            last = Some(i);
            if u < acc {
                return last;
            }
        }
    }
    last
}

/// Which words `r` (0-based) reach every word over the word arcs `allowed`:
/// the possible root children of a single-root tree. `O(n²)`: the last word
/// to finish a depth-first search is the only candidate component, and the
/// answer is every word that reaches it, if it reaches all.
fn valid_root_children(n: usize, allowed: impl Fn(usize, usize) -> bool) -> Vec<bool> {
    let arc = |a: usize, b: usize| a != b && allowed(a + 1, b + 1);
    // Depth-first search over all words, iteratively; remember the last to finish.
    let mut seen = vec![false; n];
    let mut last = 0;
    for s in 0..n {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let mut stack = vec![(s, 0usize)];
        while let Some((u, next)) = stack.last_mut() {
            let u = *u;
            if let Some(v) = (*next..n).find(|&v| !seen[v] && arc(u, v)) {
                *next = v + 1;
                seen[v] = true;
                stack.push((v, 0));
            } else {
                stack.pop();
                last = u;
            }
        }
    }
    let reach = |forward: bool| {
        let mut seen = vec![false; n];
        seen[last] = true;
        let mut stack = vec![last];
        while let Some(u) = stack.pop() {
            for (v, s) in seen.iter_mut().enumerate() {
                let e = if forward { arc(u, v) } else { arc(v, u) };
                if e && !*s {
                    *s = true;
                    stack.push(v);
                }
            }
        }
        seen
    };
    if reach(true).iter().all(|&s| s) {
        reach(false)
    } else {
        vec![false; n]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_children_by_reachability() {
        // 1 → 2 → 3 → 2: only word 1 reaches all.
        let arcs = [(1, 2), (2, 3), (3, 2)];
        let v = valid_root_children(3, |h, m| arcs.contains(&(h, m)));
        assert_eq!(v, vec![true, false, false]);
        // A 3-cycle: every word.
        let arcs = [(1, 2), (2, 3), (3, 1)];
        assert_eq!(
            valid_root_children(3, |h, m| arcs.contains(&(h, m))),
            vec![true; 3]
        );
        // Two components: none.
        let arcs = [(1, 2), (2, 1)];
        assert_eq!(
            valid_root_children(3, |h, m| arcs.contains(&(h, m))),
            vec![false; 3]
        );
    }

    /// The distribution an alias table encodes, against the weights (`1e-15`:
    /// a few roundings of numbers below 1); zero weights get nothing.
    #[test]
    fn alias_tables_encode_their_weights() {
        for weights in [
            vec![0.0, 1.0, 3.0, 0.0],
            vec![2.0],
            vec![1.0; 7],
            vec![1e-300, 1.0, 0.0, 1e300, 5.0],
        ] {
            let (mut accept, mut alias) = (vec![9.0], vec![9]);
            alias_table(&weights, &mut accept, &mut alias);
            let k = weights.len();
            let mut p = vec![0.0; k];
            for i in 0..k {
                p[i] += accept[1 + i] / k as f64;
                p[alias[1 + i] as usize] += (1.0 - accept[1 + i]) / k as f64;
            }
            let total: f64 = weights.iter().sum();
            for (pi, w) in p.iter().zip(&weights) {
                assert!((pi - w / total).abs() < 1e-15, "{weights:?}: {p:?}");
                if *w == 0.0 {
                    assert_eq!(*pi, 0.0);
                }
            }
        }
    }

    /// The exact expected number of walk steps against the mean over many
    /// walks: a check of the Green's-function formulas, both rootings.
    #[test]
    fn expected_walk_steps_match_the_walks() {
        let n = 6;
        let mut r = rng(5, 0);
        let weights = Matrix::from_fn(n + 1, n + 1, |h, m| {
            if m == 0 || h == m {
                0.0
            } else {
                r.random::<f64>() * if h == 0 { 0.3 } else { 2.0 }
            }
        });
        for rooting in Rooting::ALL {
            let lap = crate::laplacian::laplacian(&weights, rooting);
            let inverse = invert(&lap);
            let s =
                Sampler::build(rooting, Method::Wilson, weights.clone(), inverse, None).unwrap();
            let k = 40_000;
            let total: usize = (0..k).map(|_| s.wilson(&mut r).1).sum();
            let mean = total as f64 / k as f64;
            let e = s.expected_walk_steps();
            // The step count has a standard deviation below 3 E[T] here, so
            // the mean of 40 000 walks is within 2 % of E[T] with room to spare.
            assert!((mean - e).abs() < 0.02 * e, "{rooting:?}: {mean} vs {e}");
        }
    }

    /// Gauss–Jordan with partial pivoting, for the unit test only.
    fn invert(a: &Matrix<f64>) -> Vec<f64> {
        let n = a.rows();
        let mut m: Vec<f64> = a.as_slice().to_vec();
        let mut x: Vec<f64> = Matrix::<f64>::identity(n).as_slice().to_vec();
        for c in 0..n {
            let p = (c..n)
                .max_by(|&i, &j| m[i * n + c].abs().total_cmp(&m[j * n + c].abs()))
                .unwrap();
            for j in 0..n {
                m.swap(c * n + j, p * n + j);
                x.swap(c * n + j, p * n + j);
            }
            let d = m[c * n + c];
            for j in 0..n {
                m[c * n + j] /= d;
                x[c * n + j] /= d;
            }
            for i in (0..n).filter(|&i| i != c) {
                let f = m[i * n + c];
                for j in 0..n {
                    m[i * n + j] -= f * m[c * n + j];
                    x[i * n + j] -= f * x[c * n + j];
                }
            }
        }
        x
    }
}
