//! Supervision signals against references: the expected attachment score
//! of a reference tree (the risk of minimum-Bayes-risk decoding) and the
//! generalised-expectation (GE) objective of Druck, Mann & McCallum (2009),
//! with their `O(n³)` gradients by reverse mode.

use crate::engine::{Engine, PerLabel};
use crate::error::{ArcRef, Error, Result};
use crate::expectation::ArcFeatures;
use crate::matrix::Matrix;
use crate::model::Model;
use crate::scalar::Scalar;

impl<E: Engine> Model<E> {
    /// The seeds `∂/∂μ_{eℓ}` of the expected attachment score against the
    /// reference `heads[m − 1]` of every word `m` (and its `labels`).
    fn attachment_seeds(
        &self,
        heads: &[usize],
        labels: Option<&[usize]>,
    ) -> Result<Vec<Matrix<E::Scalar>>> {
        let n = self.n();
        for (what, len) in [
            ("reference heads", heads.len()),
            ("reference labels", labels.map_or(n, <[usize]>::len)),
        ] {
            if len != n {
                return Err(Error::Mismatch {
                    what,
                    expected: n,
                    found: len,
                });
            }
        }
        let count = self.labels();
        let mut seeds = vec![Matrix::zeros(n + 1, n + 1); if labels.is_some() { count } else { 1 }];
        let inv_n = E::Scalar::one() / E::Scalar::from_f64(n as f64);
        for (i, &h) in heads.iter().enumerate() {
            let arc = ArcRef {
                head: h,
                dependent: i + 1,
                label: labels.map(|l| l[i]),
            };
            self.check_arc(arc)?;
            seeds[arc.label.unwrap_or(0)][(h, i + 1)] = inv_n.clone();
        }
        Ok(seeds)
    }

    /// Expected attachment score against a reference tree:
    /// `E[UAS] = (1/n) Σ_m μ(heads[m] → m)`, or the labeled score with label
    /// marginals when `labels` is given. `O(n³)` once for the marginals.
    ///
    /// # Errors
    /// [`Error::Mismatch`] for references of the wrong length,
    /// [`Error::NoSuchArc`] for a reference arc not in the graph; as
    /// [`Model::marginals`].
    pub fn expected_attachment(
        &self,
        heads: &[usize],
        labels: Option<&[usize]>,
    ) -> Result<E::Scalar> {
        let seeds = self.attachment_seeds(heads, labels)?;
        let mu = if seeds.len() == 1 {
            PerLabel::new(vec![self.marginals()?])
        } else {
            self.label_marginals()?
        };
        let mut total = E::Scalar::zero();
        for (s, m) in seeds.iter().zip(&mu) {
            for (a, b) in s.as_slice().iter().zip(m.as_slice()) {
                if !a.is_zero() {
                    total += a.clone() * b.clone();
                }
            }
        }
        Ok(total)
    }

    /// `∂ E[attachment] / ∂θ` by reverse mode, `O(n³)`.
    ///
    /// # Errors
    /// As [`Model::expected_attachment`].
    pub fn grad_expected_attachment(
        &self,
        heads: &[usize],
        labels: Option<&[usize]>,
    ) -> Result<PerLabel<E::Scalar>> {
        let seeds = self.attachment_seeds(heads, labels)?;
        self.label_marginals_vjp(&seeds)
    }

    fn ge_residual(
        &self,
        features: &ArcFeatures<E::Scalar>,
        targets: &[E::Scalar],
    ) -> Result<Vec<E::Scalar>> {
        if targets.len() != features.dim() {
            return Err(Error::Mismatch {
                what: "GE targets against feature dimension",
                expected: features.dim(),
                found: targets.len(),
            });
        }
        Ok(self
            .expect_additive(features)?
            .into_iter()
            .zip(targets)
            .map(|(e, t)| e - t.clone())
            .collect())
    }

    /// The generalised-expectation objective `G = ‖E[f] − t‖²` for arc
    /// features `f` and targets `t` (Druck, Mann & McCallum 2009),
    /// `O(n³ + F' )` for `F'` stored feature non-zeros.
    ///
    /// # Errors
    /// [`Error::Mismatch`] when `t` and `f` differ in dimension; as
    /// [`Model::expect_additive`].
    pub fn ge_objective(
        &self,
        features: &ArcFeatures<E::Scalar>,
        targets: &[E::Scalar],
    ) -> Result<E::Scalar> {
        let mut g = E::Scalar::zero();
        for r in self.ge_residual(features, targets)? {
            g += r.clone() * r;
        }
        Ok(g)
    }

    /// `∂G/∂θ` by reverse mode seeded with `ḡ_e = 2 Σ_k (E[f]_k − t_k) f_{e,k}`:
    /// `O(n³ + F')`, independent of the dimension beyond the seed.
    ///
    /// # Errors
    /// As [`Model::ge_objective`].
    pub fn grad_ge_objective(
        &self,
        features: &ArcFeatures<E::Scalar>,
        targets: &[E::Scalar],
    ) -> Result<PerLabel<E::Scalar>> {
        let two = E::Scalar::from_f64(2.0);
        let a: Vec<_> = self
            .ge_residual(features, targets)?
            .into_iter()
            .map(|r| r * two.clone())
            .collect();
        // `ge_residual` has checked every arc and the dimension.
        let seeds = self.contract_checked(features, &a);
        self.label_marginals_vjp(&seeds)
    }
}
