//! One JSON-lines record → graph → every quantity on the default backend
//! (`spantree_api::check::json_line`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = spantree_api::check::json_line(data) {
        panic!("{violation}");
    }
});
