//! End-to-end tests of `spantree infer`: the built binary against the
//! brute-force oracle (every expected number comes from enumerating trees or
//! from hand computation, never from the code under test), plus the library
//! for bit-exact round trips of the JSON layer.

mod common;

use common::*;
use serde_json::{json, Value};
use spantree_bruteforce as oracle;
use spantree_bruteforce::random::{self, SplitMix64};
use spantree_core::{Engine, Graph, Matrix, Model, Rooting, Scalar};
use spantree_exact::Rational;
use spantree_faer::{Accurate, ShiftedF64, F64};

/// Input lines for a list of JSON values.
fn lines(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

/// What the library says for scores `s` (`None` when there is no tree).
fn library<B: Engine<Scalar = f64>>(
    backend: B,
    s: &Matrix<f64>,
    rooting: Rooting,
) -> Option<(f64, Matrix<f64>)> {
    let graph = Graph::from_scores(&random::rows(s)).expect("generated scores are valid");
    let model = Model::new(backend, &graph, rooting).expect("no overflow at these scores");
    model.spanning_tree().ok()?;
    Some((
        model.log_partition().expect("log Z"),
        model.marginals().expect("marginals"),
    ))
}

/// Scores with forbidden arcs for n = 1..=6: some graphs have no tree.
fn random_scores(seed: u64, per_n: usize) -> Vec<Matrix<f64>> {
    let mut rng = SplitMix64::new(seed);
    (1..=6)
        .flat_map(|n| (0..per_n).map(move |_| n))
        .map(|n| random::normal_scores(&mut rng, n, 1.5, 0.3))
        .collect()
}

#[test]
fn scores_agree_with_the_oracle_and_the_library() {
    let cases = random_scores(11, 5);
    let input: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, s)| json!({"id": i, "scores": scores_json(s)}))
        .collect();
    let input = lines(&input);
    for backend in ["f64", "log", "accurate"] {
        for rooting in Rooting::ALL {
            let out = spantree(
                &["infer", "--backend", backend, "--rooting", rooting.name()],
                &input,
            );
            let recs = records(&out);
            assert_eq!(recs.len(), cases.len());
            let mut failed = 0;
            for (i, (s, rec)) in cases.iter().zip(&recs).enumerate() {
                assert_eq!(rec["id"], json!(i));
                let log_z = oracle::log_partition_from_scores(s, rooting);
                if log_z == f64::NEG_INFINITY {
                    assert_eq!(rec["error"]["kind"], "no_spanning_tree", "{rec}");
                    assert_eq!(rec["line"], json!(i + 1));
                    failed += 1;
                    continue;
                }
                assert_eq!(rec["n"], json!(s.rows() - 1));
                assert_eq!(rec["rooting"], rooting.name());
                assert_eq!(rec["backend"], backend);
                // abs 1e-10: n ≤ 6, scores of scale 1.5, one LU of a small well-scaled matrix.
                let got = rec["log_z"].as_f64().expect("log_z is a number");
                assert!(
                    (got - log_z).abs() < 1e-10,
                    "{backend} {rooting:?} #{i}: {got} vs {log_z}"
                );
                let mu = matrix_of(&rec["marginals"]);
                let expected = oracle::marginals_from_scores(s, rooting).expect("a tree exists");
                assert_close(
                    &mu,
                    &expected,
                    1e-10,
                    &format!("{backend} {rooting:?} #{i}"),
                );
                // The JSON layer loses nothing: the library's f64s come back bit for bit.
                let lib = match backend {
                    "f64" => library(F64, s, rooting),
                    "accurate" => library(Accurate, s, rooting),
                    _ => library(ShiftedF64, s, rooting),
                };
                let (lib_log_z, lib_mu) = lib.expect("the library agrees that a tree exists");
                assert_eq!(got, lib_log_z);
                assert_eq!(mu, lib_mu);
            }
            assert!(
                failed > 0 && failed < cases.len(),
                "the cases mix trees and no trees"
            );
            assert_eq!(out.status.code(), Some(1));
            assert!(stderr(&out).contains(&format!("{failed} of {} lines failed", cases.len())));
        }
    }
}

#[test]
fn weights_agree_with_the_oracle() {
    let mut rng = SplitMix64::new(5);
    let cases: Vec<Matrix<f64>> = (1..=5)
        .flat_map(|n| (0..3).map(move |_| n))
        .map(|n| random::normal_weights(&mut rng, n, 1.0, 0.0))
        .collect();
    let input: Vec<Value> = cases
        .iter()
        .map(|w| json!({"weights": weights_json(w)}))
        .collect();
    for rooting in Rooting::ALL {
        let out = spantree(&["infer", "--rooting", rooting.name()], &lines(&input));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        for (w, rec) in cases.iter().zip(records(&out)) {
            assert_eq!(rec["id"], Value::Null);
            let z = oracle::partition(w, rooting);
            // abs 1e-10 on log Z and marginals: small, well-conditioned graphs.
            assert!((rec["log_z"].as_f64().unwrap() - z.ln()).abs() < 1e-10);
            let expected = oracle::marginals(w, rooting).expect("all arcs positive");
            assert_close(&matrix_of(&rec["marginals"]), &expected, 1e-10, "weights");
        }
    }
}

#[test]
fn only_the_requested_quantities_are_printed() {
    let line = r#"{"id":"a","weights":[[0,1,2],[0,0,3],[0,4,0]]}"#;
    let out = spantree(&["infer", "--quantities", "log_z"], line);
    let text = stdout(&out);
    assert!(
        text.starts_with(r#"{"id":"a","n":2,"rooting":"single","backend":"accurate","log_z":"#),
        "{text}"
    );
    let rec = &records(&out)[0];
    assert_eq!(rec.as_object().unwrap().len(), 5, "no other fields: {rec}");
    // Single-root trees {0→1, 1→2} and {0→2, 2→1}: 1·3 + 2·4 = 11.
    assert!((rec["log_z"].as_f64().unwrap() - 11f64.ln()).abs() < 1e-14);

    let out = spantree(
        &["infer", "--quantities", "marginals", "--rooting", "multi"],
        line,
    );
    let rec = &records(&out)[0];
    assert!(rec.get("log_z").is_none());
    // Multi-root: Z = 13 and 2 → 1 is only in the tree {0→2, 2→1} of weight 8.
    let mu = matrix_of(&rec["marginals"]);
    assert!((mu[(2, 1)] - 8.0 / 13.0).abs() < 1e-15);
    // Non-arcs are 0.
    assert_eq!((mu[(0, 0)], mu[(1, 1)], mu[(1, 0)]), (0.0, 0.0, 0.0));
}

#[test]
fn exact_rational_weights_give_the_exact_z() {
    // Single-root trees: {0→1, 1→2} of weight 1/3 · 3/7 = 1/7 and
    // {0→2, 2→1} of weight 2/3 · 1/10 = 1/15: Z = 1/7 + 1/15 = 22/105.
    // Multi-root adds {0→1, 0→2} of weight 2/9: Z = 136/315.
    let line = r#"{"id":"thirds","weights":[[0,"1/3","2/3"],[0,0,"3/7"],[0,"1/10",0]]}"#;
    let out = spantree(&["infer", "--backend", "exact"], line);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rec = &records(&out)[0];
    assert_eq!(rec["z"], "22/105");
    assert_eq!(rec["backend"], "exact");
    assert!((rec["log_z"].as_f64().unwrap() - (22.0f64 / 105.0).ln()).abs() < 1e-15);
    // μ(0 → 1) = (1/7) / (22/105) = 15/22, rounded to the nearest f64.
    assert_eq!(matrix_of(&rec["marginals"])[(0, 1)], 15.0 / 22.0);

    let out = spantree(
        &[
            "infer",
            "--backend",
            "exact",
            "--rooting",
            "multi",
            "--exact-output",
        ],
        line,
    );
    let rec = &records(&out)[0];
    assert_eq!(rec["z"], "136/315");
    // μ(2 → 1) = (1/15) / (136/315) = 21/136; non-arcs are the integer 0.
    assert_eq!(rec["marginals"][2][1], "21/136");
    assert_eq!(rec["marginals"][0][0], "0");
}

/// A random rational `p/q` as text and as a value, `0` one time in four.
fn random_rational(rng: &mut SplitMix64) -> (String, Rational) {
    if rng.chance(0.25) {
        return ("0".into(), Rational::zero());
    }
    let (p, q) = (1 + rng.below(12) as i64, 1 + rng.below(9) as i64);
    (format!("{p}/{q}"), Rational::new(p, q))
}

#[test]
fn exact_backend_matches_enumeration_in_rationals() {
    let mut rng = SplitMix64::new(3);
    for n in 1..=4 {
        let mut text = vec![vec![Value::from(0); n + 1]; n + 1];
        let mut w = Matrix::<Rational>::zeros(n + 1, n + 1);
        for (h, row) in text.iter_mut().enumerate() {
            for (m, cell) in row.iter_mut().enumerate() {
                if random::exists(h, m) {
                    let (t, x) = random_rational(&mut rng);
                    *cell = Value::from(t);
                    w[(h, m)] = x;
                }
            }
        }
        // Every root arc positive, so that a tree always exists.
        for m in 1..=n {
            text[0][m] = Value::from(format!("{m}/7"));
            w[(0, m)] = Rational::new(m as i64, 7);
        }
        let line = json!({"id": n, "weights": text}).to_string();
        for rooting in Rooting::ALL {
            let out = spantree(
                &[
                    "infer",
                    "--backend",
                    "exact",
                    "--exact-output",
                    "--rooting",
                    rooting.name(),
                ],
                &line,
            );
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            let rec = &records(&out)[0];
            assert_eq!(
                rec["z"],
                oracle::partition(&w, rooting).to_string(),
                "n = {n}"
            );
            let mu = oracle::marginals(&w, rooting).expect("a tree exists");
            for h in 0..=n {
                for m in 0..=n {
                    assert_eq!(
                        rec["marginals"][h][m],
                        mu[(h, m)].to_string(),
                        "n = {n}, {h} → {m}"
                    );
                }
            }
        }
    }
}

#[test]
fn exact_backend_takes_scores_through_f64_exp() {
    // Each score becomes the exact rational of the f64 `exp(score)`.
    let s = random::normal_scores(&mut SplitMix64::new(8), 3, 1.0, 0.0);
    let w = s.map(|&x| {
        if x == f64::NEG_INFINITY {
            Rational::zero()
        } else {
            Rational::from_f64(x.exp())
        }
    });
    let line = json!({"scores": scores_json(&s)}).to_string();
    let out = spantree(
        &["infer", "--backend", "exact", "--quantities", "log_z"],
        &line,
    );
    let rec = &records(&out)[0];
    assert_eq!(rec["z"], oracle::partition(&w, Rooting::Single).to_string());
}

#[test]
fn rational_strings_need_the_exact_backend() {
    let line = r#"{"id":"r","weights":[[0,"1/2"],[0,0]]}"#;
    let out = spantree(&["infer", "--backend", "log"], line);
    assert_eq!(out.status.code(), Some(1));
    let rec = &records(&out)[0];
    assert_eq!(rec["error"]["kind"], "parse");
    let message = rec["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("arc 0 → 1") && message.contains("--backend exact"),
        "{message}"
    );
    let out = spantree(
        &["infer", "--backend", "exact"],
        r#"{"weights":[[0,"x/2"],[0,0]]}"#,
    );
    assert!(records(&out)[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("arc 0 → 1"));
}

#[test]
fn bad_lines_become_error_records_in_place() {
    let input = [
        r#"{"id":"ok1","weights":[[0,1],[0,0]]}"#,
        r#"this is not json"#,
        "",
        r#"{"id":"neg","weights":[[0,1,1],[0,0,-0.2],[0,1,0]]}"#,
        r#"{"id":7,"scores":[[null,0.5,null],[null,null,1.0],[null,2.0,null]]}"#,
        r#"{"id":"notree","weights":[[0,1,0],[0,0,0],[0,0,0]]}"#,
        "   ",
        r#"{"id":"self","scores":[[null,1,2],[null,3,1],[null,1,null]]}"#,
        r#"{"id":"shape","weights":[[0,1,1],[0,0]]}"#,
        r#"{"id":"both","weights":[[0,1],[0,0]],"scores":[[null,1],[null,null]]}"#,
        r#"{"id":"type","scores":[[null,1],[null,{}]]}"#,
        r#"{"id":"last","scores":[[null,0.0],[null,null]]}"#,
    ]
    .join("\n");
    let out = spantree(&["infer"], &input);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("6 of 12 lines failed"),
        "{}",
        stderr(&out)
    );
    let recs = records(&out);
    let summary: Vec<(Value, Option<Value>, Option<&str>)> = recs
        .iter()
        .map(|r| {
            (
                r["id"].clone(),
                r.get("line").cloned(),
                r["error"]["kind"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (json!("ok1"), None, None),
            (Value::Null, Some(json!(2)), Some("parse")),
            (json!("neg"), Some(json!(4)), Some("negative_weight")),
            (json!(7), None, None),
            (json!("notree"), Some(json!(6)), Some("no_spanning_tree")),
            // A non-arc cell (the diagonal) is ignored whatever number it holds.
            (json!("self"), None, None),
            (json!("shape"), Some(json!(9)), Some("shape")),
            (json!("both"), Some(json!(10)), Some("parse")),
            (json!("type"), Some(json!(11)), Some("parse")),
            (json!("last"), None, None),
        ]
    );
    assert_eq!(
        recs[2]["error"]["message"],
        "weight of arc 1 → 2 is negative (-0.2)"
    );
    assert_eq!(
        recs[4]["error"]["message"],
        "no spanning tree: word 2 cannot be reached from the root"
    );
    let type_error = recs[8]["error"]["message"].as_str().unwrap();
    assert!(type_error.contains("arc 1 → 1"), "{type_error}");
    // Error records carry no result fields.
    assert!(recs[2].get("log_z").is_none() && recs[2].get("n").is_none());
}

#[test]
fn all_good_exits_zero_and_prints_nothing_on_stderr() {
    let out = spantree(&["infer", "-"], "{\"weights\":[[0,2],[0,0]]}\n\n");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stderr(&out), "");
    assert_eq!(records(&out).len(), 1);
}

#[test]
fn usage_errors_exit_two() {
    let cases: [&[&str]; 7] = [
        &["infer", "--quantities", "log_z,entropie"],
        &["infer", "--backend", "f32"],
        &["infer", "--rooting", "double"],
        &["infer", "--threads", "0"],
        &["infer", "--exact-output"],
        &["infer", "/nonexistent/input.jsonl"],
        &["frobnicate"],
    ];
    for args in cases {
        let out = spantree(args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!stderr(&out).is_empty(), "{args:?}");
    }
    let out = spantree(&["infer", "--quantities", "log_z,entropie"], "");
    let err = stderr(&out);
    for known in [
        "log_z",
        "marginals",
        "label_marginals",
        "entropy",
        "renyi:ALPHA",
        "grad_ge",
    ] {
        assert!(err.contains(known), "{err}");
    }
}

#[test]
fn forbidden_arcs_get_zero_marginals() {
    // Only 0 → 1 leaves the root; 2 → 3 is forbidden.
    let line = r#"{"id":"f","scores":[[null,0.0,null,null],[null,null,1.0,0.0],[null,null,null,null],[null,null,-1.0,null]]}"#;
    let out = spantree(&["infer", "--rooting", "multi"], line);
    let rec = &records(&out)[0];
    let ninf = f64::NEG_INFINITY;
    let s = Matrix::from_row_major(
        4,
        4,
        vec![
            ninf, 0.0, ninf, ninf, ninf, ninf, 1.0, 0.0, ninf, ninf, ninf, ninf, ninf, ninf, -1.0,
            ninf,
        ],
    );
    let expected = oracle::marginals_from_scores(&s, Rooting::Multi).unwrap();
    let mu = matrix_of(&rec["marginals"]);
    assert_close(&mu, &expected, 1e-12, "forbidden");
    assert_eq!((mu[(2, 3)], mu[(0, 2)]), (0.0, 0.0));
    // Trees: 0→1, 1→3, then 2 from 1 (e^1) or 3 (e^-1).
    let z = 1f64.exp() + (-1f64).exp();
    assert!((rec["log_z"].as_f64().unwrap() - z.ln()).abs() < 1e-14);
}

/// Per-label random weights with some zeros, and the same as JSON cells.
fn labeled_case(rng: &mut SplitMix64, n: usize, labels: usize) -> (Vec<Matrix<f64>>, Value) {
    let per_label: Vec<Matrix<f64>> = (0..labels)
        .map(|_| random::normal_weights(rng, n, 1.0, 0.3))
        .collect();
    let cells: Vec<Value> = (0..=n)
        .map(|h| {
            Value::Array(
                (0..=n)
                    .map(|m| {
                        if random::exists(h, m) {
                            Value::Array(per_label.iter().map(|w| json!(w[(h, m)])).collect())
                        } else {
                            Value::Null
                        }
                    })
                    .collect(),
            )
        })
        .collect();
    (per_label, Value::Array(cells))
}

#[test]
fn labeled_input_gives_label_marginals() {
    let mut rng = SplitMix64::new(21);
    let mut done = 0;
    for n in 1..=4 {
        for labels in 1..=3 {
            let (per_label, cells) = labeled_case(&mut rng, n, labels);
            let weights = oracle::LabeledWeights::new(per_label.clone());
            // The same graph as scores: ln w, null for forbidden labels.
            let scores = json!(cells
                .as_array()
                .unwrap()
                .iter()
                .map(|row| row
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| match c.as_array() {
                        Some(ls) => json!(ls
                            .iter()
                            .map(|x| {
                                let w = x.as_f64().unwrap();
                                if w == 0.0 {
                                    Value::Null
                                } else {
                                    json!(w.ln())
                                }
                            })
                            .collect::<Vec<_>>()),
                        None => Value::Null,
                    })
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>());
            for rooting in Rooting::ALL {
                let input = lines(&[json!({"weights": cells}), json!({"scores": scores})]);
                let out = spantree(&["infer", "--rooting", rooting.name()], &input);
                let recs = records(&out);
                let Some(expected) = weights.label_marginals(rooting) else {
                    assert_eq!(recs[0]["error"]["kind"], "no_spanning_tree");
                    assert_eq!(recs[1]["error"]["kind"], "no_spanning_tree");
                    continue;
                };
                let collapsed = oracle::marginals(&weights.collapsed(), rooting).unwrap();
                let z = weights.partition(rooting);
                for rec in &recs {
                    // abs 1e-10: n ≤ 4, weights within e^±4.
                    assert!(
                        (rec["log_z"].as_f64().unwrap() - z.ln()).abs() < 1e-10,
                        "{rec}"
                    );
                    assert_close(
                        &matrix_of(&rec["marginals"]),
                        &collapsed,
                        1e-10,
                        "collapsed",
                    );
                    for (l, mu_l) in expected.iter().enumerate() {
                        let got = Matrix::from_fn(n + 1, n + 1, |h, m| {
                            rec["label_marginals"][h][m][l].as_f64().expect("a number")
                        });
                        assert_close(&got, mu_l, 1e-10, &format!("label {l}"));
                    }
                }
                done += 1;
            }
        }
    }
    assert!(done >= 12, "enough labeled graphs had trees ({done})");
}

#[test]
fn unlabeled_input_has_no_label_marginals() {
    let out = spantree(&["infer"], r#"{"weights":[[0,1],[0,0]]}"#);
    assert!(records(&out)[0].get("label_marginals").is_none());
    let out = spantree(
        &["infer", "--quantities", "label_marginals"],
        r#"{"weights":[[0,[1,3]],[0,0]]}"#,
    );
    let rec = &records(&out)[0];
    assert!(rec.get("marginals").is_none());
    assert_eq!(rec["label_marginals"][0][1], json!([0.25, 0.75]));
}

#[test]
fn large_scores_never_print_nan() {
    // On the plain f64 backend e^700 is near the top of the f64 range: these
    // overflow or fail numerically, and must say so instead of printing NaN.
    let mut rng = SplitMix64::new(4);
    let input: Vec<Value> = (0..20)
        .map(|i| json!({"id": i, "scores": scores_json(&random::uniform_scores(&mut rng, 4 + i % 5, 705.0))}))
        .collect();
    for backend in ["f64", "log", "accurate"] {
        let out = spantree(&["infer", "--backend", backend], &lines(&input));
        let recs = records(&out);
        assert_eq!(recs.len(), 20);
        for rec in &recs {
            match rec["error"]["kind"].as_str() {
                None => assert!(rec["log_z"].as_f64().unwrap().is_finite()),
                // Even the log backend's LU can lose every digit at this scale ([§2](spantree_core::mathematics)).
                Some(kind) => assert!(
                    ["numerical", "overflow"].contains(&kind),
                    "{backend}: {rec}"
                ),
            }
        }
    }
}

/// ~200 random graphs with some bad lines, as one input text.
fn mixed_file() -> String {
    let mut rng = SplitMix64::new(99);
    let mut out = String::new();
    for i in 0..200 {
        let n = 1 + rng.below(14);
        let line = match i % 37 {
            5 => "{\"id\": \"broken\", \"scores\": [[".to_owned(),
            17 => String::new(),
            _ => json!({"id": i, "scores": scores_json(&random::normal_scores(&mut rng, n, 2.0, 0.15))})
                .to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[test]
fn output_does_not_depend_on_the_thread_count() {
    let input = mixed_file();
    let one = spantree(&["infer", "--threads", "1"], &input);
    let two = spantree(&["infer", "--threads", "2"], &input);
    assert_eq!(one.status.code(), Some(1));
    assert!(one.stdout == two.stdout, "--threads 1 and 2 differ");
    assert_eq!(stderr(&one), stderr(&two));
    // One record per non-blank line: lines 17, 54, 91, 128, 165 (0-based) are blank.
    assert_eq!(records(&one).len(), 195);
    // In input order, whatever order the sentences ran in.
    let ids: Vec<u64> = records(&one)
        .iter()
        .filter_map(|r| r["id"].as_u64())
        .collect();
    assert!(ids.len() > 180 && ids.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn file_input_and_output_file_match_stdin_and_stdout() {
    let dir = std::env::temp_dir().join(format!("spantree-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.jsonl");
    let output = dir.join("out.jsonl");
    let text = mixed_file();
    std::fs::write(&input, &text).unwrap();
    let via_pipes = spantree(&["infer", "--rooting", "multi"], &text);
    let via_files = spantree(
        &[
            "infer",
            "--rooting",
            "multi",
            input.to_str().unwrap(),
            "--output",
            output.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(via_files.status.code(), via_pipes.status.code());
    assert!(via_files.stdout.is_empty());
    assert!(std::fs::read(&output).unwrap() == via_pipes.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_shipped_examples_run() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/");
    let out = spantree(&["infer", &format!("{root}sentences.jsonl")], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = records(&out);
    assert!(recs.len() >= 4);
    assert!(recs.iter().any(|r| r.get("label_marginals").is_some()));
    let out = spantree(
        &[
            "infer",
            "--backend",
            "exact",
            &format!("{root}rationals.jsonl"),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(records(&out).iter().all(|r| r["z"].is_string()));
}
