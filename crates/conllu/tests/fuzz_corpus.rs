//! Replays the CoNLL-U fuzz corpus and crashers stored under `fuzz/`
//! through [`spantree_conllu::check`], the property of the fuzz target.

use std::fs;
use std::path::Path;

#[test]
fn the_conllu_corpus_holds_the_property() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut count = 0;
    let mut failures = Vec::new();
    for dir in ["corpus/conllu", "artifacts/conllu"] {
        let Ok(entries) = fs::read_dir(fuzz.join(dir)) else {
            continue;
        };
        for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            let bytes = fs::read(&path).expect("a readable corpus file");
            count += 1;
            // The fuzz target skips text that is not UTF-8 the same way.
            if let Ok(text) = std::str::from_utf8(&bytes) {
                if let Err(violation) = spantree_conllu::check(text) {
                    failures.push(format!("{}: {violation}", path.display()));
                }
            }
        }
    }
    assert!(count >= 5, "fuzz/corpus/conllu holds {count} inputs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
