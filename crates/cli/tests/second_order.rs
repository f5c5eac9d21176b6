//! End-to-end tests of `covariance` and of `--algorithm`: covariances
//! against enumeration of trees (`Cov[r, s] = E[r sᵀ] − E[r] E[s]ᵀ`, in
//! exact rationals), every baseline against the default algorithm, bad
//! choices as usage errors, and thread-count independence.

mod common;

use common::*;
use serde_json::{json, Value};
use spantree_bruteforce::random::SplitMix64;
use spantree_bruteforce::{trees, Tree};
use spantree_core::{Matrix, Rooting, Scalar};
use spantree_exact::Rational;

/// Input lines for a list of JSON values.
fn lines(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

/// Weights in halves from 1/2 to 2 on every arc, a few arcs forbidden but
/// always a tree under both rootings (the root reaches every word directly).
fn weights(rng: &mut SplitMix64, n: usize) -> Matrix<f64> {
    Matrix::from_fn(n + 1, n + 1, |h, m| {
        // Not an arc, or a forbidden one.
        let absent = m == 0 || h == m || (h != 0 && rng.chance(0.15));
        if absent {
            0.0
        } else {
            (1 + rng.below(4)) as f64 / 2.0
        }
    })
}

/// Sparse integer features of dimension `dim` as `(h, m, values)`, on
/// about two arcs in three (including forbidden arcs: they never fire).
fn features(rng: &mut SplitMix64, n: usize, dim: usize) -> Vec<(usize, usize, Vec<i64>)> {
    let mut out = Vec::new();
    for h in 0..=n {
        for m in (1..=n).filter(|&m| m != h) {
            if rng.chance(0.66) {
                let values = (0..dim).map(|_| rng.below(5) as i64 - 2).collect();
                out.push((h, m, values));
            }
        }
    }
    out
}

fn features_json(f: &[(usize, usize, Vec<i64>)]) -> Value {
    Value::Array(f.iter().map(|(h, m, v)| json!([h, m, v])).collect())
}

/// The feature vector of a tree.
fn value(f: &[(usize, usize, Vec<i64>)], dim: usize, t: &Tree) -> Vec<Rational> {
    let mut v = vec![Rational::zero(); dim];
    for (h, m, values) in f {
        if t.head(*m) == *h {
            for (x, a) in v.iter_mut().zip(values) {
                *x += Rational::from_f64(*a as f64);
            }
        }
    }
    v
}

/// `Cov[r, s]` by enumeration, exactly.
fn covariance_by_enumeration(
    w: &Matrix<f64>,
    rooting: Rooting,
    r: &[(usize, usize, Vec<i64>)],
    s: &[(usize, usize, Vec<i64>)],
    dims: (usize, usize),
) -> Matrix<Rational> {
    let w = w.map(|&x| Rational::from_f64(x));
    let all: Vec<Tree> = trees(&w, rooting).collect();
    let mut z = Rational::zero();
    let mut er = vec![Rational::zero(); dims.0];
    let mut es = vec![Rational::zero(); dims.1];
    let mut ers: Matrix<Rational> = Matrix::zeros(dims.0, dims.1);
    for t in &all {
        let p = t.weight(&w);
        z += p.clone();
        let (a, b) = (value(r, dims.0, t), value(s, dims.1, t));
        for i in 0..dims.0 {
            er[i] += p.clone() * a[i].clone();
            for j in 0..dims.1 {
                ers[(i, j)] += p.clone() * a[i].clone() * b[j].clone();
            }
        }
        for j in 0..dims.1 {
            es[j] += p.clone() * b[j].clone();
        }
    }
    Matrix::from_fn(dims.0, dims.1, |i, j| {
        ers[(i, j)].clone() / z.clone() - er[i].clone() * es[j].clone() / (z.clone() * z.clone())
    })
}

fn number_matrix(v: &Value) -> Matrix<f64> {
    let rows = v.as_array().expect("an array of rows");
    let cols = rows
        .first()
        .map_or(0, |r| r.as_array().expect("a row").len());
    let data: Vec<f64> = rows
        .iter()
        .flat_map(|r| r.as_array().expect("a row").iter())
        .map(|x| x.as_f64().expect("a number"))
        .collect();
    Matrix::from_row_major(rows.len(), cols, data)
}

/// The covariance of `features` with `features_s` (and with itself) on a
/// graph of 4 words, against enumeration: the float backends within 1e-12
/// (sums of ≤ 125 probabilities of one LU of condition < 1e2), the exact
/// backend as the same rational strings, for every algorithm and rooting.
#[test]
fn covariance_matches_enumeration() {
    let mut rng = SplitMix64::new(51);
    for rooting in Rooting::ALL {
        for trial in 0..3 {
            let n = 2 + trial;
            let w = weights(&mut rng, n);
            let r = features(&mut rng, n, 3);
            let s = features(&mut rng, n, 2);
            let with_s = json!({"id": trial, "weights": weights_json(&w),
                "features": features_json(&r), "features_s": features_json(&s)});
            let alone =
                json!({"id": trial, "weights": weights_json(&w), "features": features_json(&r)});
            let cases = [
                (
                    &with_s,
                    covariance_by_enumeration(&w, rooting, &r, &s, (3, 2)),
                ),
                (
                    &alone,
                    covariance_by_enumeration(&w, rooting, &r, &r, (3, 3)),
                ),
            ];
            for (line, expected) in &cases {
                for algorithm in ["auto", "jacobian-vector", "hessian"] {
                    let choice = format!("covariance={algorithm}");
                    let what = format!("{rooting:?} n={n} {algorithm} {}", line["features_s"]);
                    for backend in ["log", "f64", "accurate"] {
                        let out = spantree(
                            &[
                                "infer",
                                "--rooting",
                                rooting.name(),
                                "--backend",
                                backend,
                                "--quantities",
                                "covariance",
                                "--algorithm",
                                &choice,
                            ],
                            &lines(&[(*line).clone()]),
                        );
                        assert!(
                            out.status.success(),
                            "{what} on {backend}: {}{}",
                            stderr(&out),
                            stdout(&out)
                        );
                        let got = number_matrix(&records(&out)[0]["covariance"]);
                        assert_close(&got, &expected.map(|x| x.to_f64()), 1e-12, &what);
                    }
                    let out = spantree(
                        &[
                            "infer",
                            "--rooting",
                            rooting.name(),
                            "--backend",
                            "exact",
                            "--exact-output",
                            "--quantities",
                            "covariance",
                            "--algorithm",
                            &choice,
                        ],
                        &lines(&[(*line).clone()]),
                    );
                    assert!(out.status.success(), "{what}: {}", stderr(&out));
                    let rec = &records(&out)[0];
                    for i in 0..expected.rows() {
                        for j in 0..expected.cols() {
                            assert_eq!(
                                rec["covariance"][i][j],
                                expected[(i, j)].to_string(),
                                "{what} exact [{i}][{j}]"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// A labeled graph: `[h, m, ℓ, [v…]]` features are accepted by covariance,
/// and the two routes agree (1e-12: one LU of a 3-word graph).
#[test]
fn covariance_on_labeled_graphs() {
    let line = json!({"scores": [[null, [0.5, null], [1.0, -1.0]], [null, null, [0.2, 1.3]],
        [null, [1.1, -0.4], null]],
        "features": [[0, 1, 0, [1, 0]], [2, 1, [0, 1]], [1, 2, 1, [1, 1]]]});
    let mut got = Vec::new();
    for algorithm in ["jacobian-vector", "hessian"] {
        let out = spantree(
            &[
                "infer",
                "--quantities",
                "covariance",
                "--algorithm",
                &format!("covariance={algorithm}"),
            ],
            &lines(std::slice::from_ref(&line)),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        got.push(number_matrix(&records(&out)[0]["covariance"]));
    }
    assert_eq!((got[0].rows(), got[0].cols()), (2, 2));
    assert_close(&got[0], &got[1], 1e-12, "labeled covariance");
}

/// Random scores from N(0, 1) on every arc, as JSON.
fn normal_scores(rng: &mut SplitMix64, n: usize) -> Matrix<f64> {
    Matrix::from_fn(n + 1, n + 1, |h, m| {
        if m == 0 || h == m {
            f64::NEG_INFINITY
        } else {
            rng.normal()
        }
    })
}

/// Every number of a record's fields, flattened, for comparisons.
fn flatten(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::Array(items) => items.iter().for_each(|x| flatten(x, out)),
        Value::Number(x) => out.push(x.as_f64().expect("a number")),
        other => panic!("not a number: {other}"),
    }
}

const ALL_QUANTITIES: &str = "log_z,marginals,entropy,grad_ge,covariance";

/// Every baseline, alone and all together, gives the default's numbers on
/// random graphs of 6 and 7 words: relative 1e-9 on the f64 backends (the
/// baselines take up to n² separate LUs of condition < 1e4 and the
/// covariance route sums O(n⁴) products; the routes round differently).
#[test]
fn baselines_agree_with_the_defaults() {
    let mut rng = SplitMix64::new(7);
    let mut input = Vec::new();
    for (k, n) in [6, 7, 6].into_iter().enumerate() {
        let s = normal_scores(&mut rng, n);
        let f = features(&mut rng, n, 3);
        input.push(
            json!({"id": k, "scores": scores_json(&s), "features": features_json(&f),
            "targets": [0.5, -1.0, 2.0]}),
        );
    }
    let input = lines(&input);
    let choices: &[(&str, &[&str])] = &[
        ("log_z", &["minors"]),
        ("marginals", &["mcdonald-satta"]),
        ("entropy", &["smith-eisner"]),
        ("grad_ge", &["covariance"]),
        ("covariance", &["jacobian-vector", "hessian"]),
    ];
    for rooting in Rooting::ALL {
        for backend in ["log", "f64", "accurate"] {
            let base = [
                "infer",
                "--rooting",
                rooting.name(),
                "--backend",
                backend,
                "--quantities",
                ALL_QUANTITIES,
            ];
            let default = spantree(&base, &input);
            assert!(default.status.success(), "{}", stderr(&default));
            let default = records(&default);
            let mut runs: Vec<Vec<String>> = Vec::new();
            let mut together = Vec::new();
            for (quantity, names) in choices {
                if *quantity == "log_z" && rooting == Rooting::Multi {
                    continue;
                }
                for name in *names {
                    runs.push(vec![format!("{quantity}={name}")]);
                }
                together.push(format!("{quantity}={}", names[0]));
            }
            runs.push(together);
            for run in &runs {
                let mut args: Vec<&str> = base.to_vec();
                for choice in run {
                    args.extend(["--algorithm", choice]);
                }
                let out = spantree(&args, &input);
                assert!(out.status.success(), "{run:?}: {}", stderr(&out));
                for (a, b) in records(&out).iter().zip(&default) {
                    for field in ALL_QUANTITIES.split(',') {
                        let (mut x, mut y) = (Vec::new(), Vec::new());
                        flatten(&a[field], &mut x);
                        flatten(&b[field], &mut y);
                        assert_eq!(x.len(), y.len(), "{field}");
                        let scale = y.iter().fold(1.0f64, |s, v| s.max(v.abs()));
                        for (i, (p, q)) in x.iter().zip(&y).enumerate() {
                            assert!(
                                (p - q).abs() <= 1e-9 * scale,
                                "{rooting:?} {backend} {run:?} {field}[{i}]: {p} vs default {q}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// On the exact backend every baseline gives the default's rational strings
/// (entropy needs logarithms and is not available there).
#[test]
fn baselines_are_exactly_the_defaults_on_the_exact_backend() {
    let mut rng = SplitMix64::new(8);
    let mut input = Vec::new();
    for k in 0..2 {
        let n = 5;
        let w = weights(&mut rng, n);
        let f = features(&mut rng, n, 2);
        input.push(
            json!({"id": k, "weights": weights_json(&w), "features": features_json(&f),
            "targets": ["1/3", "-2"]}),
        );
    }
    let input = lines(&input);
    let quantities = "log_z,marginals,grad_ge,covariance";
    for rooting in Rooting::ALL {
        let base = [
            "infer",
            "--rooting",
            rooting.name(),
            "--backend",
            "exact",
            "--exact-output",
            "--quantities",
            quantities,
        ];
        let default = spantree(&base, &input);
        assert!(default.status.success(), "{}", stderr(&default));
        let mut choices = vec![
            "marginals=mcdonald-satta",
            "grad_ge=covariance",
            "covariance=hessian",
            "covariance=jacobian-vector",
        ];
        if rooting == Rooting::Single {
            choices.push("log_z=minors");
        }
        for choice in choices {
            let mut args = base.to_vec();
            args.extend(["--algorithm", choice]);
            let out = spantree(&args, &input);
            assert!(out.status.success(), "{choice}: {}", stderr(&out));
            assert_eq!(stdout(&out), stdout(&default), "{rooting:?} {choice}");
        }
        // z is printed and is the same rational.
        assert!(records(&default)[0]["z"].is_string());
    }
}

/// Unknown quantities or names, a missing `=`, two algorithms for one
/// quantity and `log_z=minors` with multi-root trees are usage errors (exit
/// status 2, nothing on standard output) whose message lists the choices.
#[test]
fn bad_algorithms_are_usage_errors() {
    let line = "{\"weights\": [[0, 1], [0, 0]]}\n";
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--algorithm", "entropy=foo"],
            &["\"foo\"", "expectation (default)", "smith-eisner"],
        ),
        (
            &["--algorithm", "kl=fast"],
            &[
                "\"kl\" has no choice",
                "covariance=auto|jacobian-vector|hessian",
            ],
        ),
        (
            &["--algorithm", "entropy"],
            &["QUANTITY=NAME", "log_z=lu|minors"],
        ),
        (&["--algorithm", "covariance=Hessian"], &["jacobian-vector"]),
        (
            &["--algorithm", "log_z=minors", "--rooting", "multi"],
            &["single-root", "log_z=lu"],
        ),
        (
            &["--algorithm", "grad_ge=covariance,grad_ge=reverse-mode"],
            &["two algorithms"],
        ),
        (&["--algorithm", ""], &["QUANTITY=NAME"]),
    ];
    for (args, words) in cases {
        let mut all = vec!["infer"];
        all.extend_from_slice(args);
        let out = spantree(&all, line);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?}");
        let message = stderr(&out);
        for w in *words {
            assert!(message.contains(w), "{args:?}: {message}");
        }
    }
    // The same choice twice, or the default named explicitly, is fine.
    for args in [
        &[
            "--algorithm",
            "entropy=smith-eisner",
            "--algorithm",
            "entropy=smith-eisner",
        ][..],
        &["--algorithm", "log_z=lu", "--rooting", "multi"],
        &["--algorithm", " covariance = hessian "],
    ] {
        let mut all = vec!["infer"];
        all.extend_from_slice(args);
        let out = spantree(&all, line);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
}

/// Bad covariance inputs are error records naming the field and position,
/// and the other lines go on; an empty feature list has dimension 0.
#[test]
fn covariance_input_errors() {
    let w = json!([[0, 1, 2], [0, 0, 3], [0, 4, 0]]);
    let input = lines(&[
        json!({"id": "none", "weights": w}),
        json!({"id": "ragged", "weights": w, "features": [[0, 1, [1, 2]], [1, 2, [1]]]}),
        json!({"id": "ragged_s", "weights": w, "features": [[0, 1, [1]]],
            "features_s": [[0, 1, [1]], [0, 2, [1, 0]]]}),
        json!({"id": "arc", "weights": w, "features": [[0, 1, [1]]], "features_s": [[2, 2, [1]]]}),
        json!({"id": "type", "weights": w, "features": {"a": 1}}),
        json!({"id": "empty", "weights": w, "features": []}),
        json!({"id": "ok", "weights": w, "features": [[0, 1, [1]]], "features_s": []}),
    ]);
    let out = spantree(&["infer", "--quantities", "covariance"], &input);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let recs = records(&out);
    let kind = |i: usize| recs[i]["error"]["kind"].as_str().unwrap_or("").to_owned();
    let message = |i: usize| {
        recs[i]["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert_eq!(kind(0), "missing_field");
    assert!(message(0).contains("features"), "{}", message(0));
    assert_eq!(kind(1), "mismatch");
    assert!(message(1).contains("\"features\"[1]"), "{}", message(1));
    assert_eq!(kind(2), "mismatch");
    assert!(message(2).contains("\"features_s\"[1]"), "{}", message(2));
    assert_eq!(kind(3), "no_such_arc");
    assert!(message(3).contains("\"features_s\"[0]"), "{}", message(3));
    assert_eq!(kind(4), "parse");
    assert_eq!(recs[5]["covariance"], json!([]));
    assert_eq!(recs[6]["covariance"], json!([[]]));
}

/// The output does not depend on the number of threads, with every baseline.
#[test]
fn threads_give_identical_bytes() {
    let mut rng = SplitMix64::new(99);
    let mut input = Vec::new();
    for k in 0..40 {
        let n = 1 + k % 7;
        let s = normal_scores(&mut rng, n);
        let f = features(&mut rng, n, 2);
        let g = features(&mut rng, n, 3);
        input.push(
            json!({"id": k, "scores": scores_json(&s), "features": features_json(&f),
            "features_s": features_json(&g), "targets": [0.1, 0.2]}),
        );
    }
    let input = lines(&input);
    let run = |threads: &str, choices: &str| {
        let out = spantree(
            &[
                "infer",
                "--quantities",
                ALL_QUANTITIES,
                "--threads",
                threads,
                "--algorithm",
                choices,
            ],
            &input,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        out.stdout
    };
    for choices in [
        "covariance=hessian",
        "log_z=minors,marginals=mcdonald-satta,entropy=smith-eisner,grad_ge=covariance,covariance=jacobian-vector",
    ] {
        let one = run("1", choices);
        assert_eq!(one, run("2", choices), "{choices}");
        assert_eq!(one, run("4", choices), "{choices}");
    }
}
