//! Baselines without learning: left- and right-branching chains, and
//! attachment to the nearest word of a governing UPOS class.

use crate::Sentence;

/// Every word headed by the word before it; word 1 on the root.
pub fn left_chain(n: usize) -> Vec<usize> {
    (0..n).collect()
}

/// Every word headed by the word after it; word `n` on the root.
pub fn right_chain(n: usize) -> Vec<usize> {
    (1..=n).map(|m| if m == n { 0 } else { m + 1 }).collect()
}

/// The level of a UPOS tag in the attachment hierarchy: function words (0)
/// attach to nominals (1), nominals to verbs (2), verbs to the main word.
fn level(upos: &str) -> u8 {
    match upos {
        "VERB" => 2,
        "NOUN" | "PROPN" | "PRON" | "NUM" => 1,
        _ => 0,
    }
}

/// Attach-to-nearest with UPOS rules: the main word is the first `VERB`
/// (else the first nominal, else word 1) and goes on the root; every other
/// word attaches to the nearest word one level up (function words to
/// nominals, nominals to verbs; ties to the right, since determiners,
/// adjectives and adpositions precede their nouns in most of our languages),
/// else to the nearest word of any higher level, else to the main word.
/// Levels only rise along head links, so the result is a single-root tree.
/// `O(n²)`.
pub fn nearest_attachment(sentence: &Sentence) -> Vec<usize> {
    let n = sentence.len();
    let levels: Vec<u8> = sentence.words.iter().map(|w| level(&w.upos)).collect();
    let main = (0..n)
        .find(|&i| levels[i] == 2)
        .or_else(|| (0..n).find(|&i| levels[i] == 1))
        .unwrap_or(0);
    let nearest = |i: usize, ok: &dyn Fn(usize) -> bool| {
        (1..n)
            .flat_map(|d| [i + d, i.wrapping_sub(d)])
            .find(|&j| j < n && j != i && ok(j))
    };
    (0..n)
        .map(|i| {
            if i == main {
                return 0;
            }
            nearest(i, &|j| levels[j] == levels[i] + 1)
                .or_else(|| nearest(i, &|j| levels[j] > levels[i]))
                .map_or(main + 1, |j| j + 1)
        })
        .collect()
}
