//! The slower algorithms of earlier papers, kept as honest baselines for
//! speed-up tables and as independent routes for accuracy studies. Each is
//! written as its authors describe it, generic over the backend, and reuses
//! the model's factorisation wherever the original algorithm would.

use crate::engine::{Engine, Factorization, Factors, PerLabel};
use crate::error::{ArcRef, Error, Result};
use crate::expectation::ArcFeatures;
use crate::graph::Rooting;
use crate::laplacian::laplacian;
use crate::matrix::Matrix;
use crate::model::Model;
use crate::scalar::{Scalar, Transcendental};

/// `det` of a square matrix on the model's backend (a fresh factorisation).
fn det<E: Engine>(model: &Model<E>, m: Matrix<E::Scalar>) -> E::Scalar {
    model.engine().lu(m).det()
}

/// Single-root `Z` by `n` minors (Koo et al. 2007, their first formulation):
/// `Z = Σ_r ρ_r · det L⁰_{(r)}`, where `L⁰` is the root-free Laplacian and
/// `L⁰_{(r)}` deletes its row and column `r` (the matrix-tree theorem for
/// arborescences rooted at `r`). `n` determinants of size `n − 1`: `O(n⁴)`.
///
/// On stabilised engines `e^{Σ c_m}` is applied through `f64`, as in
/// [`Model::partition`]; [`log_partition_by_minors`] never overflows.
///
/// # Errors
/// [`Error::Unsupported`] for a multi-root model.
pub fn partition_by_minors<E: Engine>(model: &Model<E>) -> Result<E::Scalar> {
    let z = scaled_partition_by_minors(model)?;
    // As Model::partition: the prepared weights' Z times e^{Σ c_m}.
    Ok(match model.ln_scale() {
        0.0 => z,
        shift => z * E::Scalar::from_f64(shift.exp()),
    })
}

fn scaled_partition_by_minors<E: Engine>(model: &Model<E>) -> Result<E::Scalar> {
    if model.rooting() != Rooting::Single {
        return Err(Error::Unsupported(
            "Z by minors (a single-root baseline) on a multi-root model",
        ));
    }
    let n = model.n();
    let w = model.weights();
    let mut root_free = w.clone();
    for m in 1..=n {
        root_free[(0, m)] = E::Scalar::zero();
    }
    // The multi-root Laplacian of the root-free weights is L⁰.
    let l0 = laplacian(&root_free, Rooting::Multi);
    let mut z = E::Scalar::zero();
    for r in 1..=n {
        if w[(0, r)].is_zero() {
            continue;
        }
        let minor = if n == 1 {
            E::Scalar::one()
        } else {
            let keep: Vec<usize> = (0..n).filter(|&i| i != r - 1).collect();
            det(
                model,
                Matrix::from_fn(n - 1, n - 1, |i, j| l0[(keep[i], keep[j])].clone()),
            )
        };
        z += w[(0, r)].clone() * minor;
    }
    Ok(z)
}

/// `ln Z` from [`partition_by_minors`], with the column shifts added back.
///
/// # Errors
/// As [`partition_by_minors`].
pub fn log_partition_by_minors<E: Engine>(model: &Model<E>) -> Result<f64> {
    Ok(scaled_partition_by_minors(model)?.ln_abs() + model.ln_scale())
}

/// Arc marginals by zeroing the competing arcs (McDonald & Satta 2007; the
/// "naive arc expectations" of lecture notes): `μ_{hm} = Z_{h→m} / Z`, where
/// `Z_{h→m}` is `Z` of the graph in which `h → m` is the only arc into `m`.
/// One determinant per allowed arc: `O(n²)` factorisations, `O(n⁵)`.
///
/// # Errors
/// [`Error::NoSpanningTree`], [`Error::Numerical`] as [`Model::marginals`].
pub fn marginals_by_zeroing<E: Engine>(model: &Model<E>) -> Result<Matrix<E::Scalar>> {
    model.spanning_tree().map_err(Error::NoSpanningTree)?;
    model.log_partition()?;
    let z = model.factors.det();
    let n = model.n();
    let w = model.weights();
    let mut mu = Matrix::zeros(n + 1, n + 1);
    for m in 1..=n {
        for h in (0..=n).filter(|&h| h != m && !w[(h, m)].is_zero()) {
            let mut only = w.clone();
            for k in (0..=n).filter(|&k| k != h) {
                only[(k, m)] = E::Scalar::zero();
            }
            mu[(h, m)] = det(model, laplacian(&only, model.rooting())) / z.clone();
        }
    }
    Ok(mu)
}

/// Shannon entropy by `n` column-replaced determinants (Smith & Eisner 2007):
/// `Z` is linear in each Laplacian column, so replacing column `m` by the
/// column built from `v_e = w_e ln w_e` gives `Σ_h (∂Z/∂w_{hm}) w_{hm} ln w_{hm}`;
/// summing over `m`, `H = ln Z − (1/Z) Σ_m det L^{(m)}`. `n` factorisations:
/// `O(n⁴)`. (Column-scaled weights throughout; the shifts cancel as in
/// [`Model::entropy`].)
///
/// # Errors
/// As [`Model::entropy`].
pub fn entropy_by_columns<E: Engine>(model: &Model<E>) -> Result<E::Scalar>
where
    E::Scalar: Transcendental,
{
    model.spanning_tree().map_err(Error::NoSpanningTree)?;
    let ln_z_scaled = model.log_partition_scalar()? - E::Scalar::from_f64(model.ln_scale());
    let z = model.factors.det();
    let n = model.n();
    let w = model.weights();
    // v_e = Σ_ℓ w_eℓ ln w_eℓ, the labeled trees' log-weight per arc.
    let v = Matrix::from_fn(n + 1, n + 1, |h, m| {
        let mut total = E::Scalar::zero();
        for l in 0..model.labels() {
            let x = model.label_weight(l, h, m);
            if !x.is_zero() {
                total += x.clone() * x.ln();
            }
        }
        total
    });
    let l = laplacian(w, model.rooting());
    let lv = laplacian(&v, model.rooting());
    let mut expected = E::Scalar::zero();
    for m in 0..n {
        let mut replaced = l.clone();
        for i in 0..n {
            replaced[(i, m)] = lv[(i, m)].clone();
        }
        expected += det(model, replaced);
    }
    Ok(ln_z_scaled - expected / z)
}

/// The gradient of the GE objective `‖E[f] − t‖²` through the covariance of
/// arc indicators with the features (Druck & Smith 2009):
/// `∂G/∂θ_e = Σ_k 2 (E[f_k] − t_k) Cov(f_k, 1_e)
///          = Σ_{e'} g_{e'} (P(e, e') − μ_e μ_{e'})` with `g_{e'} = Σ_k 2(E_k − t_k) f_{e',k}`,
/// from arc-pair marginals: `O(n⁴)` time, nothing of size `n⁴` stored. One
/// matrix per label, as [`Model::grad_ge_objective`].
///
/// # Errors
/// As [`Model::grad_ge_objective`].
pub fn grad_ge_by_covariance<E: Engine>(
    model: &Model<E>,
    features: &ArcFeatures<E::Scalar>,
    targets: &[E::Scalar],
) -> Result<PerLabel<E::Scalar>> {
    if targets.len() != features.dim() {
        return Err(Error::Mismatch {
            what: "GE targets against feature dimension",
            expected: features.dim(),
            found: targets.len(),
        });
    }
    let two = E::Scalar::from_f64(2.0);
    let a: Vec<E::Scalar> = model
        .expect_additive(features)?
        .into_iter()
        .zip(targets)
        .map(|(e, t)| (e - t.clone()) * two.clone())
        .collect();
    let g = model.contract_features(features, &a)?;
    let labeled = model.is_labeled();
    let n = model.n();
    let arcs: Vec<ArcRef> = (0..g.len())
        .flat_map(|l| {
            (0..=n).flat_map(move |h| {
                (1..=n).filter(move |&m| m != h).map(move |m| ArcRef {
                    head: h,
                    dependent: m,
                    label: labeled.then_some(l),
                })
            })
        })
        .collect();
    let seeded: Vec<(ArcRef, E::Scalar)> = arcs
        .iter()
        .filter_map(|&a| {
            let v = &g[a.label.unwrap_or(0)][(a.head, a.dependent)];
            (!v.is_zero()).then(|| (a, v.clone()))
        })
        .collect();
    let x = model.inverse()?;
    let mu = model.marginals()?;
    let label_mu = |a: ArcRef| mu[(a.head, a.dependent)].clone() * model.share(a);
    let mut grad = vec![Matrix::zeros(n + 1, n + 1); g.len()];
    for &e in &arcs {
        let mu_e = label_mu(e);
        if mu_e.is_zero() {
            continue;
        }
        let mut d = E::Scalar::zero();
        for (f, gf) in &seeded {
            let cov = model.pair(x, &mu, e, *f) - mu_e.clone() * label_mu(*f);
            d += cov * gf.clone();
        }
        grad[e.label.unwrap_or(0)][(e.head, e.dependent)] = d;
    }
    Ok(grad.into())
}
