//! Second-order expectations `E[r(d) s(d)ᵀ]`, covariances and arc-pair
//! marginals (Zmigrod, Vieira & Cotterell 2021, "T2"; [§1.2–1.3](crate::mathematics)).

use std::collections::HashMap;

use crate::engine::{Engine, Factors};
use crate::error::{ArcRef, Result};
use crate::expectation::ArcFeatures;
use crate::laplacian::arc_entries;
use crate::matrix::Matrix;
use crate::model::Model;
use crate::scalar::Scalar;

/// How to compute second-order expectations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SecondOrder {
    /// The cheaper of the two by the operation counts below on dense
    /// engines; always [`SecondOrder::JacobianVector`] on cancellation-free
    /// ones ([`Factors::cancellation_free`]: `accurate`, `log-accurate`),
    /// where it inherits the elimination's accuracy.
    #[default]
    Auto,
    /// `R` reverse-mode passes, one per coordinate of `r`, sharing the
    /// factorisation: `O(R (n³ + R' n²) + R S' n²)` time, `O(n²)` extra memory.
    JacobianVector,
    /// Arc-pair marginals read from `X = L⁻¹` for every pair of stored
    /// feature entries: `O(|r| |s|)` pairs (`O(n⁴)` for dense features), each
    /// `O(1)`; `O(n² + R S)` memory, no `n² × n²` Hessian stored. On
    /// cancellation-free engines the entries of `X` lose their relative
    /// accuracy when root weights are small, so there each pair is
    /// `μ_e · P(f | e)` from the marginals of the graph conditioned on `e`
    /// (one cancellation-free elimination, `O(n³)`, per distinct arc of `r`).
    Hessian,
}

impl SecondOrder {
    /// `"auto"`, `"jacobian-vector"` or `"hessian"`.
    pub fn name(self) -> &'static str {
        match self {
            SecondOrder::Auto => "auto",
            SecondOrder::JacobianVector => "jacobian-vector",
            SecondOrder::Hessian => "hessian",
        }
    }
}

impl<E: Engine> Model<E> {
    /// `P(e ∈ d, f ∈ d)` for a labeled or unlabeled pair, from `X`:
    /// `w_e w_f Σ_{(i,j,σ) ∈ e} Σ_{(k,l,τ) ∈ f} σ τ (X[j][i] X[l][k] − X[j][k] X[l][i])`
    /// for arcs into different words (second derivative of the determinant,
    /// [§1.2](crate::mathematics)), `0` for different arcs into one word, `μ_e` for `e = f`,
    /// times the label shares. `O(1)`.
    pub(crate) fn pair(
        &self,
        x: &Matrix<E::Scalar>,
        mu: &Matrix<E::Scalar>,
        e: ArcRef,
        f: ArcRef,
    ) -> E::Scalar {
        let (eh, em, fh, fm) = (e.head, e.dependent, f.head, f.dependent);
        if (eh, em) == (fh, fm) {
            return match (e.label, f.label) {
                (Some(a), Some(b)) if a != b => E::Scalar::zero(),
                (Some(_), _) => mu[(eh, em)].clone() * self.share(e),
                (None, _) => mu[(eh, em)].clone() * self.share(f),
            };
        }
        let w = self.weights();
        if em == fm || w[(eh, em)].is_zero() || w[(fh, fm)].is_zero() {
            return E::Scalar::zero();
        }
        let rooting = self.rooting();
        let mut d = E::Scalar::zero();
        for (i, j, s1) in arc_entries(rooting, eh, em).into_iter().flatten() {
            for (k, l, s2) in arc_entries(rooting, fh, fm).into_iter().flatten() {
                let mut t = x[(j, i)].clone() * x[(l, k)].clone();
                t -= x[(j, k)].clone() * x[(l, i)].clone();
                if s1 * s2 > 0 {
                    d += t;
                } else {
                    d -= t;
                }
            }
        }
        d * w[(eh, em)].clone() * w[(fh, fm)].clone() * self.share(e) * self.share(f)
    }

    /// Arc-pair marginals `P(e ∈ d ∧ f ∈ d)` for the given pairs (labeled
    /// arcs for labeled graphs; a `None` label means any label). Dense
    /// engines: `O(n³)` once for `X`, then `O(1)` per pair. Cancellation-free
    /// engines ([`Factors::cancellation_free`]): `μ_e · P(f | e)`, the
    /// marginals of the graph whose only arc into `e`'s word is `e`, one
    /// elimination (`O(n³)`) per distinct first arc `e`; no entry of `X`,
    /// which loses its relative accuracy when root weights are small.
    ///
    /// # Errors
    /// [`Error::NoSuchArc`](crate::Error::NoSuchArc) for an arc not in the graph; as [`Model::marginals`].
    ///
    /// ```
    /// use spantree_core::{ArcRef, Graph, Model, Rooting};
    /// use spantree_faer::F64;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let model = Model::new(F64, &g, Rooting::Multi)?;
    /// let arc = |h, m| ArcRef { head: h, dependent: m, label: None };
    /// // 0 → 1 and 1 → 2 together: the tree of weight 3, out of 13.
    /// let p = model.pair_marginals(&[(arc(0, 1), arc(1, 2))])?;
    /// assert!((p[0] - 3.0 / 13.0).abs() < 1e-12);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn pair_marginals(&self, pairs: &[(ArcRef, ArcRef)]) -> Result<Vec<E::Scalar>> {
        for &(e, f) in pairs {
            self.check_arc(e)?;
            self.check_arc(f)?;
        }
        let route = self.pair_route(pairs.iter().map(|(e, _)| *e))?;
        let mu = self.marginals()?;
        Ok(pairs
            .iter()
            .map(|&(e, f)| self.pair_by(&route, &mu, e, f))
            .collect())
    }

    /// How pair marginals are read: from `X = L⁻¹` on dense engines; on
    /// cancellation-free ones ([`Factors::cancellation_free`]) from the
    /// marginals conditioned on each first arc `e` of `firsts`.
    fn pair_route(&self, firsts: impl Iterator<Item = ArcRef>) -> Result<PairRoute<'_, E::Scalar>> {
        if !self.factors.cancellation_free() {
            return Ok(PairRoute::Inverse(self.inverse()?));
        }
        self.ready()?;
        let mut conditioned = HashMap::new();
        for e in firsts {
            let key = (e.head, e.dependent);
            if e.head == e.dependent || conditioned.contains_key(&key) {
                continue;
            }
            if let Some(mu) = self.conditional_marginals(e.head, e.dependent)? {
                conditioned.insert(key, mu);
            }
        }
        Ok(PairRoute::Conditioned(conditioned))
    }

    /// The arc marginals given that arc `h → m` is in the tree: those of the
    /// graph whose only arc into `m` is `h → m` (every tree containing it,
    /// with its weight). `None` when `h → m` is forbidden or in no tree. `O(n³)`.
    fn conditional_marginals(&self, h: usize, m: usize) -> Result<Option<Matrix<E::Scalar>>> {
        let w = self.weights();
        if w[(h, m)].is_zero() {
            return Ok(None);
        }
        let mut kept = w.clone();
        for g in (0..kept.rows()).filter(|&g| g != h) {
            kept[(g, m)] = E::Scalar::zero();
        }
        let factors = self.engine().factorize(kept, self.rooting());
        if factors.zero_pivot().is_some() {
            // The arc is allowed but lies in no tree (μ_e = 0): no pair with it.
            return Ok(None);
        }
        Ok(Some(factors.marginals()?))
    }

    /// `P(e ∈ d, f ∈ d)` by the chosen route: [`Model::pair`] from `X`, or
    /// `μ_e · P(f ∈ d | e ∈ d)` (times the label shares), a product of two
    /// cancellation-free numbers.
    fn pair_by(
        &self,
        route: &PairRoute<'_, E::Scalar>,
        mu: &Matrix<E::Scalar>,
        e: ArcRef,
        f: ArcRef,
    ) -> E::Scalar {
        let conditioned = match route {
            PairRoute::Inverse(x) => return self.pair(x, mu, e, f),
            PairRoute::Conditioned(c) => c,
        };
        if (e.head, e.dependent) == (f.head, f.dependent) || e.dependent == f.dependent {
            // No inverse is read on these branches.
            return self.pair(&Matrix::zeros(0, 0), mu, e, f);
        }
        match conditioned.get(&(e.head, e.dependent)) {
            Some(given) => {
                mu[(e.head, e.dependent)].clone()
                    * given[(f.head, f.dependent)].clone()
                    * self.share(e)
                    * self.share(f)
            }
            None => E::Scalar::zero(),
        }
    }

    fn resolve(
        &self,
        r: &ArcFeatures<E::Scalar>,
        s: &ArcFeatures<E::Scalar>,
        algorithm: SecondOrder,
    ) -> Result<SecondOrder> {
        // Every feature arc is checked once, whichever route runs.
        for (arc, _) in r.entries().chain(s.entries()) {
            self.check_arc(arc)?;
        }
        if algorithm != SecondOrder::Auto {
            return Ok(algorithm);
        }
        if self.factors.cancellation_free() {
            // The Hessian route would read X (or condition once per arc of r);
            // the Jacobian–vector route inherits the elimination's accuracy.
            return Ok(SecondOrder::JacobianVector);
        }
        // Measured costs (f64, n = 36, 2 cores): one reverse pass ≈ 0.9 n³ ns
        // (two n × n solves plus O(n²) glue), one pair of stored entries ≈ 17 ns.
        let n = self.n() as f64;
        let jv = r.dim() as f64 * (0.9 * n * n * n + s.nonzeros() as f64);
        let hessian = 17.0 * r.entries().len() as f64 * s.entries().len() as f64;
        Ok(if jv <= hessian {
            SecondOrder::JacobianVector
        } else {
            SecondOrder::Hessian
        })
    }

    /// `Cov[r, s] = E[r sᵀ] − E[r] E[s]ᵀ`, an `R × S` matrix.
    ///
    /// The Jacobian–vector route computes it directly, without the
    /// subtraction: `Cov[r_i, s_j] = Σ_f s_{f,j} ∂E[r_i]/∂θ_f`, one reverse pass
    /// ([`Model::label_marginals_vjp`]) per `i`. The Hessian route sums pair
    /// marginals and subtracts.
    ///
    /// # Errors
    /// [`Error::NoSuchArc`](crate::Error::NoSuchArc); as [`Model::marginals`].
    pub fn covariance(
        &self,
        r: &ArcFeatures<E::Scalar>,
        s: &ArcFeatures<E::Scalar>,
        algorithm: SecondOrder,
    ) -> Result<Matrix<E::Scalar>> {
        match self.resolve(r, s, algorithm)? {
            SecondOrder::Hessian => {
                let c = self.second_moment_by_pairs(r, s)?;
                self.add_mean_product(c, r, s, false)
            }
            _ => self.covariance_by_reverse_mode(r, s),
        }
    }

    /// `E[r(d) s(d)ᵀ]`, an `R × S` matrix (`E[r rᵀ]` for `s = r`).
    ///
    /// # Errors
    /// As [`Model::covariance`].
    pub fn expect_second_order(
        &self,
        r: &ArcFeatures<E::Scalar>,
        s: &ArcFeatures<E::Scalar>,
        algorithm: SecondOrder,
    ) -> Result<Matrix<E::Scalar>> {
        match self.resolve(r, s, algorithm)? {
            SecondOrder::Hessian => self.second_moment_by_pairs(r, s),
            _ => {
                let c = self.covariance_by_reverse_mode(r, s)?;
                self.add_mean_product(c, r, s, true)
            }
        }
    }

    /// The total `t̄ = Σ_d w(d) r(d) s(d)ᵀ = Z · E[r sᵀ]` ("T2"). On stabilised
    /// backends `Z` may overflow: prefer [`Model::expect_second_order`].
    ///
    /// # Errors
    /// As [`Model::covariance`].
    pub fn total_second_order(
        &self,
        r: &ArcFeatures<E::Scalar>,
        s: &ArcFeatures<E::Scalar>,
        algorithm: SecondOrder,
    ) -> Result<Matrix<E::Scalar>> {
        let z = self.partition()?;
        Ok(self
            .expect_second_order(r, s, algorithm)?
            .map(|x| x.clone() * z.clone()))
    }

    /// `c ± E[r] E[s]ᵀ`: between the second moment and the covariance.
    fn add_mean_product(
        &self,
        mut c: Matrix<E::Scalar>,
        r: &ArcFeatures<E::Scalar>,
        s: &ArcFeatures<E::Scalar>,
        add: bool,
    ) -> Result<Matrix<E::Scalar>> {
        let (er, es) = (self.expect_additive(r)?, self.expect_additive(s)?);
        for (i, a) in er.iter().enumerate() {
            for (j, b) in es.iter().enumerate() {
                let p = a.clone() * b.clone();
                if add {
                    c[(i, j)] += p;
                } else {
                    c[(i, j)] -= p;
                }
            }
        }
        Ok(c)
    }

    fn second_moment_by_pairs(
        &self,
        r: &ArcFeatures<E::Scalar>,
        s: &ArcFeatures<E::Scalar>,
    ) -> Result<Matrix<E::Scalar>> {
        let route = self.pair_route(r.entries().map(|(e, _)| e))?;
        let mu = self.marginals()?;
        let mut t = Matrix::zeros(r.dim(), s.dim());
        for (e, re) in r.entries() {
            for (f, sf) in s.entries() {
                let p = self.pair_by(&route, &mu, e, f);
                if p.is_zero() {
                    continue;
                }
                for (i, a) in re {
                    let pa = p.clone() * a.clone();
                    for (j, b) in sf {
                        t[(*i, *j)] += pa.clone() * b.clone();
                    }
                }
            }
        }
        Ok(t)
    }

    fn covariance_by_reverse_mode(
        &self,
        r: &ArcFeatures<E::Scalar>,
        s: &ArcFeatures<E::Scalar>,
    ) -> Result<Matrix<E::Scalar>> {
        // The entries of r by coordinate, so each seed costs O(its entries).
        let mut by_coordinate: Vec<Vec<(ArcRef, E::Scalar)>> = vec![Vec::new(); r.dim()];
        for (arc, values) in r.entries() {
            for (i, v) in values {
                by_coordinate[*i].push((arc, v.clone()));
            }
        }
        let labels = self.labels();
        let n1 = self.n() + 1;
        let mut c = Matrix::zeros(r.dim(), s.dim());
        for (i, entries) in by_coordinate.iter().enumerate() {
            if entries.is_empty() {
                continue;
            }
            let mut seeds = vec![Matrix::zeros(n1, n1); labels];
            for (arc, v) in entries {
                match arc.label {
                    Some(l) => seeds[l][(arc.head, arc.dependent)] += v,
                    None => seeds
                        .iter_mut()
                        .for_each(|sd| sd[(arc.head, arc.dependent)] += v),
                }
            }
            // ∂E[r_i]/∂θ_{fℓ} for every labeled arc.
            let g = self.label_marginals_vjp(&seeds)?;
            for (f, values) in s.entries() {
                let d = match f.label {
                    Some(l) => g[l][(f.head, f.dependent)].clone(),
                    None => g.iter().fold(E::Scalar::zero(), |acc, gl| {
                        acc + gl[(f.head, f.dependent)].clone()
                    }),
                };
                if d.is_zero() {
                    continue;
                }
                for (j, b) in values {
                    c[(i, *j)] += d.clone() * b.clone();
                }
            }
        }
        Ok(c)
    }
}

/// Where pair marginals come from (see `Model::pair_route`).
enum PairRoute<'a, S> {
    /// The inverse of the Laplacian.
    Inverse(&'a Matrix<S>),
    /// The marginals conditioned on each needed first arc `(h, m)`.
    Conditioned(HashMap<(usize, usize), Matrix<S>>),
}
