//! Replays the model-file fuzz corpus and crashers stored under `fuzz/`
//! through [`spantree_parser::model::check`], the fuzz target's property.

#[path = "../../../fuzz/replay.rs"]
mod replay;

/// The fuzz target's property on bytes: text that is not UTF-8 is skipped,
/// as the target skips it.
fn property(bytes: &[u8]) -> Result<(), String> {
    match std::str::from_utf8(bytes) {
        Ok(text) => spantree_parser::model::check(text),
        Err(_) => Ok(()),
    }
}

#[test]
fn the_model_corpus_holds_the_property() {
    replay::replay("model", 3, property);
}

/// A model file declaring more than `MAX_BITS` weights is refused before
/// anything is allocated (a hostile file cannot ask for `2^30` slots).
#[test]
fn a_model_wider_than_max_bits_is_refused() {
    use spantree_parser::model::MAX_BITS;
    use spantree_parser::{Parser, ParserError};
    let text = format!(
        r#"{{"format":"spantree-parser","version":1,"objective":"crf","structure":"nonprojective","rooting":"single","bits":{},"arc_weights":[],"label_bits":4,"labels":[],"label_weights":[]}}"#,
        MAX_BITS + 1
    );
    let e = Parser::from_json(&text, "wide").unwrap_err();
    assert!(matches!(e, ParserError::BadModel { .. }), "{e}");
    let ok = text.replace(&format!("\"bits\":{}", MAX_BITS + 1), "\"bits\":8");
    assert!(Parser::from_json(&ok, "narrow").is_ok());
}
