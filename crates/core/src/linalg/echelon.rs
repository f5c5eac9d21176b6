//! The pivoting bookkeeping of row-echelon Gaussian elimination.

use crate::Numerical;

/// What a row-echelon elimination with row pivoting found: the row
/// permutation, the rank, the first column without a pivot and, for rank
/// `n − 1`, a non-singular `(n−1)`-submatrix. Shared by
/// [`PartialPivLu`](super::PartialPivLu) and the exact fraction-free LU of
/// `spantree-exact`, which differ only in how they choose a pivot and update
/// the rows below it.
///
/// **Method.** For each column `k` in turn, at row level `r` (the number of
/// pivots so far), a caller-supplied rule picks a pivot row among `r..n`
/// with a non-zero entry in column `k`; that row is swapped into place and a
/// caller-supplied step updates the rows below. A column with no candidate
/// (every entry exactly zero) has no pivot: it is skipped and `r` stays, so
/// the factors come out in row-echelon form and the number of pivots is the
/// rank of the computed factors. For rank `n − 1` the row left without a
/// pivot and the skipped column name a submatrix with `n − 1` pivots, the
/// border of [`bordered_adjugate`](super::bordered_adjugate).
///
/// **Cost.** `O(n²)` for the bookkeeping and row swaps, plus what the two
/// rules cost (`O(n³)` for the updates of a dense elimination).
///
/// ```
/// use spantree_core::linalg::RowEchelon;
///
/// // [[0, 1], [2, 3]]: the pivot of column 0 is row 1, one swap; plain
/// // Gaussian updates below the pivot.
/// let n = 2;
/// let mut a = vec![0.0, 1.0, 2.0, 3.0];
/// let pivot = |a: &[f64], k: usize, r: usize| (r..n).find(|&i| a[i * n + k] != 0.0);
/// let step = |top: &[f64], below: &mut [f64], k: usize| {
///     for row in below.chunks_exact_mut(n) {
///         let l = row[k] / top[k];
///         for j in k..n {
///             row[j] -= l * top[j];
///         }
///     }
/// };
/// let e = RowEchelon::eliminate(n, &mut a, pivot, step);
/// assert_eq!((e.rank(), e.perm(), e.odd_permutation()), (2, &[1, 0][..], true));
/// assert_eq!(a, vec![2.0, 3.0, 0.0, 1.0]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowEchelon {
    n: usize,
    perm: Vec<usize>,
    odd_permutation: bool,
    rank: usize,
    zero_pivot: Option<usize>,
    deficient: Option<(usize, usize)>,
}

impl RowEchelon {
    /// Eliminates the row-major `n × n` array `a` in place.
    ///
    /// * `pivot(a, k, r)` returns the pivot row for column `k` among rows
    ///   `r..n` whose entry in column `k` is non-zero, or `None` when there
    ///   is none;
    /// * `step(pivot_row, rows_below, k)` updates the rows below the pivot
    ///   (row-major, `n` entries each) once the pivot row is in place.
    ///
    /// # Panics
    /// If `a.len() != n²`, or `pivot` returns a row outside `r..n` (a
    /// programming error).
    pub fn eliminate<T>(
        n: usize,
        a: &mut [T],
        mut pivot: impl FnMut(&[T], usize, usize) -> Option<usize>,
        mut step: impl FnMut(&[T], &mut [T], usize),
    ) -> Self {
        assert_eq!(a.len(), n * n, "eliminate: array is not n × n");
        let mut perm: Vec<usize> = (0..n).collect();
        let mut swaps = 0usize;
        let mut zero_pivot = None;
        let mut r = 0;
        for k in 0..n {
            let Some(p) = pivot(a, k, r) else {
                zero_pivot.get_or_insert(k);
                continue;
            };
            assert!((r..n).contains(&p), "eliminate: pivot row out of range");
            if p != r {
                for j in 0..n {
                    a.swap(p * n + j, r * n + j);
                }
                perm.swap(p, r);
                swaps += 1;
            }
            let (top, bottom) = a.split_at_mut((r + 1) * n);
            step(&top[r * n..], bottom, k);
            r += 1;
        }
        let deficient = match zero_pivot {
            Some(c) if r + 1 == n => Some((perm[n - 1], c)),
            _ => None,
        };
        RowEchelon {
            n,
            perm,
            odd_permutation: swaps % 2 == 1,
            rank: r,
            zero_pivot,
            deficient,
        }
    }

    /// The size `n`.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// Row `k` of the eliminated array is row `perm()[k]` of the input.
    pub fn perm(&self) -> &[usize] {
        &self.perm
    }

    /// Whether the row permutation is odd (flips the determinant's sign).
    pub fn odd_permutation(&self) -> bool {
        self.odd_permutation
    }

    /// The number of pivots found.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The first column without a non-zero pivot candidate, if any.
    pub fn zero_pivot(&self) -> Option<usize> {
        self.zero_pivot
    }

    /// For rank exactly `n − 1`: the row `r` and column `c` whose deletion
    /// leaves a submatrix with `n − 1` pivots, so that `adj(A)[c][r] ≠ 0`
    /// for exact arithmetic.
    pub fn deficient(&self) -> Option<(usize, usize)> {
        self.deficient
    }

    /// `Ok` when every column has a pivot and `rows` equals `n`.
    ///
    /// # Errors
    /// [`Numerical::Singular`] naming the first column without a pivot.
    ///
    /// # Panics
    /// If `rows != n` (a right-hand side of the wrong shape: a programming
    /// error).
    pub fn check_solve(&self, rows: usize) -> Result<(), Numerical> {
        if self.rank < self.n {
            return Err(Numerical::Singular {
                pivot: self.zero_pivot.unwrap_or(0),
            });
        }
        assert_eq!(
            rows, self.n,
            "solve: right-hand side has the wrong row count"
        );
        Ok(())
    }
}
