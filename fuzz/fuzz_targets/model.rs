//! A parser model file → parser → one parsed sentence
//! (`spantree_parser::model::check`). Text that is not UTF-8 is refused
//! before the reader (`Parser::load` reads a `String`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(violation) = spantree_parser::model::check(text) {
            panic!("{violation}");
        }
    }
});
