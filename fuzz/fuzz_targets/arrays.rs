//! The Python bindings' padded score arrays → graphs → log Z, marginals and
//! entropy on the default backend (`spantree_api::check::arrays`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = spantree_api::check::arrays(data) {
        panic!("{violation}");
    }
});
