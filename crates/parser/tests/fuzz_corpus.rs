//! Replays the model-file fuzz corpus and crashers stored under `fuzz/`
//! through [`spantree_parser::model::check`], the fuzz target's property.

use std::fs;
use std::path::Path;

#[test]
fn the_model_corpus_holds_the_property() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut count = 0;
    let mut failures = Vec::new();
    for dir in ["corpus/model", "artifacts/model"] {
        let Ok(entries) = fs::read_dir(fuzz.join(dir)) else {
            continue;
        };
        for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            let bytes = fs::read(&path).expect("a readable corpus file");
            count += 1;
            // The fuzz target skips text that is not UTF-8 the same way.
            if let Ok(text) = std::str::from_utf8(&bytes) {
                if let Err(violation) = spantree_parser::model::check(text) {
                    failures.push(format!("{}: {violation}", path.display()));
                }
            }
        }
    }
    assert!(count >= 3, "fuzz/corpus/model holds {count} inputs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
