//! What a new user feeds the command first: Python's `json.dumps` output,
//! zero-initialised tensors, other libraries' layouts, JSON that is not JSON
//! lines, typos in quantity names, and Ctrl-C.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{records, spantree, stderr, stdout};
use serde_json::Value;
use spantree_bruteforce::log_partition_from_scores;
use spantree_core::{Matrix, Rooting};

/// The scores of a 3-word sentence, `-∞` off the arcs.
fn scores() -> Matrix<f64> {
    let s = [
        [f64::NEG_INFINITY, 1.0, -0.5, 0.25],
        [f64::NEG_INFINITY, f64::NEG_INFINITY, 2.0, 0.5],
        [f64::NEG_INFINITY, 0.3, f64::NEG_INFINITY, -1.0],
        [f64::NEG_INFINITY, 0.75, 1.5, f64::NEG_INFINITY],
    ];
    Matrix::from_fn(4, 4, |h, m| s[h][m])
}

/// Writes a float as Python's `json.dumps` does (`-Infinity` for `-inf`).
fn python(x: f64) -> String {
    if x == f64::NEG_INFINITY {
        "-Infinity".into()
    } else if x.is_nan() {
        "NaN".into()
    } else {
        format!("{x:?}")
    }
}

fn matrix_text(rows: &[Vec<f64>]) -> String {
    let rows: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "[{}]",
                r.iter().map(|&x| python(x)).collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    format!("[{}]", rows.join(", "))
}

fn rows(m: &Matrix<f64>) -> Vec<Vec<f64>> {
    (0..m.rows())
        .map(|h| (0..m.cols()).map(|j| m[(h, j)]).collect())
        .collect()
}

fn log_z(record: &Value) -> f64 {
    record["log_z"]
        .as_f64()
        .unwrap_or_else(|| panic!("no log_z: {record}"))
}

#[test]
fn reads_json_dumps_output_with_infinity_masks() {
    // Exactly what `json.dumps({"id": 1, "scores": s})` writes for a list of
    // lists holding float('-inf').
    let line = format!(
        r#"{{"id": 1, "scores": {}}}"#,
        matrix_text(&rows(&scores()))
    );
    assert!(line.contains("-Infinity"));
    let out = spantree(&["infer", "--quantities", "log_z"], &line);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rec = &records(&out)[0];
    assert_eq!(rec["id"], 1);
    // Oracle: enumeration of every tree. Tolerance: a few ulps of ln Z ≈ 3.
    let want = log_partition_from_scores(&scores(), Rooting::Single);
    assert!((log_z(rec) - want).abs() < 1e-13, "{rec}");
}

#[test]
fn nan_and_infinity_tokens_are_typed_errors_naming_the_arc() {
    let mut r = rows(&scores());
    r[2][3] = f64::NAN;
    let nan = format!(r#"{{"id": "nan", "scores": {}}}"#, matrix_text(&r));
    let inf = nan.replace("NaN", "Infinity").replace("\"nan\"", "\"inf\"");
    // A "NaN" or "-Infinity" inside a string is not a token: the id stays a string.
    let in_string = r#"{"id": "-Infinity NaN", "scores": [[0, 1], [0, 0]]}"#;
    let out = spantree(
        &["infer", "--quantities", "log_z"],
        &[nan, inf, in_string.into()].join("\n"),
    );
    let recs = records(&out);
    assert_eq!(recs[0]["id"], "nan");
    assert_eq!(recs[0]["error"]["kind"], "not_a_number");
    assert_eq!(recs[0]["error"]["message"], "score of arc 2 → 3 is NaN");
    assert_eq!(recs[1]["id"], "inf");
    assert_eq!(recs[1]["error"]["kind"], "infinite");
    assert_eq!(
        recs[1]["error"]["message"],
        "score of arc 2 → 3 is infinite (inf)"
    );
    assert_eq!(recs[2]["id"], "-Infinity NaN");
    assert_eq!(log_z(&recs[2]), 1.0); // the one tree 0 → 1 of score 1
}

#[test]
fn a_zero_initialised_matrix_and_parser_masks_are_accepted() {
    let base = rows(&scores());
    // torch.zeros((n+1, n+1)) with the arcs filled in.
    let zeros: Vec<Vec<f64>> = base
        .iter()
        .enumerate()
        .map(|(h, r)| {
            r.iter()
                .enumerate()
                .map(|(m, &x)| if m == 0 || m == h { 0.0 } else { x })
                .collect()
        })
        .collect();
    // SuPar's -1e32 and the common -1e9 masks off the arcs.
    let masked: Vec<Vec<f64>> = base
        .iter()
        .enumerate()
        .map(|(h, r)| {
            r.iter()
                .enumerate()
                .map(|(m, &x)| match (m == 0, m == h) {
                    (true, _) => -1e32,
                    (_, true) => -1e9,
                    _ => x,
                })
                .collect()
        })
        .collect();
    let lines = [
        format!(r#"{{"id": "zeros", "scores": {}}}"#, matrix_text(&zeros)),
        format!(r#"{{"id": "masked", "scores": {}}}"#, matrix_text(&masked)),
    ]
    .join("\n");
    let out = spantree(&["infer", "--quantities", "log_z"], &lines);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let want = log_partition_from_scores(&scores(), Rooting::Single);
    for rec in records(&out) {
        assert!((log_z(&rec) - want).abs() < 1e-13, "{rec}");
    }
}

#[test]
fn the_three_layouts_give_identical_results() {
    let s = rows(&scores());
    let n = s.len() - 1;
    // Written out by each library's convention, by hand.
    let supar: Vec<Vec<f64>> = (0..=n)
        .map(|d| (0..=n).map(|h| s[h][d]).collect())
        .collect();
    let torch: Vec<Vec<f64>> = (1..=n)
        .map(|h| {
            (1..=n)
                .map(|m| if h == m { s[0][m] } else { s[h][m] })
                .collect()
        })
        .collect();
    let quantities = "log_z,marginals,entropy,grad_entropy";
    let run = |layout: &str, m: &[Vec<f64>]| {
        let line = format!(r#"{{"id": 0, "scores": {}}}"#, matrix_text(m));
        let out = spantree(
            &["infer", "--layout", layout, "--quantities", quantities],
            &line,
        );
        assert_eq!(out.status.code(), Some(0), "{layout}: {}", stdout(&out));
        stdout(&out)
    };
    let reference = run("spantree", &s);
    assert_eq!(run("torch-struct", &torch), reference);
    assert_eq!(run("supar", &supar), reference);
    // And the reference is right. Oracle: enumeration.
    let rec: Value = serde_json::from_str(reference.trim()).unwrap();
    let want = log_partition_from_scores(&scores(), Rooting::Single);
    assert!((log_z(&rec) - want).abs() < 1e-13);
}

#[test]
fn a_layout_mistake_that_fails_says_so() {
    // SuPar's [dependent][head] with its root row masked, read as spantree's:
    // no root arc, and the message points at the layout.
    let s = rows(&scores());
    let supar: Vec<Vec<f64>> = (0..4)
        .map(|d| {
            (0..4)
                .map(|h| if d == 0 { f64::NEG_INFINITY } else { s[h][d] })
                .collect()
        })
        .collect();
    let line = format!(r#"{{"id": "s", "scores": {}}}"#, matrix_text(&supar));
    let out = spantree(&["infer"], &line);
    let rec = &records(&out)[0];
    assert_eq!(rec["error"]["kind"], "no_spanning_tree");
    let message = rec["error"]["message"].as_str().unwrap();
    assert!(message.contains("--layout supar"), "{message}");
}

#[test]
fn json_arrays_pretty_printed_json_and_a_bom_get_clear_answers() {
    let array = r#"[{"id": 1, "scores": [[0, 1], [0, 0]]}]"#;
    let pretty = "{\n  \"id\": 2,\n  \"scores\": [[0, 1], [0, 0]]\n}";
    let bom = "\u{feff}{\"id\": 3, \"scores\": [[0, 1], [0, 0]]}";
    let out = spantree(
        &["infer", "--quantities", "log_z"],
        &[array, pretty, bom].join("\n"),
    );
    let recs = records(&out);
    let message = |i: usize| recs[i]["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message(0).contains("JSON array") && message(0).contains("jq -c '.[]'"),
        "{}",
        message(0)
    );
    // The pretty-printed object: its first line and every piece after it.
    for i in 1..=4 {
        assert!(
            message(i).contains("pretty-printed"),
            "line {}: {}",
            i + 1,
            message(i)
        );
    }
    // The byte-order mark (as Windows editors write it) is skipped.
    assert_eq!(recs[5]["id"], 3);
    assert_eq!(log_z(&recs[5]), 1.0);
}

#[test]
fn labeled_cells_off_the_arcs_and_empty_cells() {
    // Non-arc cells hold anything; an empty cell on an arc is named.
    let ok = r#"{"id": "ok", "scores": [[0, [1, 2]], [[], null]]}"#;
    let empty = r#"{"id": "empty", "scores": [[0, [1, 2], [0, 1]], [0, 0, []], [0, [1, 1], 0]]}"#;
    let out = spantree(&["infer", "--quantities", "log_z"], &[ok, empty].join("\n"));
    let recs = records(&out);
    // Oracle: one tree, two labels: Z = e¹ + e².
    let want = (1f64.exp() + 2f64.exp()).ln();
    assert!((log_z(&recs[0]) - want).abs() < 1e-14);
    assert_eq!(recs[1]["error"]["kind"], "label_count");
    assert_eq!(
        recs[1]["error"]["message"],
        "arc 1 → 2 has 0 label values, expected 2"
    );
}

#[test]
fn unknown_quantities_get_a_suggestion() {
    let out = spantree(&["infer", "--quantities", "log_z,entropie"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(r#"(did you mean "entropy"?)"#),
        "{}",
        stderr(&out)
    );
    let out = spantree(&["infer", "--quantities", "zzz"], "");
    assert!(!stderr(&out).contains("did you mean"), "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn ctrl_c_reports_the_records_written() {
    // A long run: 3000 sentences of 16 words with the O(n⁵) marginals baseline.
    let dir = std::env::temp_dir().join(format!("spantree-ctrlc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("long.jsonl");
    let mut file = std::fs::File::create(&input).unwrap();
    let n = 16;
    let row: Vec<f64> = (0..=n).map(|j| 0.1 * j as f64).collect();
    let m: Vec<Vec<f64>> = vec![row; n + 1];
    let line = format!(r#"{{"scores": {}}}"#, matrix_text(&m));
    for _ in 0..3000 {
        writeln!(file, "{line}").unwrap();
    }
    drop(file);
    let child = Command::new(env!("CARGO_BIN_EXE_spantree"))
        .args([
            "infer",
            "--threads",
            "1",
            "--algorithm",
            "marginals=mcdonald-satta",
        ])
        .arg(&input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let written = stdout(&out).lines().count();
    assert!(written < 3000, "the run finished before the signal: {err}");
    // Every line written is a whole record, and the message counts them.
    for l in stdout(&out).lines() {
        serde_json::from_str::<Value>(l).unwrap();
    }
    assert!(
        err.contains(&format!(
            "interrupted: wrote {written} records (0 failed) for the first {written} input lines"
        )),
        "{err}"
    );
}
