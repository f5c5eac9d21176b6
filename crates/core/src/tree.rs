//! [`Tree`]: one dependency tree over the words of a sentence, the value that
//! decoders return and that probabilities are asked of.
//!
//! Convention: `heads[i]` is the head of word `i + 1` (the vector has length
//! `n`; head `0` is the root), and `labels[i]`, when present, the label index
//! of the arc into word `i + 1`. A tree is validated once, when built: every
//! head in `0..=n`, no word its own head, no cycle (so every word reaches the
//! root, and at least one word attaches to it).

use std::fmt;

use crate::error::{ArcRef, Error, Result};
use crate::graph::{Graph, Potentials};
use crate::scalar::Scalar;

/// Why a head vector is not a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TreeDefect {
    /// The head is beyond the last word `n`.
    HeadOutOfRange {
        /// The head given.
        head: usize,
    },
    /// The word is its own head.
    SelfLoop,
    /// The word lies on a cycle of heads, so it never reaches the root.
    Cycle,
}

impl fmt::Display for TreeDefect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TreeDefect::HeadOutOfRange { head } => {
                write!(f, "its head {head} is beyond the last word")
            }
            TreeDefect::SelfLoop => write!(f, "it is its own head"),
            TreeDefect::Cycle => write!(f, "it lies on a cycle of heads"),
        }
    }
}

/// A dependency tree (an arborescence rooted at node `0`) over `n ≥ 1` words,
/// optionally labeled.
///
/// ```
/// use spantree_core::Tree;
/// // Word 2 heads words 1 and 3; the root heads word 2.
/// let t = Tree::new(vec![2, 0, 2])?;
/// assert_eq!(t.head(1), 2);
/// assert_eq!(t.root_children(), vec![2]);
/// assert!(t.is_projective());
/// assert!(Tree::new(vec![2, 1, 0]).is_err()); // 1 → 2 → 1 is a cycle
/// # Ok::<(), spantree_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tree {
    heads: Vec<usize>,
    labels: Option<Vec<usize>>,
}

impl Tree {
    /// A tree from the head of every word (`heads[i]` heads word `i + 1`,
    /// `0` is the root), validated in `O(n)`.
    ///
    /// # Errors
    /// [`Error::Empty`] for no words; [`Error::InvalidTree`] naming the first
    /// word whose head is out of range, is itself, or closes a cycle.
    pub fn new(heads: Vec<usize>) -> Result<Tree> {
        let n = heads.len();
        if n == 0 {
            return Err(Error::Empty);
        }
        for (i, &h) in heads.iter().enumerate() {
            let word = i + 1;
            if h > n {
                return Err(invalid(word, TreeDefect::HeadOutOfRange { head: h }));
            }
            if h == word {
                return Err(invalid(word, TreeDefect::SelfLoop));
            }
        }
        // Colour words: 0 unvisited, 1 on the current walk, 2 known to reach the root.
        let mut state = vec![0u8; n + 1];
        state[0] = 2;
        for start in 1..=n {
            let mut x = start;
            while state[x] == 0 {
                state[x] = 1;
                x = heads[x - 1];
            }
            if state[x] == 1 {
                return Err(invalid(x, TreeDefect::Cycle));
            }
            let mut y = start;
            while state[y] == 1 {
                state[y] = 2;
                y = heads[y - 1];
            }
        }
        Ok(Tree {
            heads,
            labels: None,
        })
    }

    /// A labeled tree: `labels[i]` is the label index of the arc into word `i + 1`.
    ///
    /// # Errors
    /// As [`Tree::new`]; [`Error::Mismatch`] when `labels` and `heads` differ in length.
    pub fn with_labels(heads: Vec<usize>, labels: Vec<usize>) -> Result<Tree> {
        if labels.len() != heads.len() {
            return Err(Error::Mismatch {
                what: "labels of the tree against its heads",
                expected: heads.len(),
                found: labels.len(),
            });
        }
        let mut tree = Tree::new(heads)?;
        tree.labels = Some(labels);
        Ok(tree)
    }

    /// The number of words `n`.
    pub fn n(&self) -> usize {
        self.heads.len()
    }

    /// The head of word `m` (`0` for the root).
    ///
    /// # Panics
    /// If `m` is not in `1..=n` (a programming error, not input).
    pub fn head(&self, m: usize) -> usize {
        assert!(
            m >= 1 && m <= self.n(),
            "word {m} is not in 1..={}",
            self.n()
        );
        self.heads[m - 1]
    }

    /// The heads: `heads()[i]` is the head of word `i + 1`.
    pub fn heads(&self) -> &[usize] {
        &self.heads
    }

    /// The labels, `labels()[i]` of the arc into word `i + 1`, if the tree has them.
    pub fn labels(&self) -> Option<&[usize]> {
        self.labels.as_deref()
    }

    /// The label of the arc into word `m`, if the tree is labeled.
    ///
    /// # Panics
    /// If `m` is not in `1..=n`.
    pub fn label(&self, m: usize) -> Option<usize> {
        assert!(
            m >= 1 && m <= self.n(),
            "word {m} is not in 1..={}",
            self.n()
        );
        self.labels.as_ref().map(|l| l[m - 1])
    }

    /// The arcs `(head, dependent)`, by dependent `1..=n`.
    pub fn arcs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.heads.iter().enumerate().map(|(i, &h)| (h, i + 1))
    }

    /// The words attached to the root, in increasing order (one for a single-root tree).
    pub fn root_children(&self) -> Vec<usize> {
        self.arcs()
            .filter(|&(h, _)| h == 0)
            .map(|(_, m)| m)
            .collect()
    }

    /// Whether no two arcs cross when the root is placed before the first
    /// word: equivalently, every word between a head and its dependent
    /// descends from that head (Eisner 1996's trees). `O(n²)`.
    pub fn is_projective(&self) -> bool {
        let spans: Vec<(usize, usize)> = self.arcs().map(|(h, m)| (h.min(m), h.max(m))).collect();
        spans.iter().enumerate().all(|(i, &(l1, r1))| {
            spans[i + 1..].iter().all(|&(l2, r2)| {
                !((l1 < l2 && l2 < r1 && r1 < r2) || (l2 < l1 && l1 < r2 && r2 < r1))
            })
        })
    }

    fn check_against<W: Scalar>(&self, graph: &Graph<W>) -> Result<()> {
        if graph.n() != self.n() {
            return Err(Error::Mismatch {
                what: "words of the tree against the graph",
                expected: graph.n(),
                found: self.n(),
            });
        }
        if let Some(labels) = &self.labels {
            for (i, &l) in labels.iter().enumerate() {
                if l >= graph.labels() {
                    return Err(Error::NoSuchArc {
                        arc: ArcRef {
                            head: self.heads[i],
                            dependent: i + 1,
                            label: Some(l),
                        },
                        n: graph.n(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The log-weight `Σ_{h→m ∈ d} ln w(h → m)` of the tree under a graph:
    /// the sum of its scores, `-∞` if it uses a forbidden arc. A labeled tree
    /// scores its own labels; an unlabeled tree on a labeled graph scores the
    /// collapsed weights `Σ_ℓ w(h → m, ℓ)` (all its labelings together). `O(n · labels)`.
    ///
    /// # Errors
    /// [`Error::Mismatch`] when the tree and graph differ in `n`;
    /// [`Error::NoSuchArc`] for a label beyond the graph's labels.
    ///
    /// ```
    /// use spantree_core::{Graph, Tree};
    /// let ninf = f64::NEG_INFINITY;
    /// let g = Graph::from_scores(&[[ninf, 1.0, 2.0], [ninf, ninf, 3.0], [ninf, 4.0, ninf]])?;
    /// assert_eq!(Tree::new(vec![2, 0])?.score(&g)?, 6.0);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn score<W: Scalar>(&self, graph: &Graph<W>) -> Result<f64> {
        self.check_against(graph)?;
        Ok(self
            .arcs()
            .map(|(h, m)| match (self.label(m), graph.potentials()) {
                (None, _) => graph.log_weight(h, m),
                (Some(l), Potentials::Scores) => graph.value(h, m, l).to_f64(),
                (Some(l), Potentials::Weights) => graph.value(h, m, l).ln_abs(),
            })
            .sum())
    }

    /// The weight `Π_{h→m ∈ d} w(h → m)` of the tree in the graph's own
    /// number type: exact for exact weights; `e^{score}` for score graphs
    /// (which may overflow: use [`Tree::score`]). Labels as in [`Tree::score`].
    /// `O(n · labels)`.
    ///
    /// # Errors
    /// As [`Tree::score`].
    pub fn weight<W: Scalar>(&self, graph: &Graph<W>) -> Result<W> {
        if graph.potentials() == Potentials::Scores {
            return Ok(W::from_f64(self.score(graph)?.exp()));
        }
        self.check_against(graph)?;
        let mut total = W::one();
        for (h, m) in self.arcs() {
            match self.label(m) {
                Some(l) => total *= graph.value(h, m, l),
                None => {
                    let mut w = W::zero();
                    for v in graph.values(h, m) {
                        w += v;
                    }
                    total *= w;
                }
            }
        }
        Ok(total)
    }
}

fn invalid(word: usize, reason: TreeDefect) -> Error {
    Error::InvalidTree { word, reason }
}
