//! Replays the fuzz corpus and the minimised crashers stored under `fuzz/`
//! (seeds, inputs the fuzzer kept for new coverage, and every crash found)
//! through the property function a fuzz target runs, so that `cargo test`
//! checks them on every build. Included by each crate's `fuzz_corpus` test
//! with `#[path = "../../../fuzz/replay.rs"] mod replay;`.

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

/// Runs `property` on every stored input of `target`; the corpus must hold
/// at least `minimum` inputs (so that a moved folder cannot pass silently).
pub fn replay(target: &str, minimum: usize, property: fn(&[u8]) -> Result<(), String>) {
    let corpus = files("corpus", target);
    assert!(
        corpus.len() >= minimum,
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
