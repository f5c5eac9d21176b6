//! Attachment scores: UAS and LAS over all words and without punctuation
//! (words whose gold UPOS is `PUNCT`), and the share of predictions that are
//! well-formed single-root trees.

use spantree_core::Tree;

use crate::error::{ParserError, Result};
use crate::Sentence;

/// Attachment scores of predictions against gold trees.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Scores {
    /// Unlabeled attachment score: share of words with the gold head.
    pub uas: f64,
    /// Labeled attachment score: gold head and gold relation.
    pub las: f64,
    /// UAS over words whose gold UPOS is not `PUNCT`.
    pub uas_no_punct: f64,
    /// LAS over words whose gold UPOS is not `PUNCT`.
    pub las_no_punct: f64,
    /// Words scored.
    pub words: usize,
    /// Words scored without punctuation.
    pub words_no_punct: usize,
    /// Sentences scored.
    pub sentences: usize,
    /// Share of predicted sentences whose heads form a tree (no cycle) with
    /// exactly one word on the root.
    pub well_formed_single_root: f64,
    /// Share of predicted sentences whose heads form a tree (any root count).
    pub trees: f64,
}

/// Whether `heads` is a tree, and whether it has exactly one root child.
pub fn shape(heads: &[usize]) -> (bool, bool) {
    match Tree::new(heads.to_vec()) {
        Ok(t) => (true, t.root_children().len() == 1),
        Err(_) => (false, false),
    }
}

/// Scores predictions `(heads, relations)` against `gold`, sentence by
/// sentence in order. Relations may be empty (LAS is then 0). `O(words)`.
pub fn evaluate(gold: &[Sentence], predicted: &[(Vec<usize>, Vec<String>)]) -> Scores {
    let mut c = [0usize; 4];
    let (mut words, mut words_np, mut single, mut trees) = (0, 0, 0, 0);
    for (g, (heads, labels)) in gold.iter().zip(predicted) {
        let (tree, one) = shape(heads);
        trees += usize::from(tree);
        single += usize::from(tree && one);
        for (i, w) in g.words.iter().enumerate() {
            let head_ok = heads.get(i) == Some(&w.head);
            let label_ok = head_ok && labels.get(i) == Some(&w.label);
            words += 1;
            c[0] += usize::from(head_ok);
            c[1] += usize::from(label_ok);
            if w.upos != "PUNCT" {
                words_np += 1;
                c[2] += usize::from(head_ok);
                c[3] += usize::from(label_ok);
            }
        }
    }
    let share = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let sentences = gold.len().min(predicted.len());
    Scores {
        uas: share(c[0], words),
        las: share(c[1], words),
        uas_no_punct: share(c[2], words_np),
        las_no_punct: share(c[3], words_np),
        words,
        words_no_punct: words_np,
        sentences,
        well_formed_single_root: share(single, sentences),
        trees: share(trees, sentences),
    }
}

/// Scores a predicted treebank against a gold one read from CoNLL-U: the
/// sentences must align one to one, with equal word counts.
///
/// # Errors
/// [`ParserError::Misaligned`] at the first sentence that does not align.
pub fn evaluate_treebanks(gold: &[Sentence], predicted: &[Sentence]) -> Result<Scores> {
    for (index, g) in gold.iter().enumerate() {
        let found = predicted.get(index).map_or(0, Sentence::len);
        if found != g.len() {
            return Err(ParserError::Misaligned {
                index,
                line: g.line,
                gold: g.len(),
                predicted: found,
            });
        }
    }
    if predicted.len() > gold.len() {
        let index = gold.len();
        return Err(ParserError::Misaligned {
            index,
            line: 0,
            gold: 0,
            predicted: predicted[index].len(),
        });
    }
    let pairs: Vec<(Vec<usize>, Vec<String>)> = predicted
        .iter()
        .map(|s| {
            (
                s.heads(),
                s.labels().iter().map(|l| l.to_string()).collect(),
            )
        })
        .collect();
    Ok(evaluate(gold, &pairs))
}
