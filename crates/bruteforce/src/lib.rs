//! # spantree-bruteforce
//!
//! The test oracle of spantree: every tree quantity computed by its
//! definition, by enumerating the trees of a graph. `Z = Σ_d Π_{e∈d} w_e`,
//! `μ_e = Σ_{d∋e} w(d) / Z`, `∂Z/∂w_e = Σ_{d∋e} Π_{f∈d, f≠e} w_f`: no
//! Laplacian, no determinant, nothing shared with the code under test.
//! Generic over [`spantree_core::Scalar`], so it runs in exact rationals too.
//! Practical up to `n = 7` words (`8^7` head vectors, pruned by forbidden
//! arcs and cycles).
//!
//! Inputs are weight matrices in the `(n+1) × (n+1)` layout of
//! `spantree-core`: entry `(h, m)` is the arc `h → m`, row `0` is the root,
//! column `0` and the diagonal do not exist and must be `0`.
//!
//! [`Distribution`] lists every labeled tree with its probability, for
//! expectations, covariances and their gradients by definition; [`cofactor`]
//! gives determinants and adjugates by their definitions. Besides the
//! oracle: [`random`], the one seeded generator (SplitMix64) and the graph
//! generators every test of the workspace draws from.
//!
//! ```
//! use spantree_bruteforce::{count_all_trees, marginals, partition};
//! use spantree_core::{Matrix, Rooting};
//!
//! // Cayley: (n+1)^(n-1) multi-root and n^(n-1) single-root trees.
//! assert_eq!(count_all_trees(3, Rooting::Multi), 16);
//! assert_eq!(count_all_trees(3, Rooting::Single), 9);
//!
//! // Root weights 1, 2; arcs 1 → 2 of weight 3, 2 → 1 of weight 4.
//! let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
//! assert_eq!(partition(&w, Rooting::Multi), 13.0);
//! let mu = marginals(&w, Rooting::Multi).unwrap();
//! assert_eq!(mu[(2, 1)], 8.0 / 13.0);
//! ```

pub mod bits;
pub mod cofactor;
mod distribution;
mod enumerate;
mod labeled;
pub mod random;

pub use distribution::{Distribution, LabeledTree};
pub use enumerate::{
    count_all_trees, count_trees, for_each_tree, grad_partition, log_partition_from_scores,
    marginals, marginals_from_scores, partition, trees, Tree,
};
pub use labeled::LabeledWeights;

#[cfg(test)]
mod tests {
    use super::*;
    use spantree_core::{Matrix, Rooting};

    fn w3() -> Matrix<f64> {
        // Root weights 1, 2; arcs 1 → 2 of weight 3, 2 → 1 of weight 4.
        Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0])
    }

    #[test]
    fn hand_counts() {
        // n = 2 multi-root: {0→1, 0→2}, {0→1, 1→2}, {0→2, 2→1}; single-root: the last two.
        assert_eq!(count_all_trees(1, Rooting::Multi), 1);
        assert_eq!(count_all_trees(1, Rooting::Single), 1);
        assert_eq!(count_all_trees(2, Rooting::Multi), 3);
        assert_eq!(count_all_trees(2, Rooting::Single), 2);
        assert_eq!(count_all_trees(3, Rooting::Multi), 16);
        assert_eq!(count_all_trees(3, Rooting::Single), 9);
    }

    #[test]
    fn cayley_counts_up_to_seven_words() {
        for n in 1..=7u32 {
            let multi = u64::from(n + 1).pow(n - 1);
            let single = u64::from(n).pow(n - 1);
            assert_eq!(
                count_all_trees(n as usize, Rooting::Multi),
                multi,
                "n = {n}"
            );
            assert_eq!(
                count_all_trees(n as usize, Rooting::Single),
                single,
                "n = {n}"
            );
            let unit = random::unit_weights(n as usize);
            assert_eq!(partition(&unit, Rooting::Multi), multi as f64);
            assert_eq!(partition(&unit, Rooting::Single), single as f64);
        }
    }

    #[test]
    fn hand_computed_partition_and_marginals() {
        let w = w3();
        assert_eq!(partition(&w, Rooting::Multi), 13.0);
        assert_eq!(partition(&w, Rooting::Single), 11.0);
        let mu = marginals(&w, Rooting::Multi).unwrap();
        // 0→1 lies in {0→1, 0→2} (2) and {0→1, 1→2} (3).
        assert_eq!(mu[(0, 1)], 5.0 / 13.0);
        assert_eq!(mu[(0, 2)], 10.0 / 13.0);
        assert_eq!(mu[(1, 2)], 3.0 / 13.0);
        assert_eq!(mu[(2, 1)], 8.0 / 13.0);
        assert_eq!(mu[(1, 1)], 0.0);
        let mu = marginals(&w, Rooting::Single).unwrap();
        assert_eq!(mu[(0, 1)], 3.0 / 11.0);
        assert_eq!(mu[(2, 1)], 8.0 / 11.0);
    }

    #[test]
    fn hand_computed_gradient() {
        let w = w3();
        // Z_multi = ρ1 ρ2 + ρ1 A12 + ρ2 A21.
        let g = grad_partition(&w, Rooting::Multi);
        assert_eq!(g[(0, 1)], 2.0 + 3.0); // ρ2 + A12
        assert_eq!(g[(0, 2)], 1.0 + 4.0); // ρ1 + A21
        assert_eq!(g[(1, 2)], 1.0);
        assert_eq!(g[(2, 1)], 2.0);
        // Z_single = ρ1 A12 + ρ2 A21.
        let g = grad_partition(&w, Rooting::Single);
        assert_eq!(g[(0, 1)], 3.0);
        assert_eq!(g[(0, 2)], 4.0);
        assert_eq!(g[(1, 2)], 1.0);
        assert_eq!(g[(2, 1)], 2.0);
        // Defined at zero weights too: forbid 1 → 2, its derivative stays ρ1.
        let mut z = w.clone();
        z[(1, 2)] = 0.0;
        assert_eq!(grad_partition(&z, Rooting::Single)[(1, 2)], 1.0);
    }

    #[test]
    fn forbidden_arcs_are_skipped() {
        // Word 2 has no incoming arc: no tree.
        let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
        assert_eq!(count_trees(&w, Rooting::Multi), 0);
        assert_eq!(partition(&w, Rooting::Multi), 0.0);
        assert!(marginals(&w, Rooting::Multi).is_none());
        // Two root arcs and no word-to-word arc: one multi-root tree, no single-root one.
        let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(count_trees(&w, Rooting::Multi), 1);
        assert_eq!(count_trees(&w, Rooting::Single), 0);
    }

    #[test]
    fn trees_are_trees() {
        let unit = random::unit_weights(4);
        for rooting in Rooting::ALL {
            let all: Vec<Tree> = trees(&unit, rooting).collect();
            let mut distinct = all.clone();
            distinct.dedup();
            assert_eq!(distinct.len(), all.len());
            for t in &all {
                // Panics on a cycle.
                let again = Tree::from_heads(t.heads().to_vec());
                assert_eq!(&again, t);
                if rooting == Rooting::Single {
                    assert_eq!(t.root_children(), 1);
                }
            }
        }
    }

    #[test]
    fn score_oracle_agrees_with_weight_oracle() {
        let mut rng = random::SplitMix64::new(11);
        for n in 1..=5 {
            let s = random::normal_scores(&mut rng, n, 1.0, 0.2);
            let w = random::weights_of(&s);
            for rooting in Rooting::ALL {
                let z = partition(&w, rooting);
                let lz = log_partition_from_scores(&s, rooting);
                // rel 1e-13: sums of ≤ 6^4 positive products of ≤ 5 factors.
                assert!((lz - z.ln()).abs() < 1e-13 || z == 0.0 && lz == f64::NEG_INFINITY);
                if let (Some(a), Some(b)) =
                    (marginals(&w, rooting), marginals_from_scores(&s, rooting))
                {
                    for (x, y) in a.as_slice().iter().zip(b.as_slice()) {
                        assert!((x - y).abs() < 1e-13);
                    }
                }
            }
        }
    }

    #[test]
    fn labeled_partition_is_collapsed_partition() {
        // Σ over label assignments factorises: Z_labeled = Z(collapsed weights).
        // Powers of two keep every f64 sum exact.
        let mut rng = random::SplitMix64::new(5);
        for n in 1..=4 {
            let labels: Vec<Matrix<f64>> = (0..3)
                .map(|_| {
                    Matrix::from_fn(n + 1, n + 1, |h, m| {
                        if random::exists(h, m) && !rng.chance(0.3) {
                            f64::from(1u32 << rng.below(4))
                        } else {
                            0.0
                        }
                    })
                })
                .collect();
            let lw = LabeledWeights::new(labels);
            for rooting in Rooting::ALL {
                let z = partition(&lw.collapsed(), rooting);
                assert_eq!(lw.partition(rooting), z);
                if let Some(mu) = lw.label_marginals(rooting) {
                    let arc = marginals(&lw.collapsed(), rooting).unwrap();
                    for h in 0..=n {
                        for m in 0..=n {
                            let sum: f64 = mu.iter().map(|x| x[(h, m)]).sum();
                            assert!((sum - arc[(h, m)]).abs() < 1e-15);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn seven_words_are_practical() {
        // 8^6 = 262144 multi-root trees; this is the oracle's largest size.
        let unit = random::unit_weights(7);
        let mu = marginals(&unit, Rooting::Multi).unwrap();
        // By symmetry every word's root arc carries the same share; shares sum to 1 per word.
        let column: f64 = (0..=7).map(|h| mu[(h, 1)]).sum();
        assert!((column - 1.0).abs() < 1e-12);
    }
}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
