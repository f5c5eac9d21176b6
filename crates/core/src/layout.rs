//! The score-matrix layouts of other parsers and libraries, converted to
//! spantree's.
//!
//! | layout | shape for `n` words | cell `[i][j]` | root arcs `0 → m` |
//! |---|---|---|---|
//! | [`Layout::Spantree`] | `(n+1) × (n+1)` | arc `i → j` (head `i`, dependent `j`) | row `0`: `[0][m]` |
//! | [`Layout::TorchStruct`] | `n × n` | arc `i+1 → j+1` (words only, 0-based) | the diagonal: `[m-1][m-1]` |
//! | [`Layout::Supar`] | `(n+1) × (n+1)` | arc `j → i` (`[dependent][head]`) | column `0`: `[m][0]` |
//!
//! In every layout the cells that are not arcs (spantree's column `0` and
//! diagonal, SuPar's row `0` and diagonal) are ignored whatever they hold.
//! Labeled graphs add the label as the last index in all three
//! (`[h][m][ℓ]`, `[i][j][ℓ]`), as torch-struct's `(N, N, C)` and SuPar's
//! `s_rel` do; values are copied, never changed (scores stay scores).
//!
//! A matrix in one layout read as another is usually valid and silently
//! wrong (torch-struct's `n × n` read as spantree's is a graph of `n − 1`
//! words). [`suspect`] spots the typical signs, for error messages and notes.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A score-matrix layout; see the [module documentation](self) for the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `(n+1) × (n+1)`, `[head][dependent]`, root row `0`.
    #[default]
    Spantree,
    /// torch-struct's `DependencyCRF`: `n × n` over the words, `[head][dependent]`,
    /// the root arcs on the diagonal.
    TorchStruct,
    /// SuPar's `s_arc`: `(n+1) × (n+1)`, `[dependent][head]`, root column `0`.
    Supar,
}

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 3] = [Layout::Spantree, Layout::TorchStruct, Layout::Supar];

    /// `"spantree"`, `"torch-struct"` or `"supar"`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Spantree => "spantree",
            Layout::TorchStruct => "torch-struct",
            Layout::Supar => "supar",
        }
    }

    /// One line of help.
    pub fn help(self) -> &'static str {
        match self {
            Layout::Spantree => {
                "(n+1)x(n+1), cell [h][m] is the arc h -> m, row 0 the root (the default)"
            }
            Layout::TorchStruct => {
                "n x n over the words, cell [h-1][m-1] is the arc h -> m, the root arc 0 -> m on the diagonal [m-1][m-1] (torch-struct's DependencyCRF)"
            }
            Layout::Supar => "(n+1)x(n+1), cell [m][h] is the arc h -> m (SuPar's s_arc, [dependent][head])",
        }
    }

    /// The number of words of a square matrix of `size` rows in this layout.
    pub fn words(self, size: usize) -> usize {
        match self {
            Layout::TorchStruct => size,
            Layout::Spantree | Layout::Supar => size.saturating_sub(1),
        }
    }

    /// Converts a square matrix from this layout to spantree's
    /// `(n+1) × (n+1)` one; `fill` goes into the cells that are not arcs
    /// (ignored by [`crate::Graph`]; `-∞` for scores, `0` for weights reads
    /// best). Cells may be anything: numbers, per-label vectors, raw input.
    /// `O(n²)` copies.
    ///
    /// # Errors
    /// [`Error::Empty`] for no words, [`Error::Shape`] for a matrix that is
    /// not square (naming the row in the layout given).
    ///
    /// ```
    /// use spantree_core::{layout::Layout, Graph};
    /// // torch-struct: 2 words, root scores on the diagonal.
    /// let torch = [[0.5, 2.0], [1.0, -1.0]];
    /// let rows = Layout::TorchStruct.to_spantree(&torch, f64::NEG_INFINITY)?;
    /// assert_eq!(rows[0][1], 0.5); // root → word 1
    /// assert_eq!(rows[1][2], 2.0); // word 1 → word 2
    /// let g = Graph::from_scores(&rows)?;
    /// assert_eq!(g.n(), 2);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn to_spantree<T: Clone, R: AsRef<[T]>>(self, rows: &[R], fill: T) -> Result<Vec<Vec<T>>> {
        let size = check_square(rows)?;
        let at = |i: usize, j: usize| rows[i].as_ref()[j].clone();
        Ok(match self {
            Layout::Spantree => rows.iter().map(|r| r.as_ref().to_vec()).collect(),
            Layout::Supar => (0..size)
                .map(|h| (0..size).map(|m| at(m, h)).collect())
                .collect(),
            Layout::TorchStruct => {
                let n = size;
                (0..=n)
                    .map(|h| {
                        (0..=n)
                            .map(|m| match (h, m) {
                                (_, 0) => fill.clone(),
                                (0, m) => at(m - 1, m - 1),
                                (h, m) if h == m => fill.clone(),
                                (h, m) => at(h - 1, m - 1),
                            })
                            .collect()
                    })
                    .collect()
            }
        })
    }

    /// The inverse of [`Layout::to_spantree`] for results: a matrix in
    /// spantree's layout (marginals, gradients) in this layout; `fill` goes
    /// into the non-arc cells of the result (SuPar's row `0` and diagonal).
    /// `O(n²)` copies.
    ///
    /// # Errors
    /// As [`Layout::to_spantree`].
    pub fn from_spantree<T: Clone, R: AsRef<[T]>>(
        self,
        rows: &[R],
        fill: T,
    ) -> Result<Vec<Vec<T>>> {
        let size = check_square(rows)?;
        let at = |i: usize, j: usize| rows[i].as_ref()[j].clone();
        Ok(match self {
            Layout::Spantree => rows.iter().map(|r| r.as_ref().to_vec()).collect(),
            Layout::Supar => (0..size)
                .map(|m| {
                    (0..size)
                        .map(|h| {
                            if m == 0 || h == m {
                                fill.clone()
                            } else {
                                at(h, m)
                            }
                        })
                        .collect()
                })
                .collect(),
            Layout::TorchStruct => {
                let n = size - 1;
                (1..=n)
                    .map(|h| {
                        (1..=n)
                            .map(|m| if h == m { at(0, m) } else { at(h, m) })
                            .collect()
                    })
                    .collect()
            }
        })
    }
}

fn check_square<T, R: AsRef<[T]>>(rows: &[R]) -> Result<usize> {
    let size = rows.len();
    if size == 0 {
        return Err(Error::Empty);
    }
    for (row, r) in rows.iter().enumerate() {
        let found = r.as_ref().len();
        if found != size {
            return Err(Error::Shape {
                row,
                found,
                expected: size,
            });
        }
    }
    Ok(size)
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A layout name that is not one of [`Layout::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown layout {0:?}; known: spantree, torch-struct, supar")]
pub struct UnknownLayout(pub String);

impl FromStr for Layout {
    type Err = UnknownLayout;

    /// Parses `spantree`, `torch-struct` (or `torch_struct`) or `supar`.
    ///
    /// # Errors
    /// [`UnknownLayout`].
    fn from_str(s: &str) -> std::result::Result<Self, UnknownLayout> {
        match s {
            "spantree" => Ok(Layout::Spantree),
            "torch-struct" | "torch_struct" => Ok(Layout::TorchStruct),
            "supar" => Ok(Layout::Supar),
            _ => Err(UnknownLayout(s.to_owned())),
        }
    }
}

/// Whether a square matrix of scores, read in spantree's layout, looks like
/// another layout: `Some` with the likely one and the reason, in words.
/// `O(n²)`.
///
/// * SuPar's `[dependent][head]`: column `0` (SuPar's root arcs) holds
///   finite, varying scores while row `0` (spantree's root arcs) holds none
///   that differ (all masked, or all one constant);
/// * torch-struct's: otherwise, when the diagonal (torch-struct's root
///   arcs) holds finite, varying scores.
///
/// A zero-initialised or masked matrix (constant non-arcs) is never
/// suspect. These are hints for error messages, not proofs: a parser that
/// scores every cell, self-loops included, looks like torch-struct's.
///
/// ```
/// use spantree_core::layout::{suspect, Layout};
/// let ninf = f64::NEG_INFINITY;
/// // SuPar's s_arc for 2 words: [dependent][head], row 0 masked.
/// let supar = [[ninf, ninf, ninf], [1.5, ninf, 0.3], [-0.2, 2.0, ninf]];
/// assert_eq!(suspect(&supar).map(|s| s.0), Some(Layout::Supar));
/// ```
pub fn suspect<R: AsRef<[f64]>>(rows: &[R]) -> Option<(Layout, &'static str)> {
    let size = rows.len();
    if size < 3 || rows.iter().any(|r| r.as_ref().len() != size) {
        return None;
    }
    let at = |i: usize, j: usize| rows[i].as_ref()[j];
    let varying = |values: &mut dyn Iterator<Item = f64>| {
        let finite: Vec<f64> = values.filter(|x| x.is_finite()).collect();
        finite.len() >= 2 && finite.iter().any(|&x| x != finite[0])
    };
    let column0 = varying(&mut (1..size).map(|m| at(m, 0)));
    let row0 = varying(&mut (1..size).map(|m| at(0, m)));
    let diagonal = varying(&mut (1..size).map(|m| at(m, m)));
    if column0 && !row0 {
        Some((
            Layout::Supar,
            "column 0 (not arcs in spantree's layout) holds varying scores while row 0 (the root arcs) holds none: this looks like SuPar's [dependent][head] layout",
        ))
    } else if diagonal {
        Some((
            Layout::TorchStruct,
            "the diagonal (not arcs in spantree's layout) holds varying scores: this may be torch-struct's n x n layout with the root arcs on the diagonal",
        ))
    } else {
        None
    }
}
