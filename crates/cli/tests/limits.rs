//! The command's limits and manners with hostile input and output: lines
//! and sentences beyond the limits become typed error records (and the
//! lines after them keep their results), a closed output pipe ends quietly,
//! a full disk is an error message and a non-zero exit.
//!
//! Oracle: Cayley's formula. The multi-root trees over `n` words with
//! every weight 1 are the spanning trees of the complete graph on `n + 1`
//! nodes rooted at 0, `(n+1)^(n-1)` of them, so `ln Z = (n-1) ln(n+1)`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::{records, spantree, stderr};
use serde_json::Value;

/// A line of `n` words, every arc weight 1.
fn ones(id: &str, n: usize) -> String {
    let row = format!("[{}]", vec!["1"; n + 1].join(","));
    format!(
        r#"{{"id":"{id}","weights":[{}]}}"#,
        vec![row; n + 1].join(",")
    )
}

/// `ln Z` of [`ones`] with multi-root trees (Cayley).
fn cayley(n: usize) -> f64 {
    (n as f64 - 1.0) * (n as f64 + 1.0).ln()
}

/// Runs `spantree infer --rooting multi --quantities log_z` with `extra` options.
fn log_z_run(extra: &[&str], input: &str) -> std::process::Output {
    let mut args = vec!["infer", "--rooting", "multi", "--quantities", "log_z"];
    args.extend_from_slice(extra);
    spantree(&args, input)
}

fn log_z(record: &Value) -> f64 {
    record["log_z"]
        .as_f64()
        .unwrap_or_else(|| panic!("no log_z in {record}"))
}

fn kind(record: &Value) -> &str {
    record["error"]["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("no error in {record}"))
}

/// Tolerance: `ln Z` near 30 from an LU in f64, a few ulps of the sum of logs.
const TOL: f64 = 1e-11;

#[test]
fn a_line_beyond_the_limit_is_an_error_record_and_the_next_line_still_runs() {
    let long = format!(
        r#"{{"id":"long","pad":"{}","weights":[[0,1],[0,0]]}}"#,
        "x".repeat(10_000)
    );
    // The oversize line last without a newline too: the reader reaches the end inside it.
    for tail in ["\n", ""] {
        let input = format!("{}\n{long}\n{}\n{long}{tail}", ones("a", 3), ones("b", 4));
        let out = log_z_run(&["--max-line-bytes", "200"], &input);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let r = records(&out);
        assert_eq!(r.len(), 4);
        assert!((log_z(&r[0]) - cayley(3)).abs() < TOL);
        assert!((log_z(&r[2]) - cayley(4)).abs() < TOL);
        for (i, bad) in [(1, 2), (3, 4)] {
            assert_eq!(kind(&r[i]), "line_too_long", "{}", r[i]);
            assert_eq!(r[i]["line"], bad);
            let message = r[i]["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("200 bytes") && message.contains("--max-line-bytes"),
                "{message}"
            );
        }
    }
}

#[test]
fn a_line_at_the_limit_is_read() {
    let line = ones("a", 2);
    let limit = line.len().to_string();
    let out = log_z_run(&["--max-line-bytes", &limit], &format!("{line}\n"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!((log_z(&records(&out)[0]) - cayley(2)).abs() < TOL);
    let shorter = (line.len() - 1).to_string();
    let out = spantree(
        &["infer", "--max-line-bytes", &shorter],
        &format!("{line}\n"),
    );
    assert_eq!(kind(&records(&out)[0]), "line_too_long");
}

#[test]
fn a_sentence_beyond_the_word_limit_is_an_error_record() {
    let input = format!(
        "{}\n{}\n{}\n",
        ones("three", 3),
        ones("four", 4),
        ones("two", 2)
    );
    let out = log_z_run(&["--max-words", "3"], &input);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = records(&out);
    assert!((log_z(&r[0]) - cayley(3)).abs() < TOL);
    assert_eq!(kind(&r[1]), "sentence_too_long", "{}", r[1]);
    assert_eq!(r[1]["id"], "four", "the id is kept: {}", r[1]);
    assert!((log_z(&r[2]) - cayley(2)).abs() < TOL);
}

#[test]
fn the_default_limits_take_a_300_word_sentence_and_refuse_2001_words_at_the_first_row() {
    let out = spantree(
        &["infer", "--rooting", "multi", "--quantities", "log_z"],
        &format!("{}\n", ones("ud", 300)),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let z = log_z(&records(&out)[0]);
    // ln Z ≈ 1706: relative tolerance of an LU of a 300×300 matrix.
    assert!((z - cayley(300)).abs() < 1e-9 * cayley(300), "{z}");
    // Only the first row is written: the reader stops inside it.
    let first_row = format!(
        r#"{{"id":"wide","weights":[[{}]"#,
        vec!["1"; 2002].join(",")
    );
    let out = spantree(&["infer"], &format!("{first_row}\n"));
    let r = records(&out);
    assert_eq!(kind(&r[0]), "sentence_too_long", "{}", r[0]);
}

#[test]
fn a_limit_of_zero_is_a_usage_error() {
    for option in ["--max-line-bytes", "--max-words"] {
        let out = spantree(&["infer", option, "0"], "");
        assert_eq!(out.status.code(), Some(2), "{option}: {}", stderr(&out));
    }
}

#[test]
fn a_closed_output_pipe_ends_quietly_with_status_0() {
    // Enough output that the command is still writing when the reader leaves.
    let input: String = (0..20_000)
        .map(|i| ones(&i.to_string(), 3) + "\n")
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_spantree"))
        .args(["infer", "--quantities", "log_z", "--threads", "2"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the spantree binary starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout is piped"))
        .read_line(&mut first)
        .expect("one line");
    // `| head -1`: the reader is gone after one line.
    let out = child.wait_with_output().expect("spantree runs");
    writer.join().expect("the writer thread finishes");
    let record: Value = serde_json::from_str(&first).expect("a JSON record");
    assert_eq!(record["id"], "0");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "a closed pipe is not an error");
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_an_error_message_and_exit_status_2() {
    let input = format!("{}\n", ones("a", 3));
    let out = spantree(&["infer", "-o", "/dev/full"], &input);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(
        message.starts_with("spantree: cannot write /dev/full"),
        "{message}"
    );
    assert!(!message.contains("panicked"), "{message}");
    // Standard output on a full disk (`> /dev/full`) alike.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full opens");
    let out = Command::new(env!("CARGO_BIN_EXE_spantree"))
        .args(["infer"])
        .stdin(Stdio::piped())
        .stdout(full)
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .expect("stdin is piped")
                .write_all(input.as_bytes())?;
            child.wait_with_output()
        })
        .expect("spantree runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("spantree: cannot write standard output"),
        "{}",
        stderr(&out)
    );
}
