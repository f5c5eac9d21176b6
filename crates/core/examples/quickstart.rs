//! A first tour of the library: `ln Z`, marginals, entropy and its
//! gradient, a labeled graph, another library's layout and a batch.
//!
//! ```sh
//! cargo run -p spantree-core --example quickstart
//! ```

use spantree_core::{Error, Graph, Layout, Model, Rooting};
use spantree_faer::Accurate;

fn main() -> Result<(), Error> {
    // Scores θ = ln w of the arcs h → m of a 3-word sentence: row 0 is the
    // root, column 0 and the diagonal are not arcs (whatever they hold is
    // ignored: here zeros, as in a zero-initialised tensor).
    let scores = [
        [0.0, 1.0, -2.0, 0.5],
        [0.0, 0.0, 3.0, 0.0],
        [0.0, 0.2, 0.0, 1.5],
        [0.0, -1.0, 0.7, 0.0],
    ];
    let graph = Graph::from_scores(&scores)?;

    // `Accurate` is the default engine: accurate whatever the scales.
    let model = Model::new(Accurate, &graph, Rooting::Single)?; // factorises once
    println!("ln Z = {:.6}", model.log_partition()?);

    let mu = model.marginals()?; // μ[h][m] = p(arc h → m in the tree)
    for m in 1..=graph.n() {
        let heads: Vec<String> = (0..=graph.n())
            .map(|h| format!("{:.3}", mu[(h, m)]))
            .collect();
        println!("heads of word {m}: [{}] (sum 1)", heads.join(", "));
    }

    // Shannon entropy (nats) and its gradient with respect to the scores.
    println!("H = {:.6} nats", model.entropy()?);
    let grad = model.grad_entropy()?; // one matrix per label: [ℓ][h][m]
    println!("∂H/∂θ(1 → 2) = {:.6}", grad[0][(1, 2)]);

    // A labeled graph: one score per label in every arc's cell,
    // rows[h][m][ℓ]; non-arc cells may be empty.
    let e: Vec<f64> = vec![];
    let labeled = Graph::from_labeled_scores(&[
        vec![e.clone(), vec![1.0, 0.0], vec![0.5, -1.0]],
        vec![e.clone(), e.clone(), vec![2.0, 1.0]],
        vec![e.clone(), vec![0.0, 0.3], e.clone()],
    ])?;
    let model = Model::new(Accurate, &labeled, Rooting::Single)?;
    // label_marginals() is [ℓ][h][m] (the command's output is [h][m][ℓ]).
    let per_label = model.label_marginals()?;
    println!(
        "p(1 → 2 with label 0) = {:.4}, with label 1 = {:.4}",
        per_label[0][(1, 2)],
        per_label[1][(1, 2)]
    );

    // torch-struct's n × n layout, root scores on the diagonal.
    let torch = [[1.0, 3.0, 0.0], [0.2, -2.0, 1.5], [-1.0, 0.7, 0.5]];
    let rows = Layout::TorchStruct.to_spantree(&torch, f64::NEG_INFINITY)?;
    let same = Model::new(Accurate, &Graph::from_scores(&rows)?, Rooting::Single)?;
    println!(
        "ln Z from torch-struct's layout = {:.6}",
        same.log_partition()?
    );

    // A batch: one model per sentence (the `spantree infer` command runs
    // JSON lines in parallel; a library user maps over sentences).
    let sentences: Vec<Vec<Vec<f64>>> = (1..=4)
        .map(|n| {
            (0..=n)
                .map(|h| {
                    (0..=n)
                        .map(|m| ((h * 7 + m * 3) % 5) as f64 * 0.5)
                        .collect()
                })
                .collect()
        })
        .collect();
    for (i, s) in sentences.iter().enumerate() {
        let model = Model::new(Accurate, &Graph::from_scores(s)?, Rooting::Multi)?;
        println!(
            "sentence {i}: n = {}, ln Z = {:.6}",
            model.n(),
            model.log_partition()?
        );
    }
    Ok(())
}
