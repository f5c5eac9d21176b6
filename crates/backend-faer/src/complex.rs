//! Complex `f64` LU on faer, for complex-step differentiation.

use std::fmt;

use faer::linalg::solvers::{DenseSolveCore, PartialPivLu, Solve, Svd};
use faer::{Mat, MatRef};
use num_complex::Complex64;
use spantree_core::{
    Dense, Engine, Factorization, Graph, Matrix, Numerical, Prepared, Result, Rooting, Scalar, Sign,
};

use crate::dense::permutation_is_odd;

/// Complex `f64` LU with partial pivoting (faer), name `"complex"`.
///
/// Complex-step differentiation perturbs one weight by `i h`: for any
/// quantity `F` computed analytically, `∂F/∂w ≈ Im F(w + i h) / h` with an
/// error `O(h²)` and no cancellation, so `h = 1e-30` gives the derivative to
/// machine precision and checks hand-written reverse mode independently.
/// Perturbing the *score* `θ_e` by `i h` is the same as multiplying `w_e` by
/// `1 + i h` (to first order, exactly in `f64` for `h = 1e-30`).
///
/// Weights are not shifted: build the model from complex weights with
/// [`Model::from_scalar_graph`](spantree_core::Model::from_scalar_graph).
///
/// ```
/// use num_complex::Complex64;
/// use spantree_core::{Graph, Model, Rooting};
/// use spantree_faer::Complex;
///
/// let h = 1e-30;
/// let c = |x: f64| Complex64::new(x, 0.0);
/// // Perturb the score of arc 2 → 1 (weight 4): ∂ ln Z / ∂θ is its marginal, 8/13.
/// let w = [
///     [c(0.0), c(1.0), c(2.0)],
///     [c(0.0), c(0.0), c(3.0)],
///     [c(0.0), Complex64::new(4.0, 4.0 * h), c(0.0)],
/// ];
/// let model = Model::from_scalar_graph(Complex, &Graph::from_weights(&w)?, Rooting::Multi)?;
/// let z = model.partition()?;
/// assert!(((z.ln().im / h) - 8.0 / 13.0).abs() < 1e-15);
/// # Ok::<(), spantree_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Complex;

impl Engine for Complex {
    type Scalar = Complex64;
    type Lu = ComplexLu;
    type Factors = Dense<ComplexLu>;

    fn name(&self) -> &'static str {
        "complex"
    }

    /// The weights as given ([`Prepared::as_given`]): a complex perturbation
    /// of a weight must reach the Laplacian untouched.
    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> Complex64,
    ) -> Result<Prepared<Complex64>> {
        Prepared::as_given(graph, convert)
    }

    fn factorize(&self, weights: Matrix<Complex64>, rooting: Rooting) -> Dense<ComplexLu> {
        Dense::new(weights, rooting, ComplexLu::new)
    }

    /// faer's partial-pivoting LU, `≈ 8n³/3` real flops.
    fn lu(&self, matrix: Matrix<Complex64>) -> ComplexLu {
        ComplexLu::new(matrix)
    }
}

impl ComplexLu {
    /// Factorises a square complex matrix by faer's partial-pivoting LU,
    /// `≈ 8n³/3` real flops.
    pub fn new(matrix: Matrix<Complex64>) -> ComplexLu {
        // Every column scaled by a power of two (exact) to largest modulus
        // in [1, 2): faer divides complex numbers through |b|², which
        // overflows for |b| ≳ 1e154 and underflows below 1e-154, and a
        // multiplier −1e290 / 1e290 that came out 0 once made the marginals
        // of a graph with column scales 1e±290 silently wrong. A = A' D⁻¹
        // with D = diag(2^{−e_k}): det A = det A' Π 2^{e_k}, A⁻¹ = D A'⁻¹.
        let n = matrix.rows();
        let exponents: Vec<i32> = (0..n)
            .map(|k| {
                let largest = (0..n).fold(0.0f64, |a, i| a.max(matrix[(i, k)].norm()));
                if largest > 0.0 && largest.is_finite() {
                    largest.log2().floor() as i32
                } else {
                    0
                }
            })
            .collect();
        let a = Mat::from_fn(n, n, |i, k| scale(matrix[(i, k)], -exponents[k]));
        let lu = PartialPivLu::new(a.as_ref());
        let u = lu.U();
        let pivots: Vec<Complex64> = (0..u.nrows()).map(|i| u[(i, i)]).collect();
        let zero = pivots.iter().position(|p| p.re == 0.0 && p.im == 0.0);
        let odd = permutation_is_odd(lu.P().arrays().0);
        ComplexLu {
            matrix,
            lu,
            pivots,
            exponents,
            zero,
            odd,
        }
    }
}

/// `z · 2^e`, exact unless the result leaves `f64`'s normal range.
fn scale(z: Complex64, e: i32) -> Complex64 {
    // Two steps, so that 2^e itself never overflows for |e| up to 2098.
    let (a, b) = (e / 2, e - e / 2);
    z * 2f64.powi(a) * 2f64.powi(b)
}

/// A complex LU `P A = L U`, with the matrix kept for the adjugate of a
/// singular matrix.
pub struct ComplexLu {
    matrix: Matrix<Complex64>,
    lu: PartialPivLu<Complex64>,
    /// The pivots of the column-scaled matrix `A'`.
    pivots: Vec<Complex64>,
    /// Column `k` of `A` is `2^{e_k}` times column `k` of `A'`.
    exponents: Vec<i32>,
    zero: Option<usize>,
    odd: bool,
}

impl fmt::Debug for ComplexLu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComplexLu")
            .field("pivots", &self.pivots)
            .field("odd", &self.odd)
            .finish()
    }
}

impl ComplexLu {
    fn check(&self) -> Result<(), Numerical> {
        match self.zero {
            Some(pivot) => Err(Numerical::Singular { pivot }),
            None => Ok(()),
        }
    }
}

impl Factorization for ComplexLu {
    type Scalar = Complex64;

    fn dim(&self) -> usize {
        self.pivots.len()
    }

    fn zero_pivot(&self) -> Option<usize> {
        self.zero
    }

    /// `ε Σ_k c_k / |u_kk|`, `c_k = Σ_i |A[i][k]|`: the estimate of the
    /// real [`Lu`](crate::Lu) (a pivot far below its column was formed by
    /// cancellation, as when a multi-root diagonal lost its root weight), so
    /// that the model refuses with `Numerical::Inaccurate` instead of
    /// answering wrongly. `O(n²)`.
    fn ln_det_error(&self) -> f64 {
        let n = self.pivots.len();
        // Column k of A and pivot k both scale by 2^{e_k}: the ratio of the
        // scaled ones is the same number.
        let column = |k: usize| {
            (0..n)
                .map(|i| scale(self.matrix[(i, k)], -self.exponents[k]).norm())
                .sum::<f64>()
        };
        let ratio: f64 = (0..n)
            .filter(|&k| self.pivots[k].norm() != 0.0)
            .map(|k| column(k) / self.pivots[k].norm())
            .sum();
        f64::EPSILON * ratio
    }

    fn det(&self) -> Complex64 {
        if self.zero.is_some() {
            return Complex64::new(0.0, 0.0);
        }
        let mut d = Complex64::new(1.0, 0.0);
        for (p, &e) in self.pivots.iter().zip(&self.exponents) {
            d = scale(d * p, e);
        }
        if self.odd {
            -d
        } else {
            d
        }
    }

    /// `ln |det|` as `Σ ln |u_ii|`; the sign is that of the real part of
    /// `det`, read from the product of the pivots' phases (no overflow).
    fn ln_abs_det(&self) -> (Sign, f64) {
        if self.zero.is_some() {
            return (Sign::Zero, f64::NEG_INFINITY);
        }
        let ln: f64 = self
            .pivots
            .iter()
            .zip(&self.exponents)
            .map(|(p, &e)| p.norm().ln() + f64::from(e) * std::f64::consts::LN_2)
            .sum();
        let mut phase: Complex64 = self.pivots.iter().map(|p| p / p.norm()).product();
        if self.odd {
            phase = -phase;
        }
        let sign = Sign::of_f64(phase.re).unwrap_or(Sign::Positive);
        // A NaN pivot makes `ln` NaN: the core reports it as not finite.
        (
            if sign == Sign::Zero {
                Sign::Positive
            } else {
                sign
            },
            ln,
        )
    }

    /// `x = D A'⁻¹ b`.
    fn solve(&self, rhs: &mut Matrix<Complex64>) -> Result<(), Numerical> {
        self.check()?;
        let mut b = to_mat(rhs);
        self.lu.solve_in_place(b.as_mut());
        copy_back(b.as_ref(), rhs);
        for i in 0..rhs.rows() {
            for j in 0..rhs.cols() {
                rhs[(i, j)] = scale(rhs[(i, j)], -self.exponents[i]);
            }
        }
        Ok(())
    }

    /// `Aᵀ = D⁻¹ A'ᵀ`: `x = A'⁻ᵀ (D b)`.
    fn solve_transpose(&self, rhs: &mut Matrix<Complex64>) -> Result<(), Numerical> {
        self.check()?;
        let mut b = Mat::from_fn(rhs.rows(), rhs.cols(), |i, j| {
            scale(rhs[(i, j)], -self.exponents[i])
        });
        self.lu.solve_transpose_in_place(b.as_mut());
        copy_back(b.as_ref(), rhs);
        Ok(())
    }

    /// `A⁻¹ = D A'⁻¹`.
    fn inverse(&self) -> Result<Matrix<Complex64>, Numerical> {
        self.check()?;
        let x = self.lu.inverse();
        Ok(Matrix::from_fn(x.nrows(), x.ncols(), |i, j| {
            scale(x[(i, j)], -self.exponents[i])
        }))
    }

    /// `det A · A⁻¹` when `A` is non-singular; otherwise from the SVD
    /// `A = U Σ Vᴴ`: `adj A = det U · det Vᴴ · V · diag(Π_{k≠l} σ_k) · Uᴴ`
    /// (`adj Q = det Q · Qᴴ` for unitary `Q`), with `det U`, `det Vᴴ` from LUs.
    /// `O(n³)`.
    fn adjugate(&self) -> Matrix<Complex64> {
        let n = self.dim();
        if n == 1 {
            return Matrix::from_fn(1, 1, |_, _| Complex64::new(1.0, 0.0));
        }
        if let Ok(mut x) = self.inverse() {
            let d = self.det();
            x.as_mut_slice().iter_mut().for_each(|v| *v *= d);
            return x;
        }
        let Ok(svd) = Svd::new(to_mat(&self.matrix).as_ref()) else {
            return Matrix::from_fn(n, n, |_, _| Complex64::new(f64::NAN, f64::NAN));
        };
        let s = svd.S().column_vector();
        let sigma: Vec<f64> = (0..n).map(|i| s[i].re).collect();
        let pi: Vec<f64> = (0..n)
            .map(|l| (0..n).filter(|&k| k != l).map(|k| sigma[k]).product())
            .collect();
        let (u, v) = (from_mat(svd.U()), from_mat(svd.V()));
        let det_u = Complex.lu(u.clone()).det();
        let det_vh = Complex.lu(v.clone()).det().conj();
        let phase = det_u * det_vh;
        Matrix::from_fn(n, n, |i, j| {
            let s: Complex64 = (0..n).map(|l| v[(i, l)] * pi[l] * u[(j, l)].conj()).sum();
            s * phase
        })
    }
}

fn to_mat(a: &Matrix<Complex64>) -> Mat<Complex64> {
    Mat::from_fn(a.rows(), a.cols(), |i, j| a[(i, j)])
}

fn from_mat(a: MatRef<'_, Complex64>) -> Matrix<Complex64> {
    Matrix::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)])
}

fn copy_back(b: MatRef<'_, Complex64>, out: &mut Matrix<Complex64>) {
    for i in 0..out.rows() {
        for j in 0..out.cols() {
            out[(i, j)] = b[(i, j)];
        }
    }
}
