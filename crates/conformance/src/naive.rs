//! A tiny textbook Gaussian-elimination engine, written here independently
//! of every real engine: it checks the suite (and the core's Laplacians and
//! glue) with nothing borrowed from faer or rug, and stays as a second
//! opinion. The adjugate is taken by definition (cofactors), `O(n⁵)`: for
//! tests only.

use spantree_core::{
    Dense, Engine, Factorization, Graph, Matrix, Numerical, Prepared, Result, Rooting, Scalar, Sign,
};

/// LU with partial pivoting (largest `|x|` as seen through `to_f64`), no shifting.
#[derive(Clone, Copy, Debug)]
pub struct Naive;

/// The same elimination, but the core shifts the columns first.
#[derive(Clone, Copy, Debug)]
pub struct NaiveShifted;

/// `P A = L U` stored in one matrix (unit lower `L` below the diagonal).
pub struct Lu {
    lu: Matrix<f64>,
    /// `perm[i]`: the row of `A` that ended up in row `i`.
    perm: Vec<usize>,
    swaps: usize,
    original: Matrix<f64>,
}

fn factorize(a: Matrix<f64>) -> Lu {
    let n = a.rows();
    let original = a.clone();
    let mut lu = a;
    let mut perm: Vec<usize> = (0..n).collect();
    let mut swaps = 0;
    for k in 0..n {
        let p = (k..n)
            .max_by(|&i, &j| lu[(i, k)].abs().total_cmp(&lu[(j, k)].abs()))
            .unwrap();
        if p != k {
            for j in 0..n {
                let t = lu[(k, j)];
                lu[(k, j)] = lu[(p, j)];
                lu[(p, j)] = t;
            }
            perm.swap(k, p);
            swaps += 1;
        }
        if lu[(k, k)] == 0.0 {
            continue;
        }
        for i in k + 1..n {
            let f = lu[(i, k)] / lu[(k, k)];
            lu[(i, k)] = f;
            for j in k + 1..n {
                lu[(i, j)] -= f * lu[(k, j)];
            }
        }
    }
    Lu {
        lu,
        perm,
        swaps,
        original,
    }
}

impl Factorization for Lu {
    type Scalar = f64;

    fn dim(&self) -> usize {
        self.lu.rows()
    }

    fn zero_pivot(&self) -> Option<usize> {
        (0..self.dim()).find(|&k| self.lu[(k, k)] == 0.0)
    }

    fn det(&self) -> f64 {
        let d: f64 = (0..self.dim()).map(|k| self.lu[(k, k)]).product();
        if self.swaps % 2 == 1 {
            -d
        } else {
            d
        }
    }

    fn ln_abs_det(&self) -> (Sign, f64) {
        if self.zero_pivot().is_some() {
            return (Sign::Zero, f64::NEG_INFINITY);
        }
        let mut sign = if self.swaps % 2 == 1 {
            Sign::Negative
        } else {
            Sign::Positive
        };
        let mut ln = 0.0;
        for k in 0..self.dim() {
            sign = sign.times(self.lu[(k, k)].sign());
            ln += self.lu[(k, k)].ln_abs();
        }
        (sign, ln)
    }

    fn solve(&self, rhs: &mut Matrix<f64>) -> Result<(), Numerical> {
        if let Some(pivot) = self.zero_pivot() {
            return Err(Numerical::Singular { pivot });
        }
        let n = self.dim();
        for c in 0..rhs.cols() {
            let mut x: Vec<f64> = (0..n).map(|i| rhs[(self.perm[i], c)]).collect();
            for i in 0..n {
                for k in 0..i {
                    x[i] -= self.lu[(i, k)] * x[k];
                }
            }
            for i in (0..n).rev() {
                for k in i + 1..n {
                    x[i] -= self.lu[(i, k)] * x[k];
                }
                x[i] /= self.lu[(i, i)];
            }
            for (i, v) in x.into_iter().enumerate() {
                rhs[(i, c)] = v;
            }
        }
        Ok(())
    }

    fn solve_transpose(&self, rhs: &mut Matrix<f64>) -> Result<(), Numerical> {
        // Plain, not clever: factorise the transpose afresh.
        factorize(self.original.transpose()).solve(rhs)
    }

    fn adjugate(&self) -> Matrix<f64> {
        // By definition: adj(A)[j][i] = (−1)^(i+j) det(A without row i and column j).
        let n = self.dim();
        if n == 1 {
            return Matrix::identity(1);
        }
        Matrix::from_fn(n, n, |j, i| {
            let minor = Matrix::from_fn(n - 1, n - 1, |r, c| {
                self.original[(r + usize::from(r >= i), c + usize::from(c >= j))]
            });
            let d = factorize(minor).det();
            if (i + j) % 2 == 1 {
                -d
            } else {
                d
            }
        })
    }
}

impl Engine for Naive {
    type Scalar = f64;
    type Lu = Lu;
    type Factors = Dense<Lu>;
    fn name(&self) -> &'static str {
        "naive"
    }
    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> f64,
    ) -> Result<Prepared<f64>> {
        Prepared::as_given(graph, convert)
    }
    fn lu(&self, matrix: Matrix<f64>) -> Lu {
        factorize(matrix)
    }
    fn factorize(&self, weights: Matrix<f64>, rooting: Rooting) -> Dense<Lu> {
        Dense::new(weights, rooting, factorize)
    }
}

impl Engine for NaiveShifted {
    type Scalar = f64;
    type Lu = Lu;
    type Factors = Dense<Lu>;
    fn name(&self) -> &'static str {
        "naive-shifted"
    }
    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> f64,
    ) -> Result<Prepared<f64>> {
        Ok(Prepared::shifted(graph, convert))
    }
    fn lu(&self, matrix: Matrix<f64>) -> Lu {
        factorize(matrix)
    }
    fn factorize(&self, weights: Matrix<f64>, rooting: Rooting) -> Dense<Lu> {
        Dense::new(weights, rooting, factorize)
    }
}
