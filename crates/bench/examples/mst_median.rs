//! Times one `best_tree` call on each graph of the `decode` bench's
//! `best_tree/` groups the way `crates/bench/peers/mst_peer.py` times its
//! peers (call by call, for 1 s, 2 s from `n = 200`): the median wall time,
//! and the mean CPU time of the thread per call (Linux: from
//! `/proc/thread-self/stat`, in clock ticks of 10 ms over the whole loop).
//! On a shared, loaded machine the CPU time is the number to compare:
//! criterion's batched wall-time means and, for calls longer than a
//! scheduler slice (`n = 1000`), even the median include the time the
//! process waited. Also fits the slope of `ln t` on `ln n` over `n ≥ 100`.
//!
//! ```sh
//! cargo run --release -p spantree-bench --example mst_median
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use spantree_bench::normal_graph;
use spantree_core::Rooting;

/// The sizes of the `best_tree/` bench groups.
const SIZES: [usize; 5] = [10, 36, 100, 200, 1000];

/// The CPU time (user + system) of this thread so far, in seconds, if
/// `/proc` tells it.
fn thread_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th of the line, in ticks of (on Linux) 1/100 s.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// The median of single-call wall times of `f` over `budget` (at least 5
/// calls), and the mean CPU time per call.
fn median(budget: Duration, mut f: impl FnMut()) -> (Duration, Option<f64>) {
    f(); // warm-up: the workspace, page faults
    let mut times = Vec::new();
    let cpu0 = thread_cpu();
    let start = Instant::now();
    while times.len() < 5 || start.elapsed() < budget {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    let cpu = cpu0
        .zip(thread_cpu())
        .map(|(a, b)| (b - a) / times.len() as f64);
    times.sort();
    (times[times.len() / 2], cpu)
}

/// The least-squares slope of `ln t` on `ln n`.
fn slope(points: &[(usize, f64)]) -> f64 {
    let xs: Vec<f64> = points.iter().map(|&(n, _)| (n as f64).ln()).collect();
    let ys: Vec<f64> = points.iter().map(|&(_, t)| t.ln()).collect();
    let k = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / k, ys.iter().sum::<f64>() / k);
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    sxy / sxx
}

fn main() -> Result<(), spantree_core::Error> {
    for rooting in Rooting::ALL {
        let (mut wall, mut cpu) = (Vec::new(), Vec::new());
        for n in SIZES {
            let graph = normal_graph(n, 1.0, n as u64);
            let budget = Duration::from_secs(if n >= 200 { 2 } else { 1 });
            let (t, c) = median(budget, || {
                black_box(
                    graph
                        .best_tree(rooting)
                        .expect("a complete graph has trees"),
                );
            });
            let us = t.as_secs_f64() * 1e6;
            let c = c.map(|c| c * 1e6);
            let shown = c.map_or("?".to_string(), |c| format!("{c:.1}"));
            println!(
                "{} n = {n:4}: median {us:10.1} us, cpu {shown:>10} us per tree",
                rooting.name()
            );
            if n >= 100 {
                wall.push((n, us));
                if let Some(c) = c {
                    cpu.push((n, c));
                }
            }
        }
        let cpu_slope = if cpu.len() == 3 {
            format!("{:.2}", slope(&cpu))
        } else {
            "?".to_string()
        };
        println!(
            "{} slope over n >= 100: median {:.2}, cpu {cpu_slope}",
            rooting.name(),
            slope(&wall)
        );
    }
    Ok(())
}
