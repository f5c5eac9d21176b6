//! The properties that the fuzz targets in `fuzz/` check, and that the
//! regular test `tests/fuzz_corpus.rs` replays on the stored corpus: for
//! any input bytes, a reader returns (no panic, no abort), every `Ok`
//! result holds only finite numbers, and every error has a non-empty kind
//! and message. A violation is returned as `Err` with a description (a
//! panic inside is a violation too: the fuzzer reports it).
//!
//! ```
//! use spantree_api::check;
//! assert!(check::json_line(br#"{"id":1,"scores":[[0,1],[0,0]]}"#).is_ok());
//! assert!(check::json_line(b"not json").is_ok()); // an error record is fine
//! ```

use serde_json::Value;
use spantree_core::{Model, Rooting, Scalar};

use crate::arrays::Padded;
use crate::backend::BackendKind;
use crate::quantity::REGISTRY;
use crate::record::{Outcome, Request};
use crate::typed::Information;
use crate::Quantity;

/// Every quantity of the registry, parameterised ones with parameter 2;
/// with `graph_only`, only those that read nothing but the graph.
fn quantities(graph_only: bool) -> Vec<Quantity> {
    REGISTRY
        .iter()
        .filter(|q| !graph_only || q.reads.is_empty())
        .filter_map(|q| {
            let text = if q.usage().contains(':') {
                format!("{}:2", q.name)
            } else {
                q.name.to_owned()
            };
            text.parse().ok()
        })
        .collect()
}

/// One JSON-lines record through [`Request::process_line`] on the default
/// backend (`accurate`), twice: every quantity that reads only the graph
/// with single-root trees, and every quantity of the registry with
/// multi-root trees. The output must be one JSON object on one line,
/// finite numbers only, and an error record must have a non-empty
/// `"kind"` and `"message"`. `O(cost of the quantities)`.
///
/// # Errors
/// A description of the violated property.
pub fn json_line(bytes: &[u8]) -> Result<(), String> {
    for (graph_only, rooting) in [(true, Rooting::Single), (false, Rooting::Multi)] {
        let request = Request::new(
            BackendKind::Accurate,
            rooting,
            &quantities(graph_only),
            &[],
            false,
        )
        .map_err(|e| format!("the fuzz request is refused: {e}"))?;
        let mut out = Vec::new();
        let outcome = request.process_line(1, bytes, &mut out);
        record(bytes, outcome, &out)?;
    }
    Ok(())
}

/// Checks one output record against its outcome.
fn record(input: &[u8], outcome: Outcome, out: &[u8]) -> Result<(), String> {
    if outcome == Outcome::Blank {
        return match (input.trim_ascii().is_empty(), out.is_empty()) {
            (true, true) => Ok(()),
            _ => Err("a non-blank line was skipped, or a blank one written".to_owned()),
        };
    }
    if out.contains(&b'\n') {
        return Err("the record spans several lines".to_owned());
    }
    let text = String::from_utf8_lossy(out);
    let value: Value =
        serde_json::from_slice(out).map_err(|e| format!("the record is not JSON ({e}): {text}"))?;
    let Value::Object(fields) = &value else {
        return Err(format!("the record is not an object: {text}"));
    };
    match (outcome, fields.get("error")) {
        (Outcome::Failed, Some(error)) => {
            let nonempty = |key: &str| {
                error
                    .get(key)
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            };
            if !nonempty("kind") || !nonempty("message") {
                return Err(format!("an error record without kind or message: {text}"));
            }
            Ok(())
        }
        (Outcome::Done, None) => finite(&value).map_err(|e| format!("{e}: {text}")),
        _ => Err(format!(
            "outcome {outcome:?} does not match the record: {text}"
        )),
    }
}

/// Every number inside `v` is finite.
fn finite(v: &Value) -> Result<(), String> {
    match v {
        Value::Number(x) if x.as_f64().is_none_or(|x| !x.is_finite()) => {
            Err(format!("a number that is not finite ({x})"))
        }
        Value::Array(items) => items.iter().try_for_each(finite),
        Value::Object(fields) => fields.values().try_for_each(finite),
        _ => Ok(()),
    }
}

/// The scores a fuzz byte stands for: small decimals, and the values at
/// the edges (±∞, NaN, the largest finite, the underflow threshold of `exp`).
fn score(b: u8) -> f64 {
    const EDGES: [f64; 12] = [
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NAN,
        f64::MAX,
        f64::MIN,
        -745.2,
        709.8,
        1e300,
        -1e300,
        f64::MIN_POSITIVE,
        -0.0,
        1e-320,
    ];
    match b {
        0..=199 => (f64::from(b) - 100.0) / 8.0,
        _ => EDGES[usize::from(b - 200) % EDGES.len()],
    }
}

/// The padded-array entry of the Python bindings ([`Padded`]) on bytes
/// decoded as a shape, sentence lengths and scores, then `log Z`, the
/// marginals (per label when labeled) and the entropy of every item that
/// validates, on the default backend. Errors must have a kind and a
/// message; values must be finite. `O(B N³ L)` for the decoded shape
/// (at most 4 items of 7 words and 3 labels).
///
/// # Errors
/// A description of the violated property.
pub fn arrays(bytes: &[u8]) -> Result<(), String> {
    let [a, b, c, d, rest @ ..] = bytes else {
        return Ok(());
    };
    // Mostly consistent shapes, sometimes not, so that both sides are reached.
    let items = usize::from(a % 4);
    let side = usize::from(b % 8);
    let labels = usize::from(c % 4);
    let labeled = d & 1 == 1;
    let odd = d & 0x0e;
    let dims: Vec<usize> = match odd {
        2 => vec![items, side, side],
        4 => vec![items, side, side + 1, labels],
        _ => vec![items, side, side, labels],
    };
    let (lengths, rest) = rest.split_at(rest.len().min(items + usize::from(odd == 6)));
    let n_words: Vec<usize> = lengths.iter().map(|&x| usize::from(x % 9)).collect();
    let mut scores: Vec<f64> = rest.iter().map(|&x| score(x)).collect();
    let want = items * side * side * labels;
    if odd != 8 {
        scores.resize(want, 0.0);
    }
    let padded = match Padded::new(&dims, &n_words, labeled, scores.len()) {
        Ok(p) => p,
        Err(e) if e.kind.is_empty() || e.message.is_empty() => {
            return Err(format!("a shape error without kind or message: {e:?}"))
        }
        Err(_) => return Ok(()),
    };
    let rooting = if d & 0x10 == 0 {
        Rooting::Single
    } else {
        Rooting::Multi
    };
    let information = Information::<spantree_faer::Accurate>::new();
    for (item, &n) in n_words.iter().enumerate() {
        let model = padded
            .graph(&scores, item, n)
            .and_then(|g| Model::new(spantree_faer::Accurate, &g, rooting))
            .and_then(|m| {
                m.spanning_tree()
                    .map_err(spantree_core::Error::NoSpanningTree)?;
                Ok(m)
            });
        let model = match model {
            Ok(m) => m,
            Err(e) => {
                let message = e.to_string();
                if e.kind().is_empty() || message.is_empty() {
                    return Err(format!("an error without kind or message: {e:?}"));
                }
                continue;
            }
        };
        let results = [
            ("log_partition", model.log_partition().map(|x| vec![x])),
            (
                "label_marginals",
                model.label_marginals().map(|per| {
                    per.iter()
                        .flat_map(|m| m.as_slice().iter().map(Scalar::to_f64))
                        .collect()
                }),
            ),
            (
                "entropy",
                (information.entropy)(&model).map(|x| vec![x.to_f64()]),
            ),
        ];
        for (what, result) in results {
            match result {
                Ok(values) if values.iter().all(|x| x.is_finite()) => {}
                Ok(values) => return Err(format!("item {item}: {what} is not finite: {values:?}")),
                Err(e) if e.kind().is_empty() || e.to_string().is_empty() => {
                    return Err(format!(
                        "item {item}: {what}: an error without kind or message: {e:?}"
                    ))
                }
                Err(_) => {}
            }
        }
    }
    Ok(())
}
