//! Helpers shared by the end-to-end tests: run the built binary, turn
//! matrices into input lines, read output lines back.

#![allow(dead_code)] // each test file uses a different subset

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};
use spantree_core::Matrix;

/// Runs `spantree args…` with `stdin` as standard input.
pub fn spantree(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spantree"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the spantree binary starts");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.to_owned();
    // A separate writer, so that a large input cannot deadlock against a full stdout pipe.
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("spantree runs");
    writer.join().expect("the writer thread finishes");
    out
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("stderr is UTF-8")
}

/// Every output line, parsed.
pub fn records(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A score matrix as JSON: `-∞` becomes `null`.
pub fn scores_json(s: &Matrix<f64>) -> Value {
    let rows: Vec<Value> = (0..s.rows())
        .map(|h| {
            Value::Array(
                s.row(h)
                    .iter()
                    .map(|&x| {
                        if x == f64::NEG_INFINITY {
                            Value::Null
                        } else {
                            json!(x)
                        }
                    })
                    .collect(),
            )
        })
        .collect();
    Value::Array(rows)
}

/// A weight matrix as JSON numbers.
pub fn weights_json(w: &Matrix<f64>) -> Value {
    let rows: Vec<Value> = (0..w.rows())
        .map(|h| Value::Array(w.row(h).iter().map(|&x| json!(x)).collect()))
        .collect();
    Value::Array(rows)
}

/// Reads a JSON `(n+1) × (n+1)` array of numbers back into a matrix.
pub fn matrix_of(v: &Value) -> Matrix<f64> {
    let rows = v.as_array().expect("a matrix is an array of rows");
    let n1 = rows.len();
    let data: Vec<f64> = rows
        .iter()
        .flat_map(|r| r.as_array().expect("a row is an array").iter())
        .map(|x| x.as_f64().expect("an entry is a number"))
        .collect();
    Matrix::from_row_major(n1, n1, data)
}

/// `|a - b| ≤ tol` entrywise, with a message naming the entry.
pub fn assert_close(a: &Matrix<f64>, b: &Matrix<f64>, tol: f64, what: &str) {
    assert_eq!((a.rows(), a.cols()), (b.rows(), b.cols()), "{what}: shape");
    for i in 0..a.rows() {
        for j in 0..a.cols() {
            let (x, y) = (a[(i, j)], b[(i, j)]);
            assert!(
                (x - y).abs() <= tol,
                "{what}: entry ({i}, {j}) is {x}, expected {y}"
            );
        }
    }
}
