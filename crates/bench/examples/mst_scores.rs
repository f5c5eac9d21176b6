//! Prints the best tree's score on every graph of the `decode` bench's
//! `best_tree/` groups, one line `rooting n score` each (`{:.9}`), so that
//! `crates/bench/peers/mst_peer.py --spantree-scores FILE` can check that a
//! peer decodes the same matrices to the same maximum.
//!
//! ```sh
//! cargo run --release -p spantree-bench --example mst_scores > /tmp/mst_scores.txt
//! ```

use spantree_bench::normal_graph;
use spantree_core::Rooting;

/// The sizes of the `best_tree/` bench groups.
const SIZES: [usize; 5] = [10, 36, 100, 200, 1000];

fn main() -> Result<(), spantree_core::Error> {
    for rooting in Rooting::ALL {
        for n in SIZES {
            // The bench's graph: `normal_graph(n, 1.0, seed = n)`.
            let graph = normal_graph(n, 1.0, n as u64);
            let score = graph.best_tree(rooting)?.score(&graph)?;
            println!("{} {n} {score:.9}", rooting.name());
        }
    }
    Ok(())
}
