//! A CoNLL-U document → sentences (`spantree_conllu::check`). Text that is
//! not UTF-8 is refused before the parser (`read_file` reads a `String`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(violation) = spantree_conllu::check(text) {
            panic!("{violation}");
        }
    }
});
