//! The registry, the names and the capability table, checked against what
//! the backends actually compute (by calling them), and the batch's order.

use std::io::BufReader;

use serde_json::Value;
use spantree_api::algorithm::{AlgorithmChoice, Algorithms, ALGORITHMS};
use spantree_api::batch::{self, Streams};
use spantree_api::quantity::Param;
use spantree_api::{
    parse_rooting, BackendKind, Needs, Outcome, Quantity, Request, UsageError, REGISTRY,
};
use spantree_core::Rooting;

/// A valid parameter for a row, as text.
fn with_param(name: &str, param: Param) -> String {
    match param {
        Param::None => name.to_owned(),
        Param::NonNegative(_) | Param::NonNegativeOrInfinite(_) | Param::Positive(_) => {
            format!("{name}:2.5")
        }
        Param::Count(_) => format!("{name}:3"),
    }
}

#[test]
fn every_quantity_name_round_trips() {
    let mut previous: Option<Quantity> = None;
    for row in REGISTRY {
        let text = with_param(row.name, row.param);
        let q: Quantity = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(q.name(), row.name);
        assert!(std::ptr::eq(q.info(), row), "{text}: info() is its own row");
        assert_eq!(q.to_string(), text);
        assert_eq!(q.to_string().parse::<Quantity>(), Ok(q));
        let order = match row.param {
            Param::None => None,
            Param::Count(_) => Some(3.0),
            _ => Some(2.5),
        };
        assert_eq!(q.order(), order);
        // The table is in output order: the order of the variants.
        if let Some(p) = previous {
            assert!(
                p < q,
                "{p} before {q} in the registry but not in the output order"
            );
        }
        previous = Some(q);
        // Spaces around the name and the parameter are ignored.
        assert_eq!(format!(" {text} ").parse::<Quantity>(), Ok(q));
        // A gradient names a quantity of the registry.
        if let Some(of) = row.gradient_of {
            assert!(REGISTRY.iter().any(|r| r.name == of), "{}", row.name);
        }
        assert!(!row.help.is_empty(), "{} has help", row.name);
    }
    assert_eq!(REGISTRY.len(), 20);
    // The min-entropy is the Rényi entropy of order ∞.
    assert_eq!(
        "renyi:inf".parse::<Quantity>().map(|q| q.order()),
        Ok(Some(f64::INFINITY))
    );
}

#[test]
fn malformed_quantities_are_typed_errors() {
    let err = |s: &str| s.parse::<Quantity>().unwrap_err();
    assert_eq!(
        err("entropie"),
        UsageError::UnknownQuantity {
            name: "entropie".into()
        }
    );
    assert!(matches!(
        err("entropy:2"),
        UsageError::UnexpectedParameter {
            name: "entropy",
            ..
        }
    ));
    assert!(matches!(
        err("renyi"),
        UsageError::MissingParameter { name: "renyi", .. }
    ));
    assert!(matches!(
        err("renyi:two"),
        UsageError::ParameterNotANumber { name: "renyi", .. }
    ));
    for bad in [
        "renyi:-1",
        "renyi:NaN",
        "renyi:-inf",
        "lp_norm:inf",
        "kbest:0",
        "kbest:2.5",
        "samples:-1",
        "lp_norm:0",
        "lp_norm:-0",
    ] {
        assert!(
            matches!(err(bad), UsageError::ParameterDomain { .. }),
            "{bad}"
        );
    }
    // The message lists every known name.
    let message = err("entropie").to_string();
    for row in REGISTRY {
        assert!(message.contains(row.name), "{message}");
    }
    // renyi:-0 is renyi:0 (one quantity, one output field).
    assert_eq!("renyi:-0".parse::<Quantity>(), "renyi:0".parse());
}

#[test]
fn backend_and_rooting_names_round_trip() {
    for kind in BackendKind::ALL {
        assert_eq!(kind.to_string().parse::<BackendKind>(), Ok(kind));
        assert!(!kind.help().is_empty());
        // Only exact numbers lack logarithms.
        assert_eq!(kind.has_logarithms(), !kind.is_exact(), "{kind}");
    }
    assert_eq!(BackendKind::known(), "accurate, f64, log, exact, high");
    assert_eq!(
        "f32".parse::<BackendKind>(),
        Err(UsageError::UnknownBackend { name: "f32".into() })
    );
    for rooting in Rooting::ALL {
        assert_eq!(parse_rooting(rooting.name()), Ok(rooting));
    }
    assert!(matches!(
        parse_rooting("double"),
        Err(UsageError::UnknownRooting { .. })
    ));
}

#[test]
fn algorithm_names_round_trip() {
    for row in ALGORITHMS {
        let choice: AlgorithmChoice = format!("{}={}", row.quantity, row.name).parse().unwrap();
        assert_eq!(choice, row.choice);
        assert_eq!((choice.quantity(), choice.name()), (row.quantity, row.name));
        // Every algorithm is the algorithm of a quantity of the registry.
        assert!(REGISTRY.iter().any(|q| q.name == row.quantity));
    }
    assert!(matches!(
        "entropy".parse::<AlgorithmChoice>(),
        Err(UsageError::AlgorithmSyntax { .. })
    ));
    assert!(matches!(
        "kl=fast".parse::<AlgorithmChoice>(),
        Err(UsageError::NoChoiceOfAlgorithm { .. })
    ));
    assert!(matches!(
        "entropy=fast".parse::<AlgorithmChoice>(),
        Err(UsageError::UnknownAlgorithm {
            quantity: "entropy",
            ..
        })
    ));
    let two = ["entropy=smith-eisner", "entropy=expectation"].map(|s| s.parse().unwrap());
    assert!(matches!(
        Algorithms::from_choices(&two),
        Err(UsageError::TwoAlgorithms {
            quantity: "entropy",
            ..
        })
    ));
}

/// A labeled graph of 2 words and 2 labels with every field any quantity
/// reads, in weights (rational strings would refuse the float backends).
const EVERYTHING: &str = r#"{"id":"all",
 "weights":[[0,[1,2],[0.5,1]],[0,0,[3,1]],[0,[4,0.25],0]],
 "weights_q":[[0,[1,1],[1,1]],[0,0,[1,1]],[0,[1,1],0]],
 "heads":[2,0],"labels":[1,0],
 "features":[[0,2,[1,0]],[2,1,[0,1]]],"targets":[0.5,0.5],
 "features_s":[[1,2,[1]]]}"#;

#[test]
fn the_capability_table_matches_what_the_backends_compute() {
    let line = EVERYTHING.replace('\n', "");
    for kind in BackendKind::ALL {
        for row in REGISTRY {
            let q: Quantity = with_param(row.name, row.param).parse().unwrap();
            let supported = q.supported_on(kind);
            assert_eq!(
                supported,
                row.needs == Needs::Field || kind.has_logarithms(),
                "{kind} {q}"
            );
            let checked = Request::new(kind, Rooting::Single, &[q], &[], false);
            assert_eq!(checked.is_ok(), supported, "{kind} {q}: {checked:?}");
            if !supported {
                assert_eq!(
                    checked.unwrap_err(),
                    UsageError::Unsupported {
                        quantity: row.name,
                        backend: kind.name()
                    }
                );
            }
            // Past the up-front check, the backend itself says what it can do.
            let request = Request::unchecked(kind, Rooting::Single, &[q], false);
            let mut out = Vec::new();
            let outcome = request.process_line(1, line.as_bytes(), &mut out);
            let record: Value = serde_json::from_slice(&out).expect("one JSON record");
            if supported {
                assert_eq!(outcome, Outcome::Done, "{kind} {q}: {record}");
                assert!(record.get(row.name).is_some(), "{kind} {q}: {record}");
                assert_eq!(record["backend"], kind.name());
            } else {
                assert_eq!(outcome, Outcome::Failed, "{kind} {q}: {record}");
                assert_eq!(record["error"]["kind"], "unsupported", "{record}");
            }
        }
    }
}

#[test]
fn request_checks_come_in_order() {
    let entropy: Quantity = "entropy".parse().unwrap();
    let minors = ["log_z=minors".parse().unwrap()];
    // exact output before capabilities
    assert_eq!(
        Request::new(BackendKind::F64, Rooting::Single, &[entropy], &[], true).unwrap_err(),
        UsageError::ExactOutputNeedsExact
    );
    assert_eq!(
        Request::new(BackendKind::F64, Rooting::Multi, &[], &minors, false).unwrap_err(),
        UsageError::MinorsNeedSingleRoot
    );
    let orders = ["renyi:2", "renyi:3"].map(|s| s.parse::<Quantity>().unwrap());
    assert!(matches!(
        Request::new(BackendKind::Log, Rooting::Single, &orders, &[], false),
        Err(UsageError::TwoOrders { name: "renyi", .. })
    ));
    // The same order twice is one quantity; marginals bring label_marginals.
    let same = ["renyi:2", "marginals", "renyi:2.0"].map(|s| s.parse::<Quantity>().unwrap());
    let request = Request::new(BackendKind::Log, Rooting::Single, &same, &[], false).unwrap();
    assert_eq!(
        request.quantities,
        [Quantity::Marginals, Quantity::LabelMarginals, same[0]]
    );
}

#[test]
fn batches_keep_input_order_for_any_thread_count() {
    // Lines of different sizes (so workers finish out of order), blank and bad lines.
    let mut input = String::new();
    for i in 0..300 {
        match i % 7 {
            3 => input.push('\n'),
            5 => input.push_str(&format!("{{\"id\":{i},\"weights\":[[0,-1],[0,0]]}}\n")),
            _ => {
                let n = 1 + i % 9;
                let rows: Vec<Vec<f64>> = (0..=n)
                    .map(|h| {
                        (0..=n)
                            .map(|m| if m == 0 || m == h { 0.0 } else { 1.0 })
                            .collect()
                    })
                    .collect();
                input.push_str(&serde_json::json!({"id": i, "weights": rows}).to_string());
                input.push('\n');
            }
        }
    }
    let request = Request::new(
        BackendKind::Accurate,
        Rooting::Multi,
        &[Quantity::LogZ],
        &[],
        false,
    )
    .unwrap();
    let mut outputs = Vec::new();
    for threads in [1, 2, 4] {
        let pool = batch::thread_pool(Some(threads)).unwrap();
        let mut reader = BufReader::new(input.as_bytes());
        let mut output = Vec::new();
        let mut read = 0;
        let summary = batch::run(
            &request,
            &pool,
            Streams {
                input: &mut reader,
                input_name: "input",
                output: &mut output,
                output_name: "output",
            },
            &mut |bytes| read += bytes,
        )
        .unwrap();
        assert_eq!(read, input.len() as u64);
        assert_eq!(summary.lines, 300);
        assert_eq!(summary.failed, (0..300).filter(|i| i % 7 == 5).count());
        let text = String::from_utf8(output).unwrap();
        let ids: Vec<u64> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["id"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        let expected: Vec<u64> = (0..300).filter(|i| i % 7 != 3).collect();
        assert_eq!(ids, expected, "{threads} threads");
        // Cayley: unit weights on n words give (n+1)^(n-1) multi-root trees.
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            if let Some(n) = record["n"].as_u64() {
                let expected = (n as f64 - 1.0) * ((n + 1) as f64).ln();
                let got = record["log_z"].as_f64().unwrap();
                // rel 1e-13: elimination on unit weights, n ≤ 9.
                assert!(
                    (got - expected).abs() <= 1e-13 * expected.abs().max(1.0),
                    "{record}"
                );
            } else {
                assert_eq!(record["error"]["kind"], "negative_weight", "{record}");
            }
        }
        outputs.push(text);
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
}
