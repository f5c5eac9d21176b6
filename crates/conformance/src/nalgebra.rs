//! A second dense `f64` engine on [`nalgebra`]'s LU, independent of faer:
//! the differential reference for the faer engines (`tests/differential.rs`)
//! and one more engine for the whole suite.
//!
//! Preparation shifts the columns ([`Prepared::shifted`]), as
//! [`spantree_faer::ShiftedF64`] does, so `ln Z` never overflows; everything
//! after preparation (the LU with partial pivoting, determinant, solves,
//! inverse, adjugate) is nalgebra's or written here.

use nalgebra::{DMatrix, LU};
use spantree_core::{
    Dense, Engine, Factorization, Graph, Matrix, Numerical, Prepared, Result, Rooting, Scalar, Sign,
};

/// Dense LU with partial pivoting from nalgebra on column-shifted weights.
/// `O(n³)` per model (two LUs: of `A` and of `Aᵀ`, for the transposed solve).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Nalgebra;

/// `P A = L U` by [`nalgebra::linalg::LU`], with the factorisation of `Aᵀ`
/// for [`Factorization::solve_transpose`] and the matrix for the adjugate of
/// a singular `A`.
pub struct NalgebraLu {
    matrix: DMatrix<f64>,
    lu: LU<f64, nalgebra::Dyn, nalgebra::Dyn>,
    lu_transpose: LU<f64, nalgebra::Dyn, nalgebra::Dyn>,
    pivots: Vec<f64>,
    odd: bool,
}

fn to_nalgebra(a: &Matrix<f64>) -> DMatrix<f64> {
    DMatrix::from_fn(a.rows(), a.cols(), |i, j| a[(i, j)])
}

fn from_nalgebra(a: &DMatrix<f64>) -> Matrix<f64> {
    Matrix::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)])
}

impl NalgebraLu {
    /// Factorises a square matrix, `≈ 4n³/3` flops (two LUs).
    ///
    /// # Panics
    /// If `a` is not square (a programming error).
    pub fn new(a: Matrix<f64>) -> NalgebraLu {
        assert_eq!(a.rows(), a.cols(), "NalgebraLu::new: square matrix");
        let matrix = to_nalgebra(&a);
        let lu = LU::new(matrix.clone());
        let lu_transpose = LU::new(matrix.transpose());
        let u = lu.u();
        let pivots = (0..u.nrows()).map(|k| u[(k, k)]).collect();
        let odd = lu.p().determinant::<f64>() < 0.0;
        NalgebraLu {
            matrix,
            lu,
            lu_transpose,
            pivots,
            odd,
        }
    }

    fn solve_with(
        &self,
        lu: &LU<f64, nalgebra::Dyn, nalgebra::Dyn>,
        rhs: &mut Matrix<f64>,
    ) -> std::result::Result<(), Numerical> {
        if let Some(pivot) = self.zero_pivot() {
            return Err(Numerical::Singular { pivot });
        }
        let b = to_nalgebra(rhs);
        let x = lu.solve(&b).ok_or(Numerical::Singular { pivot: 0 })?;
        *rhs = from_nalgebra(&x);
        Ok(())
    }
}

impl Factorization for NalgebraLu {
    type Scalar = f64;

    fn dim(&self) -> usize {
        self.pivots.len()
    }

    fn zero_pivot(&self) -> Option<usize> {
        self.pivots.iter().position(|&p| p == 0.0)
    }

    fn det(&self) -> f64 {
        self.lu.determinant()
    }

    fn ln_abs_det(&self) -> (Sign, f64) {
        if self.zero_pivot().is_some() {
            return (Sign::Zero, f64::NEG_INFINITY);
        }
        let mut sign = if self.odd {
            Sign::Negative
        } else {
            Sign::Positive
        };
        let mut ln = 0.0;
        for p in &self.pivots {
            sign = sign.times(p.sign());
            ln += p.ln_abs();
        }
        (sign, ln)
    }

    fn solve(&self, rhs: &mut Matrix<f64>) -> std::result::Result<(), Numerical> {
        self.solve_with(&self.lu, rhs)
    }

    fn solve_transpose(&self, rhs: &mut Matrix<f64>) -> std::result::Result<(), Numerical> {
        self.solve_with(&self.lu_transpose, rhs)
    }

    /// `det A · A⁻¹` when `A` is regular; by cofactors (nalgebra
    /// determinants of the minors, `O(n⁵)`) when it is singular.
    fn adjugate(&self) -> Matrix<f64> {
        let n = self.dim();
        if n == 1 {
            return Matrix::identity(1);
        }
        if self.zero_pivot().is_none() {
            if let Some(inverse) = self.lu.try_inverse() {
                let det = self.det();
                return from_nalgebra(&(inverse * det));
            }
        }
        Matrix::from_fn(n, n, |j, i| {
            let minor = self.matrix.clone().remove_row(i).remove_column(j);
            let d = minor.determinant();
            if (i + j) % 2 == 1 {
                -d
            } else {
                d
            }
        })
    }
}

impl Engine for Nalgebra {
    type Scalar = f64;
    type Lu = NalgebraLu;
    type Factors = Dense<NalgebraLu>;

    fn name(&self) -> &'static str {
        "nalgebra"
    }

    /// Columns divided by their largest weight ([`Prepared::shifted`]).
    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> f64,
    ) -> Result<Prepared<f64>> {
        Ok(Prepared::shifted(graph, convert))
    }

    fn lu(&self, matrix: Matrix<f64>) -> NalgebraLu {
        NalgebraLu::new(matrix)
    }

    fn factorize(&self, weights: Matrix<f64>, rooting: Rooting) -> Dense<NalgebraLu> {
        Dense::new(weights, rooting, NalgebraLu::new)
    }
}
