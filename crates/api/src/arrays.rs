//! Padded score arrays (the Python bindings' input): a batch of `B`
//! sentences of at most `N` words as one `[B, N+1, N+1, L]` array of `f64`
//! scores, row-major, with the sentence lengths alongside. This module
//! checks the shape and cuts out one sentence's graph; the binding only
//! copies the NumPy array into a slice and calls it, so that the checks are
//! plain Rust that the fuzz target `arrays` (in `fuzz/`) reaches.
//!
//! ```
//! use spantree_api::arrays::Padded;
//! // One sentence of 2 words padded to N = 2, unlabeled (L = 1).
//! let scores = [0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0];
//! let padded = Padded::new(&[1, 3, 3, 1], &[2], false, scores.len())?;
//! let graph = padded.graph(&scores, 0, 2)?;
//! assert_eq!(graph.n(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use spantree_core::{Error, Graph};

use crate::error::LineError;

/// The checked shape of a padded batch: `items` sentences, `side = N + 1`,
/// `labels = L` values per cell (`labeled = false` reads label 0 only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Padded {
    /// `B`.
    pub items: usize,
    /// `N + 1`.
    pub side: usize,
    /// `L`.
    pub labels: usize,
    /// Whether the graphs are labeled (one score per label).
    pub labeled: bool,
}

impl Padded {
    /// Checks `dims = [B, N+1, N+1, L]` against `n_words` (one length per
    /// item) and the number of scores `len` given. `O(1)`.
    ///
    /// # Errors
    /// A [`LineError`] of kind `"shape"` when `dims` is not four numbers
    /// with equal middle sides `N + 1 ≥ 2` and `L ≥ 1`, when `n_words` does
    /// not have `B` entries, or when `len` is not `B (N+1)² L` (or the
    /// product overflows).
    pub fn new(
        dims: &[usize],
        n_words: &[usize],
        labeled: bool,
        len: usize,
    ) -> Result<Self, LineError> {
        let shape = |why: String| {
            LineError {
            kind: "shape",
            message: format!(
                "scores must be [B, N+1, N+1, L] with N >= 1 and n_words of length B; got {dims:?} and {} lengths: {why}",
                n_words.len()
            ),
        }
        };
        let &[items, side, side2, labels] = dims else {
            return Err(shape(format!("{} dimensions, not 4", dims.len())));
        };
        if side != side2 || side < 2 || labels < 1 || n_words.len() != items {
            return Err(shape("the sizes disagree".to_owned()));
        }
        let total = items
            .checked_mul(side)
            .and_then(|x| x.checked_mul(side))
            .and_then(|x| x.checked_mul(labels));
        if total != Some(len) {
            return Err(shape(format!("{len} scores given")));
        }
        Ok(Padded {
            items,
            side,
            labels,
            labeled,
        })
    }

    /// The graph of item `item` with `n` words, read off `scores` (laid out
    /// as checked by [`Padded::new`]): cell `[h][m][l]` of the item is the
    /// score of arc `h → m` with label `l`. `O(n² L)`.
    ///
    /// # Errors
    /// [`Error::Mismatch`] when `item ≥ B`, `n > N` or `scores` is shorter
    /// than the shape; otherwise the graph validation's errors
    /// ([`Graph::from_scores`], [`Graph::from_labeled_scores`]).
    pub fn graph(&self, scores: &[f64], item: usize, n: usize) -> Result<Graph<f64>, Error> {
        let Padded {
            items,
            side,
            labels,
            labeled,
        } = *self;
        if n + 1 > side {
            return Err(Error::Mismatch {
                what: "n_words (at most the padded size N)",
                expected: side - 1,
                found: n,
            });
        }
        let per_item = side * side * labels;
        let item_scores = (item < items)
            .then(|| scores.get(item * per_item..(item + 1) * per_item))
            .flatten()
            .ok_or(Error::Mismatch {
                what: "scores (B (N+1)² L values)",
                expected: items * per_item,
                found: scores.len(),
            })?;
        let at = |h: usize, m: usize, l: usize| item_scores[(h * side + m) * labels + l];
        if labeled {
            let rows: Vec<Vec<Vec<f64>>> = (0..=n)
                .map(|h| {
                    (0..=n)
                        .map(|m| (0..labels).map(|l| at(h, m, l)).collect())
                        .collect()
                })
                .collect();
            Graph::from_labeled_scores(&rows)
        } else {
            let rows: Vec<Vec<f64>> = (0..=n)
                .map(|h| (0..=n).map(|m| at(h, m, 0)).collect())
                .collect();
            Graph::from_scores(&rows)
        }
    }
}
