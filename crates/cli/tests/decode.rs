//! `best_tree`, `mbr_tree`, `renyi:inf` and `--structure projective` through
//! the command, against brute-force enumeration of every tree.

mod common;

use common::{records, scores_json, spantree};
use serde_json::{json, Value};
use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_bruteforce::{for_each_tree, marginals_from_scores};
use spantree_core::{log_sum_exp, Matrix, Rooting};

/// Every tree of `scores` (`−∞` forbidden) for `rooting`, as `heads[m]`
/// (index 0 unused), with its score `Σ θ`; projective ones only if asked.
fn enumerate(scores: &Matrix<f64>, rooting: Rooting, projective: bool) -> Vec<(Vec<usize>, f64)> {
    let n = scores.rows() - 1;
    let mut all = Vec::new();
    for_each_tree(
        n,
        rooting,
        |h, m| scores[(h, m)] > f64::NEG_INFINITY,
        |t| {
            let heads = t.heads().to_vec();
            if !projective || is_projective(&heads) {
                let s = (1..=n).map(|m| scores[(heads[m], m)]).sum();
                all.push((heads, s));
            }
        },
    );
    all
}

/// No two arcs cross with the root before the first word.
fn is_projective(heads: &[usize]) -> bool {
    let arcs: Vec<(usize, usize)> = (1..heads.len())
        .map(|m| (heads[m].min(m), heads[m].max(m)))
        .collect();
    arcs.iter().all(|&(a, b)| {
        arcs.iter()
            .all(|&(c, d)| !((a < c && c < b && b < d) || (c < a && a < d && d < b)))
    })
}

/// The heads a record gives, as `heads[m]` with index 0 unused.
fn heads_of(tree: &Value) -> Vec<usize> {
    let mut heads = vec![0];
    heads.extend(
        tree["heads"]
            .as_array()
            .expect("heads")
            .iter()
            .map(|h| h.as_u64().expect("a head") as usize),
    );
    heads
}

fn run(args: &[&str], graphs: &[Matrix<f64>]) -> Vec<Value> {
    let input: String = graphs
        .iter()
        .enumerate()
        .map(|(i, s)| json!({"id": i, "scores": scores_json(s)}).to_string() + "\n")
        .collect();
    let out = spantree(args, &input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    records(&out)
}

/// Random graphs, `n = 1..=6`: integer scores in `[−2, 2]` (many ties) and
/// normal ones, some arcs forbidden.
fn graphs() -> Vec<Matrix<f64>> {
    let mut rng = SplitMix64::new(0xdec0de);
    let mut all = Vec::new();
    for n in 1..=6 {
        for k in 0..4 {
            let mut s = normal_scores(&mut rng, n, 1.5, if k % 2 == 0 { 0.0 } else { 0.2 });
            if k >= 2 {
                for x in s.as_mut_slice() {
                    if x.is_finite() {
                        *x = x.round().clamp(-2.0, 2.0);
                    }
                }
            }
            all.push(s);
        }
    }
    all
}

#[test]
fn best_tree_is_a_maximiser_of_the_brute_force_scores() {
    let graphs = graphs();
    for rooting in Rooting::ALL {
        let out = run(
            &[
                "infer",
                "--rooting",
                rooting.name(),
                "--quantities",
                "best_tree",
            ],
            &graphs,
        );
        for (s, record) in graphs.iter().zip(&out) {
            let trees = enumerate(s, rooting, false);
            let best = trees.iter().map(|t| t.1).fold(f64::NEG_INFINITY, f64::max);
            if trees.is_empty() {
                assert_eq!(record["error"]["kind"], "no_spanning_tree", "{record}");
                continue;
            }
            let tree = &record["best_tree"];
            let heads = heads_of(tree);
            // The returned heads are one of the trees, with the maximal score;
            // integer scores make the sums exact, normal ones agree to rounding.
            let found = trees
                .iter()
                .find(|t| t.0 == heads)
                .expect("a tree of the rooting");
            assert!(
                (found.1 - best).abs() <= 1e-12,
                "{record}: {} < {best}",
                found.1
            );
            assert!(
                (tree["score"].as_f64().unwrap() - best).abs() <= 1e-12,
                "{record}"
            );
        }
    }
}

#[test]
fn mbr_tree_maximises_the_expected_attachment() {
    let graphs = graphs();
    for rooting in Rooting::ALL {
        let out = run(
            &[
                "infer",
                "--rooting",
                rooting.name(),
                "--quantities",
                "mbr_tree,best_tree",
            ],
            &graphs,
        );
        for (s, record) in graphs.iter().zip(&out) {
            let Some(mu) = marginals_from_scores(s, rooting) else {
                continue;
            };
            let n = s.rows() - 1;
            let gain = |heads: &[usize]| (1..=n).map(|m| mu[(heads[m], m)]).sum::<f64>();
            let best = enumerate(s, rooting, false)
                .iter()
                .map(|t| gain(&t.0))
                .fold(f64::NEG_INFINITY, f64::max);
            let mbr = heads_of(&record["mbr_tree"]);
            // 1e-9: marginals by the default engine against enumeration.
            assert!((gain(&mbr) - best).abs() <= 1e-9, "{record}");
            assert!((record["mbr_tree"]["score"].as_f64().unwrap() - best).abs() <= 1e-9);
            assert!(gain(&mbr) >= gain(&heads_of(&record["best_tree"])) - 1e-12);
        }
    }
}

#[test]
fn min_entropy_is_minus_the_log_of_the_mode() {
    let graphs = graphs();
    let out = run(&["infer", "--quantities", "renyi:inf"], &graphs);
    for (s, record) in graphs.iter().zip(&out) {
        let trees = enumerate(s, Rooting::Single, false);
        if trees.is_empty() {
            continue;
        }
        let ln_z = log_sum_exp(trees.iter().map(|t| t.1));
        let best = trees.iter().map(|t| t.1).fold(f64::NEG_INFINITY, f64::max);
        // 1e-12: ln Z and the best score, each to rounding.
        assert!(
            (record["renyi"].as_f64().unwrap() - (ln_z - best)).abs() <= 1e-12,
            "{record}"
        );
    }
}

#[test]
fn projective_structure_sums_and_maximises_over_projective_trees() {
    let graphs = graphs();
    for rooting in Rooting::ALL {
        let args = [
            "infer",
            "--structure",
            "projective",
            "--rooting",
            rooting.name(),
            "--quantities",
            "log_z,marginals,best_tree",
        ];
        let out = run(&args, &graphs);
        for (s, record) in graphs.iter().zip(&out) {
            let trees = enumerate(s, rooting, true);
            if trees.is_empty() {
                assert!(record.get("error").is_some(), "{record}");
                continue;
            }
            assert_eq!(record["structure"], "projective");
            let ln_z = log_sum_exp(trees.iter().map(|t| t.1));
            // 1e-12: the chart's log-sum-exps against one over the trees.
            assert!(
                (record["log_z"].as_f64().unwrap() - ln_z).abs() <= 1e-12,
                "{record}"
            );
            let n = s.rows() - 1;
            let mu = common::matrix_of(&record["marginals"]);
            for m in 1..=n {
                for h in (0..=n).filter(|&h| h != m) {
                    let p: f64 = trees
                        .iter()
                        .filter(|t| t.0[m] == h)
                        .map(|t| (t.1 - ln_z).exp())
                        .sum();
                    assert!((mu[(h, m)] - p).abs() <= 1e-12, "{record}: {h} → {m}");
                }
            }
            let best = trees.iter().map(|t| t.1).fold(f64::NEG_INFINITY, f64::max);
            let heads = heads_of(&record["best_tree"]);
            assert!(is_projective(&heads), "{record}");
            let found = trees
                .iter()
                .find(|t| t.0 == heads)
                .expect("a projective tree");
            assert!((found.1 - best).abs() <= 1e-12, "{record}");
        }
    }
}

#[test]
fn projective_structure_refuses_what_it_does_not_have() {
    for args in [
        &["infer", "--structure", "projective", "--quantities", "kl"][..],
        &["infer", "--structure", "projective", "--backend", "exact"][..],
    ] {
        let out = spantree(args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(common::stderr(&out).contains("projective"), "{args:?}");
    }
}

#[test]
fn kbest_is_the_sorted_brute_force_list() {
    let graphs = graphs();
    for rooting in Rooting::ALL {
        let out = run(
            &[
                "infer",
                "--rooting",
                rooting.name(),
                "--quantities",
                "kbest:5",
            ],
            &graphs,
        );
        for (s, record) in graphs.iter().zip(&out) {
            let mut trees = enumerate(s, rooting, false);
            if trees.is_empty() {
                continue;
            }
            trees.sort_by(|a, b| b.1.total_cmp(&a.1));
            let list = record["kbest"].as_array().expect("a list");
            assert_eq!(list.len(), trees.len().min(5), "{record}");
            let mut seen = Vec::new();
            for (i, item) in list.iter().enumerate() {
                let heads = heads_of(item);
                let found = trees
                    .iter()
                    .find(|t| t.0 == heads)
                    .expect("a tree of the rooting");
                // The i-th score of the sorted list (ties may come in any order
                // among themselves); 1e-12: sums of the same scores.
                assert!((found.1 - trees[i].1).abs() <= 1e-12, "{record}: item {i}");
                assert!((item["score"].as_f64().unwrap() - found.1).abs() <= 1e-12);
                assert!(!seen.contains(&heads), "{record}: a duplicate");
                seen.push(heads);
            }
        }
    }
}

#[test]
fn samples_are_trees_with_their_probabilities_and_reproduce_across_threads() {
    let graphs = graphs();
    for rooting in Rooting::ALL {
        let args = |threads: &'static str| {
            [
                "infer",
                "--rooting",
                rooting.name(),
                "--quantities",
                "samples:20",
                "--seed",
                "7",
                "--threads",
                threads,
            ]
        };
        let one = run(&args("1"), &graphs);
        assert_eq!(one, run(&args("2"), &graphs), "the same draws on 2 threads");
        for (s, record) in graphs.iter().zip(&one) {
            let trees = enumerate(s, rooting, false);
            if trees.is_empty() {
                continue;
            }
            let ln_z = log_sum_exp(trees.iter().map(|t| t.1));
            for item in record["samples"].as_array().expect("a list") {
                let heads = heads_of(item);
                let found = trees
                    .iter()
                    .find(|t| t.0 == heads)
                    .expect("a tree of the rooting");
                // 1e-12: ln p = score − ln Z, each to rounding.
                let lp = item["log_prob"].as_f64().unwrap();
                assert!((lp - (found.1 - ln_z)).abs() <= 1e-12, "{record}");
            }
        }
    }
}
