//! `spantree demo`: runs without input, and its numbers are the oracle's.

mod common;

use common::{spantree, stdout};
use spantree_bruteforce as oracle;
use spantree_cli::demo::{SCORES, WORDS};
use spantree_core::{Matrix, Rooting};

fn scores() -> Matrix<f64> {
    Matrix::from_fn(8, 8, |h, m| SCORES[h][m])
}

#[test]
fn demo_prints_log_z_for_both_rootings_and_the_marginal_table() {
    for rooting in Rooting::ALL {
        let out = spantree(&["demo", "--rooting", rooting.name()], "");
        assert_eq!(out.status.code(), Some(0));
        let text = stdout(&out);
        assert!(text.contains("The cat sat on the mat ."), "{text}");
        // log Z of both rootings, to the six printed decimals.
        for r in Rooting::ALL {
            let log_z = oracle::log_partition_from_scores(&scores(), r);
            let label = format!("{}-root", r.name());
            let printed = text
                .lines()
                .find_map(|l| l.trim_start().strip_prefix(label.as_str()))
                .unwrap_or_else(|| panic!("no `{label}` line in\n{text}"));
            assert_eq!(printed.trim(), format!("{log_z:.6}"), "{label}");
        }
        // The entropy of both rootings, −Σ p ln p over the enumerated trees.
        for r in Rooting::ALL {
            let log_z = oracle::log_partition_from_scores(&scores(), r);
            let h: f64 = oracle::trees(&oracle::random::weights_of(&scores()), r)
                .map(|t| {
                    let log_p = t.score(&scores()) - log_z;
                    -log_p.exp() * log_p
                })
                .sum();
            let bits_per_word = h / (7.0 * std::f64::consts::LN_2);
            let expected = format!("entropy: {h:.6} nats ({bits_per_word:.4} bits/word)");
            let label = format!("{}-root", r.name());
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(&label) && l.contains("entropy:"))
                .unwrap_or_else(|| panic!("no entropy line for {label} in\n{text}"));
            assert_eq!(line.trim_start()[label.len()..].trim(), expected, "{label}");
        }
        // The table: a header of words, then ROOT and one row per word.
        let mu = oracle::marginals_from_scores(&scores(), rooting).expect("trees exist");
        let table: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("The "))
            .collect();
        let header: Vec<&str> = table[0].split_whitespace().collect();
        assert_eq!(header, WORDS);
        for (h, row) in table[1..=8].iter().enumerate() {
            let cells: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(cells[0], if h == 0 { "ROOT" } else { WORDS[h - 1] });
            for m in 1..=7 {
                let expected = if h == m {
                    "-".to_owned()
                } else {
                    format!("{:.3}", mu[(h, m)])
                };
                assert_eq!(cells[m], expected, "row {h}, column {m}");
            }
        }
    }
}
