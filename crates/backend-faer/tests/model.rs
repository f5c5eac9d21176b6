//! `F64` and `ShiftedF64` through `spantree_core::Model`, on graphs whose `Z`,
//! marginals and gradients are counted by hand or given by Cayley's formula.

use spantree_core::{Engine, Error, Graph, Model, Rooting};
use spantree_faer::{ShiftedF64, CROSSOVER, F64};

/// Root weights ρ = (1, 2), arcs w(1→2) = 3, w(2→1) = 4. Trees:
/// {0→1, 0→2} = 2, {0→1, 1→2} = 3, {0→2, 2→1} = 8.
/// Multi-root Z = 13; single-root Z = 3 + 8 = 11.
fn two_words() -> Graph {
    Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]]).unwrap()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

fn check_two_words<B: Engine<Scalar = f64>>(backend: B) {
    let g = two_words();
    // rel 1e-13: a 2×2 LU with small integer entries, then a logarithm.
    let tol = 1e-13;

    let multi = Model::new(backend.clone(), &g, Rooting::Multi).unwrap();
    assert!(close(multi.log_partition().unwrap(), 13f64.ln(), tol));
    assert!(close(multi.partition().unwrap(), 13.0, tol));
    let mu = multi.marginals().unwrap();
    // μ(0→1) = (2+3)/13, μ(0→2) = (2+8)/13, μ(1→2) = 3/13, μ(2→1) = 8/13.
    for (h, m, p) in [(0, 1, 5.0), (0, 2, 10.0), (1, 2, 3.0), (2, 1, 8.0)] {
        assert!(
            close(mu[(h, m)], p / 13.0, tol),
            "{}: μ({h}→{m})",
            backend.name()
        );
    }
    // Z = ρ1ρ2 + ρ1 w12 + ρ2 w21: ∂Z/∂ρ1 = ρ2 + w12 = 5, ∂Z/∂ρ2 = ρ1 + w21 = 5,
    // ∂Z/∂w12 = ρ1 = 1, ∂Z/∂w21 = ρ2 = 2.
    let grad = multi.grad_partition().unwrap();
    for (h, m, d) in [(0, 1, 5.0), (0, 2, 5.0), (1, 2, 1.0), (2, 1, 2.0)] {
        assert!(
            close(grad[(h, m)], d, tol),
            "{}: ∂Z/∂w({h}→{m})",
            backend.name()
        );
    }

    let single = Model::new(backend.clone(), &g, Rooting::Single).unwrap();
    assert!(close(single.log_partition().unwrap(), 11f64.ln(), tol));
    let mu = single.marginals().unwrap();
    for (h, m, p) in [(0, 1, 3.0), (0, 2, 8.0), (1, 2, 3.0), (2, 1, 8.0)] {
        assert!(
            close(mu[(h, m)], p / 11.0, tol),
            "{}: μ({h}→{m})",
            backend.name()
        );
    }
    // Z = ρ1 w12 + ρ2 w21: ∂/∂ρ1 = 3, ∂/∂ρ2 = 4, ∂/∂w12 = 1, ∂/∂w21 = 2.
    let grad = single.grad_partition().unwrap();
    for (h, m, d) in [(0, 1, 3.0), (0, 2, 4.0), (1, 2, 1.0), (2, 1, 2.0)] {
        assert!(
            close(grad[(h, m)], d, tol),
            "{}: ∂Z/∂w({h}→{m})",
            backend.name()
        );
    }
}

#[test]
fn two_words_by_hand_f64() {
    check_two_words(F64);
}

#[test]
fn two_words_by_hand_log() {
    check_two_words(ShiftedF64);
}

/// Word 2 has no incoming arc: Z = 0, the Laplacian [[5, 0], [−4, 0]] has a
/// zero column, yet ∇Z exists: Z = ρ1ρ2 + ρ1 w12 + ρ2 w21 at ρ = (1, 0),
/// w12 = 0, w21 = 4 gives ∂Z/∂ρ2 = ρ1 + w21 = 5, ∂Z/∂w12 = ρ1 = 1, and 0 for
/// the arcs that exist.
fn check_gradient_without_trees<B: Engine<Scalar = f64>>(backend: B) {
    let g = Graph::from_weights(&[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 4.0, 0.0]]).unwrap();
    let model = Model::new(backend, &g, Rooting::Multi).unwrap();
    assert_eq!(model.log_partition().unwrap(), f64::NEG_INFINITY);
    assert!(matches!(model.marginals(), Err(Error::NoSpanningTree(_))));
    let grad = model.grad_partition().unwrap();
    // abs 1e-14: the SVD of a 2×2 matrix with entries ≤ 5 (the adjugate's
    // entries are ≤ 5 as well).
    for (h, m, d) in [(0, 1, 0.0), (0, 2, 5.0), (1, 2, 1.0), (2, 1, 0.0)] {
        assert!(
            (grad[(h, m)] - d).abs() < 1e-14,
            "∂Z/∂w({h}→{m}) = {}",
            grad[(h, m)]
        );
    }
}

#[test]
fn gradient_without_trees_f64() {
    check_gradient_without_trees(F64);
}

#[test]
fn gradient_without_trees_log() {
    check_gradient_without_trees(ShiftedF64);
}

fn unit_graph(n: usize) -> Graph {
    let w: Vec<Vec<f64>> = (0..=n)
        .map(|h| {
            (0..=n)
                .map(|m| if m == 0 || h == m { 0.0 } else { 1.0 })
                .collect()
        })
        .collect();
    Graph::from_weights(&w).unwrap()
}

/// Cayley: unit weights give (n+1)^(n−1) multi-root and n^(n−1) single-root
/// trees. n = 60 runs on the faer engine, n = 5 on the plain one.
fn check_cayley<B: Engine<Scalar = f64>>(backend: B) {
    for n in [1, 5, CROSSOVER + 12] {
        let nf = n as f64;
        let g = unit_graph(n);
        // rel 1e-12 on ln Z: the unit Laplacian has κ ≈ n + 1, n ≤ 60 pivots.
        let multi = Model::new(backend.clone(), &g, Rooting::Multi).unwrap();
        let expected = (nf - 1.0) * (nf + 1.0).ln();
        assert!(
            close(multi.log_partition().unwrap(), expected, 1e-12),
            "multi n={n}"
        );
        let single = Model::new(backend.clone(), &g, Rooting::Single).unwrap();
        let expected = (nf - 1.0) * nf.ln();
        assert!(
            close(single.log_partition().unwrap(), expected, 1e-12),
            "single n={n}"
        );
        // Single-root: by symmetry every word takes the root with
        // probability 1/n. Multi-root: L = (n+1)I − J, L⁻¹ = (I + J)/(n+1), so
        // μ(0→m) = L⁻¹[m][m] = 2/(n+1); every column sums to 1.
        let mu = single.marginals().unwrap();
        for m in 1..=n {
            assert!(close(mu[(0, m)], 1.0 / nf, 1e-12), "single root arc n={n}");
        }
        let mu = multi.marginals().unwrap();
        for m in 1..=n {
            assert!(
                close(mu[(0, m)], 2.0 / (nf + 1.0), 1e-12),
                "multi root arc n={n}"
            );
            let col: f64 = (0..=n).map(|h| mu[(h, m)]).sum();
            assert!(close(col, 1.0, 1e-12), "column {m} n={n}");
        }
    }
}

#[test]
fn cayley_counts_f64() {
    check_cayley(F64);
}

#[test]
fn cayley_counts_log() {
    check_cayley(ShiftedF64);
}

/// Every arc scored 800: `exp(800)` overflows, so `F64` refuses the graph,
/// while `ShiftedF64` gives `ln Z = 800 (n) + ln (n+1)^(n−1)` (each tree has n
/// arcs), n = 3: `2400 + 2 ln 4`.
#[test]
fn huge_scores_need_the_log_backend() {
    let ninf = f64::NEG_INFINITY;
    let s = 800.0;
    let g = Graph::from_scores(&[
        [ninf, s, s, s],
        [ninf, ninf, s, s],
        [ninf, s, ninf, s],
        [ninf, s, s, ninf],
    ])
    .unwrap();
    assert!(matches!(
        Model::new(F64, &g, Rooting::Multi),
        Err(Error::Overflow { .. })
    ));
    let model = Model::new(ShiftedF64, &g, Rooting::Multi).unwrap();
    // rel 1e-14: the shifted Laplacian is the unit one (exact), the rest is
    // one logarithm of 16 added to 2400.
    let expected = 2400.0 + 2.0 * 4f64.ln();
    assert!(close(model.log_partition().unwrap(), expected, 1e-14));
    // Marginals equal the unit graph's: each word's root arc 1/2 here
    // (Cayley: 8 of 16 trees attach a given word to the root).
    let mu = model.marginals().unwrap();
    let unit = Model::new(F64, &unit_graph(3), Rooting::Multi)
        .unwrap()
        .marginals()
        .unwrap();
    let diff = mu
        .as_slice()
        .iter()
        .zip(unit.as_slice())
        .fold(0.0_f64, |d, (a, b)| d.max((a - b).abs()));
    assert!(diff < 1e-14, "marginals differ by {diff:e}");
    assert!(close(mu[(0, 1)], 0.5, 1e-14));
}
