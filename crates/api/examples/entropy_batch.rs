//! The Rust side of the Python binding's overhead bench
//! (`crates/python/bench/bench.py`): the entropy and its gradient of every
//! graph of a batch, on one thread, with the backend chosen by name as the
//! binding does.
//!
//! ```sh
//! cargo run --release -p spantree-api --example entropy_batch -- BATCH.jsonl [BACKEND] [ROOTING]
//! ```
//!
//! `BATCH.jsonl` holds one `{"scores": [[…]]}` per line (`null` = `-inf`).
//! Then each line read from standard input names a route and runs it once:
//! `graph` (one graph at a time: build, factorise, entropy, gradient, next
//! graph: the fastest Rust route), `kept` (build, factorise and the entropy
//! graph by graph, keeping the models, then the gradients: the work of two
//! questions to an object that keeps its factors) or `phased` (every model
//! first, then each quantity over the batch). For each it prints `wall checksum`, the wall
//! seconds of the run, so that a bench can interleave these runs with the
//! binding's under the same load (and read this process's CPU clock around
//! each run: the process computes on its one thread).

use std::time::Instant;

use spantree_api::{parse_rooting, Backend, BackendKind, WithBackend};
use spantree_core::{Graph, Model, Rooting, Scalar};

struct Work<'a> {
    graphs: &'a [Vec<Vec<f64>>],
    rooting: Rooting,
    route: Route,
}

/// The order of the work.
#[derive(Clone, Copy)]
enum Route {
    /// One graph at a time: build, factorise, entropy, gradient, drop.
    Graph,
    /// Build, factorise and the entropy graph by graph, keeping the models;
    /// then the gradients: two questions with factors kept in between.
    Kept,
    /// Every model first, then each quantity over the batch.
    Phased,
}

impl WithBackend for Work<'_> {
    type Output = Result<f64, String>;

    fn run<B: Backend>(self, backend: &B) -> Self::Output {
        let info = B::information().ok_or("this backend has no entropy")?;
        let mut checksum = 0.0;
        let model = |rows: &Vec<Vec<f64>>| {
            let graph = Graph::from_scores(rows).map_err(|e| e.to_string())?;
            Model::new(backend.clone(), &graph, self.rooting).map_err(|e| e.to_string())
        };
        if let Route::Phased | Route::Kept = self.route {
            let mut models = Vec::with_capacity(self.graphs.len());
            for rows in self.graphs {
                models.push(model(rows)?);
                if let Route::Kept = self.route {
                    let h = (info.entropy)(&models[models.len() - 1]);
                    checksum += h.map_err(|e| e.to_string())?.to_f64();
                }
            }
            if let Route::Phased = self.route {
                for model in &models {
                    checksum += (info.entropy)(model).map_err(|e| e.to_string())?.to_f64();
                }
            }
            for model in &models {
                let g = (info.grad_entropy)(model).map_err(|e| e.to_string())?;
                checksum += g[0].as_slice()[1].to_f64();
            }
            return Ok(checksum);
        }
        for rows in self.graphs {
            let model = model(rows)?;
            let h = (info.entropy)(&model).map_err(|e| e.to_string())?;
            let g = (info.grad_entropy)(&model).map_err(|e| e.to_string())?;
            checksum += h.to_f64() + g[0].as_slice()[1].to_f64();
        }
        Ok(checksum)
    }
}

fn main() -> Result<(), String> {
    use std::io::{BufRead, Write};
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: entropy_batch BATCH.jsonl [BACKEND] [ROOTING] < ROUTES";
    let path = args.get(1).ok_or(usage)?;
    let backend: BackendKind = args
        .get(2)
        .map_or("accurate", String::as_str)
        .parse()
        .map_err(|e| format!("{e}"))?;
    let rooting =
        parse_rooting(args.get(3).map_or("single", String::as_str)).map_err(|e| format!("{e}"))?;
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
    let mut stdout = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let route = match line.trim() {
            "graph" => Route::Graph,
            "kept" => Route::Kept,
            "phased" => Route::Phased,
            other => return Err(format!("unknown route {other:?}: graph, kept or phased")),
        };
        let start = Instant::now();
        let checksum = backend.dispatch(Work {
            graphs: &graphs,
            rooting,
            route,
        })?;
        let wall = start.elapsed().as_secs_f64();
        writeln!(stdout, "{wall} {checksum}").map_err(|e| e.to_string())?;
        stdout.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}
