//! The Rust side of the Python binding's overhead bench
//! (`crates/python/bench/bench.py`): the entropy and its gradient of every
//! graph of a batch, on one thread, with the backend chosen by name as the
//! binding does.
//!
//! ```sh
//! cargo run --release -p spantree-api --example entropy_batch -- BATCH.jsonl REPEATS [BACKEND] [ROOTING]
//! ```
//!
//! `BATCH.jsonl` holds one `{"scores": [[…]]}` per line (`null` = `-inf`).
//! Prints the best of `REPEATS` runs in seconds, wall and thread CPU time,
//! one graph at a time and then phased as the binding computes (every
//! model, then each quantity over the batch), and a checksum.

use std::time::Instant;

use spantree_api::{parse_rooting, Backend, BackendKind, WithBackend};
use spantree_core::{Graph, Model, Rooting, Scalar};

struct Work<'a> {
    graphs: &'a [Vec<Vec<f64>>],
    rooting: Rooting,
    /// As the binding does: every model first, then each quantity over the
    /// batch; otherwise one graph at a time.
    phased: bool,
}

impl WithBackend for Work<'_> {
    type Output = Result<f64, String>;

    fn run<B: Backend>(self, backend: &B) -> Self::Output {
        let info = B::information().ok_or("this backend has no entropy")?;
        let mut checksum = 0.0;
        if self.phased {
            let models = self
                .graphs
                .iter()
                .map(|rows| {
                    let graph = Graph::from_scores(rows).map_err(|e| e.to_string())?;
                    Model::new(backend.clone(), &graph, self.rooting).map_err(|e| e.to_string())
                })
                .collect::<Result<Vec<_>, String>>()?;
            for model in &models {
                checksum += (info.entropy)(model).map_err(|e| e.to_string())?.to_f64();
            }
            for model in &models {
                let g = (info.grad_entropy)(model).map_err(|e| e.to_string())?;
                checksum += g[0].as_slice()[1].to_f64();
            }
            return Ok(checksum);
        }
        for rows in self.graphs {
            let graph = Graph::from_scores(rows).map_err(|e| e.to_string())?;
            let model =
                Model::new(backend.clone(), &graph, self.rooting).map_err(|e| e.to_string())?;
            let h = (info.entropy)(&model).map_err(|e| e.to_string())?;
            let g = (info.grad_entropy)(&model).map_err(|e| e.to_string())?;
            checksum += h.to_f64() + g[0].as_slice()[1].to_f64();
        }
        Ok(checksum)
    }
}

/// The CPU time of this thread so far, in seconds (Linux: the first field of
/// `/proc/thread-self/schedstat`, nanoseconds on the CPU): unlike wall time,
/// it does not count the time other processes take the core away.
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns * 1e-9)
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: entropy_batch BATCH.jsonl REPEATS [BACKEND] [ROOTING]";
    let path = args.get(1).ok_or(usage)?;
    let repeats: usize = args.get(2).ok_or(usage)?.parse().map_err(|_| usage)?;
    let backend: BackendKind = args
        .get(3)
        .map_or("accurate", String::as_str)
        .parse()
        .map_err(|e| format!("{e}"))?;
    let rooting =
        parse_rooting(args.get(4).map_or("single", String::as_str)).map_err(|e| format!("{e}"))?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let graphs: Vec<Vec<Vec<f64>>> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).map_err(|e| e.to_string())?;
            let rows = v["scores"].as_array().ok_or("no scores")?;
            Ok(rows
                .iter()
                .map(|r| {
                    r.as_array()
                        .map(|r| {
                            r.iter()
                                .map(|x| x.as_f64().unwrap_or(f64::NEG_INFINITY))
                                .collect()
                        })
                        .unwrap_or_default()
                })
                .collect())
        })
        .collect::<Result<_, String>>()?;
    // Interleaved repeats of both orders, so that load on the machine falls
    // on both alike.
    let mut best = [f64::INFINITY; 4];
    let mut checksum = 0.0;
    for _ in 0..repeats {
        for phased in [false, true] {
            let start = Instant::now();
            let cpu = thread_cpu_seconds();
            checksum = backend.dispatch(Work {
                graphs: &graphs,
                rooting,
                phased,
            })?;
            let k = 2 * usize::from(phased);
            best[k] = best[k].min(start.elapsed().as_secs_f64());
            best[k + 1] = best[k + 1].min(thread_cpu_seconds() - cpu);
        }
    }
    let [wall, cpu, wall_phased, cpu_phased] = best;
    println!("{wall} {cpu} {wall_phased} {cpu_phased} {checksum}");
    Ok(())
}
