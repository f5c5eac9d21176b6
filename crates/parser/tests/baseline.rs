//! The baselines: hand-checked chains, and attach-to-nearest always a
//! single-root tree (checked by `spantree_core::Tree`, an independent validator).

use spantree_core::Tree;
use spantree_parser::baseline::{left_chain, nearest_attachment, right_chain};

#[test]
fn chains_by_hand() {
    assert_eq!(left_chain(4), [0, 1, 2, 3]);
    assert_eq!(right_chain(4), [2, 3, 4, 0]);
    assert_eq!(right_chain(1), [0]);
}

#[test]
fn nearest_attachment_by_hand_and_always_a_single_root_tree() {
    let line = |tags: &[&str]| -> String {
        tags.iter()
            .enumerate()
            .map(|(i, t)| format!("{}\tw\tw\t{t}\t_\t_\t0\tdep\t_\t_\n", i + 1))
            .collect::<String>()
            + "\n"
    };
    // DET NOUN VERB DET ADJ NOUN PUNCT: the verb is the main word; each
    // determiner and adjective takes the nearest noun (to the right first).
    let s = &spantree_conllu::parse(&line(&[
        "DET", "NOUN", "VERB", "DET", "ADJ", "NOUN", "PUNCT",
    ]))
    .expect("parses")[0];
    assert_eq!(nearest_attachment(s), [2, 3, 0, 6, 6, 3, 6]);
    let tags = ["DET", "NOUN", "VERB", "ADJ", "PUNCT", "PRON", "ADP", "NUM"];
    let mut x: u64 = 1;
    for n in 1..40 {
        let sentence: Vec<&str> = (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                tags[(x >> 33) as usize % tags.len()]
            })
            .collect();
        let s = &spantree_conllu::parse(&line(&sentence)).expect("parses")[0];
        let tree = Tree::new(nearest_attachment(s)).expect("a tree");
        assert_eq!(tree.root_children().len(), 1, "{sentence:?}");
    }
}
