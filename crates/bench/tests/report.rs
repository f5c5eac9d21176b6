//! `spantree-report reproduce` on a tiny fixture treebank: every part is
//! present and every table is well formed. Sizes are tiny; speed is not
//! asserted (benches measure it).

use std::path::PathBuf;

use spantree_bench::report::{reproduce, Options};

/// The markdown tables of a text: runs of lines starting with `|`.
fn tables(text: &str) -> Vec<Vec<&str>> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in text.lines() {
        if line.starts_with('|') {
            current.push(line);
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn cells(line: &str) -> usize {
    line.trim().trim_matches('|').split('|').count()
}

#[test]
fn reproduce_on_the_tiny_treebank_writes_every_part() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let out = std::env::temp_dir().join(format!("spantree-report-test-{}", std::process::id()));
    let mut opts = Options::new(&fixtures, &out);
    opts.max_sentences = Some(3);
    opts.ge_max_sentences = 2;
    opts.exact_sentences = 1;
    opts.repetitions = 1;
    opts.ge_repetitions = 1;
    opts.scaling_max_n = 20;
    opts.scaling_budget = 0.05;
    opts.precision_sizes = vec![8];
    opts.precision_graphs = 1;
    opts.adjugate_n = 6;
    let written = reproduce(&opts).expect("the report runs on the fixture");
    let text = std::fs::read_to_string(&written.report).unwrap();

    for heading in [
        "## 1. Entropy",
        "## 2. GE gradient",
        "## 3. Scaling",
        "## 4. Adjugate",
        "## 5. Precision",
        "## 6. Machine",
    ] {
        assert!(text.contains(heading), "missing {heading}");
    }
    // The fixture's malformed sentence is skipped and counted.
    assert!(text.contains("1 malformed and skipped"), "{text}");

    // Entropy, GE, scaling, adjugate ×2, break points, precision.
    let tables = tables(&text);
    assert_eq!(tables.len(), 7, "{text}");
    for t in &tables {
        assert!(t.len() >= 3, "header, separator and a row: {t:?}");
        let width = cells(t[0]);
        assert_eq!(t[1], format!("|{}", "---|".repeat(width)));
        for row in &t[2..] {
            assert_eq!(cells(row), width, "{row}");
            assert!(!row.contains("NaN"), "{row}");
        }
    }
    // Four sentences have 5 ≤ n ≤ 50, three are used; both rootings.
    let entropy = &tables[0];
    assert_eq!(entropy.len(), 2 + 2);
    assert!(
        entropy[2].starts_with("| fixtures | single | 3 |"),
        "{}",
        entropy[2]
    );
    // Every plot is an SVG.
    assert_eq!(written.plots.len(), 3);
    for p in &written.plots {
        let svg = std::fs::read_to_string(p).unwrap();
        assert!(svg.starts_with("<svg"), "{}", p.display());
    }
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn missing_directory_is_an_error_not_a_panic() {
    let opts = Options::new(
        "/nonexistent/treebanks",
        std::env::temp_dir().join("spantree-report-none"),
    );
    let err = reproduce(&opts).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/treebanks"), "{err}");
}
