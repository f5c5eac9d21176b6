//! The dense backends refuse a gradient they cannot hold, and the command
//! says so on the record of that line and goes on with the others.

mod common;

use common::*;
use serde_json::{json, Value};
use spantree_bruteforce::random::{normal_scores, uniform_scores, SplitMix64};

/// Scores uniform in `±50` with root scores moved by −10, `n = 3`
/// (`SplitMix64::new(29_057)`): every word nearly certain of its head. The
/// dense product of the entropy gradient keeps fewer than 45 bits there
/// (`spantree-faer`'s `tests/certified.rs` checks that against
/// `HighPrecision<512>`), and the dense backends' estimate refuses it.
fn nearly_certain() -> Value {
    let mut rng = SplitMix64::new(29_057);
    let mut s = uniform_scores(&mut rng, 3, 50.0);
    for m in 1..=3 {
        s[(0, m)] -= 10.0;
    }
    json!({"id": "certain", "scores": scores_json(&s)})
}

fn ordinary(seed: u64) -> Value {
    let s = normal_scores(&mut SplitMix64::new(seed), 5, 1.0, 0.0);
    json!({"id": seed, "scores": scores_json(&s)})
}

#[test]
fn a_refused_gradient_names_its_line() {
    let input = format!("{}\n{}\n{}\n", ordinary(1), nearly_certain(), ordinary(2));
    for backend in ["f64", "log", "accurate"] {
        let out = spantree(
            &[
                "infer",
                "--backend",
                backend,
                "--rooting",
                "multi",
                "--quantities",
                "grad_entropy",
            ],
            &input,
        );
        let recs = records(&out);
        assert_eq!(recs.len(), 3, "{backend}: {}", stderr(&out));
        for i in [0, 2] {
            assert!(recs[i]["grad_entropy"].is_array(), "{backend}: {}", recs[i]);
        }
        if backend == "accurate" {
            // The default takes the cancellation-free route there.
            assert!(recs[1]["grad_entropy"].is_array(), "{}", recs[1]);
            assert_eq!(out.status.code(), Some(0));
            continue;
        }
        let rec = &recs[1];
        assert_eq!(rec["id"], "certain", "{rec}");
        assert_eq!(rec["line"], json!(2), "{rec}");
        assert_eq!(rec["error"]["kind"], "numerical", "{rec}");
        let message = rec["error"]["message"].as_str().expect("a message");
        assert!(
            message.contains("small difference of large parts"),
            "{backend}: {message}"
        );
        assert!(rec.get("grad_entropy").is_none(), "{rec}");
        assert_eq!(out.status.code(), Some(1), "{backend}");
    }
}
