//! Throughput of `spantree infer`, and where its time goes.
//!
//! ```sh
//! # 10,000 random sentences of 36 words (seeded), about 300 MB:
//! cargo run --release -p spantree-cli --example throughput -- gen 10000 36 > /tmp/s36.jsonl
//! # the command itself, timed from outside:
//! time target/release/spantree infer --backend log --threads 1 /tmp/s36.jsonl > /dev/null
//! # one thread, phase by phase (read JSON + validate, compute + write):
//! cargo run --release -p spantree-cli --example throughput -- phases /tmp/s36.jsonl
//! ```

use std::io::{self, BufWriter, Write};
use std::time::Instant;

use serde_json::{json, Value};
use spantree_api::input::{build_graph, RawLine};
use spantree_api::record::process_line;
use spantree_api::{Backend, BackendKind, Outcome, Quantity, Request};
use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_core::Rooting;

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["gen", count, n] => generate(parse(count)?, parse(n)?),
        ["phases", path] => {
            let lines: Vec<Vec<u8>> = std::fs::read(path)?
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            phases(spantree_faer::F64, BackendKind::F64, &lines);
            phases(spantree_faer::ShiftedF64, BackendKind::Log, &lines);
            Ok(())
        }
        _ => {
            eprintln!("usage: throughput gen COUNT N | throughput phases FILE");
            std::process::exit(2);
        }
    }
}

fn parse(s: &str) -> io::Result<usize> {
    s.parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{s}: {e}")))
}

/// Writes `count` graphs of `n` words, scores `N(0, 2²)`, seed 1.
fn generate(count: usize, n: usize) -> io::Result<()> {
    let mut rng = SplitMix64::new(1);
    let mut out = BufWriter::new(io::stdout().lock());
    for i in 0..count {
        let s = normal_scores(&mut rng, n, 2.0, 0.0);
        let rows: Vec<Value> = (0..=n)
            .map(|h| {
                Value::Array(
                    s.row(h)
                        .iter()
                        .map(|&x| if x.is_finite() { json!(x) } else { Value::Null })
                        .collect(),
                )
            })
            .collect();
        writeln!(out, "{}", json!({"id": i, "scores": rows}))?;
    }
    out.flush()
}

/// One thread: time of parsing and validating alone, then of the whole
/// per-line work (parse, validate, factorise, marginals, write JSON).
fn phases<B: Backend>(backend: B, kind: BackendKind, lines: &[Vec<u8>]) {
    let name = kind.name();
    let request = Request::unchecked(
        kind,
        Rooting::Single,
        &[Quantity::LogZ, Quantity::Marginals],
        false,
    );
    let start = Instant::now();
    let mut valid = 0;
    for line in lines {
        if let Ok(raw) = RawLine::parse(line) {
            valid += usize::from(build_graph::<B>(&raw).is_ok());
        }
    }
    let parse = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let mut out = Vec::new();
    let mut bytes = 0;
    let mut done = 0;
    for (i, line) in lines.iter().enumerate() {
        done +=
            usize::from(process_line(&backend, &request, i + 1, line, &mut out) == Outcome::Done);
        bytes += out.len();
    }
    let total = start.elapsed().as_secs_f64();
    println!(
        "{name}: {} lines ({valid} valid, {done} done), {:.0} graphs/s on one thread; \
         parse+validate {parse:.2} s of {total:.2} s ({:.0}%); {:.0} MB out",
        lines.len(),
        lines.len() as f64 / total,
        100.0 * parse / total,
        bytes as f64 / 1e6
    );
}
