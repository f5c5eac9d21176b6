//! Replays the fuzz corpus and the minimised crashers stored under `fuzz/`
//! (seeds, inputs the fuzzer kept for new coverage, and every crash found)
//! through the same property functions the fuzz targets run, so that
//! `cargo test` checks them on every build.

use std::fs;
use std::path::{Path, PathBuf};

/// The files of `fuzz/<dir>/<target>`, sorted (none when the folder is absent).
fn files(dir: &str, target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(dir)
        .join(target);
    let mut out: Vec<PathBuf> = fs::read_dir(&root)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Runs `property` on every stored input of `target`; the corpus must not be empty.
fn replay(target: &str, property: fn(&[u8]) -> Result<(), String>) {
    let corpus = files("corpus", target);
    assert!(
        corpus.len() >= 5,
        "fuzz/corpus/{target} holds {} inputs",
        corpus.len()
    );
    let mut failures = Vec::new();
    for path in corpus.iter().chain(&files("artifacts", target)) {
        let bytes = fs::read(path).expect("a readable corpus file");
        if let Err(violation) = property(&bytes) {
            failures.push(format!("{}: {violation}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_json_line_corpus_holds_the_property() {
    replay("json_line", spantree_api::check::json_line);
}

#[test]
fn the_arrays_corpus_holds_the_property() {
    replay("arrays", spantree_api::check::arrays);
}
