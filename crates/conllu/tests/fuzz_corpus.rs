//! Replays the CoNLL-U fuzz corpus and crashers stored under `fuzz/`
//! through [`spantree_conllu::check`], the property of the fuzz target.

#[path = "../../../fuzz/replay.rs"]
mod replay;

/// The fuzz target's property on bytes: text that is not UTF-8 is skipped,
/// as the target skips it.
fn property(bytes: &[u8]) -> Result<(), String> {
    match std::str::from_utf8(bytes) {
        Ok(text) => spantree_conllu::check(text),
        Err(_) => Ok(()),
    }
}

#[test]
fn the_conllu_corpus_holds_the_property() {
    replay::replay("conllu", 5, property);
}
