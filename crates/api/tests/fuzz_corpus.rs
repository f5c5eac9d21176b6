//! Replays the fuzz corpus and the minimised crashers stored under `fuzz/`
//! (seeds, inputs the fuzzer kept for new coverage, and every crash found)
//! through the same property functions the fuzz targets run, so that
//! `cargo test` checks them on every build.

#[path = "../../../fuzz/replay.rs"]
mod replay;
use replay::replay;

#[test]
fn the_json_line_corpus_holds_the_property() {
    replay("json_line", 5, spantree_api::check::json_line);
}

#[test]
fn the_arrays_corpus_holds_the_property() {
    replay("arrays", 5, spantree_api::check::arrays);
}
