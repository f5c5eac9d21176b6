//! `spantree demo`: a built-in sentence with hand-written scores, and a
//! readable report.
//!
//! The report is a list of sections ([`SECTIONS`]), each a function of the
//! [`Demo`] context.

use std::io::{self, Write};

use spantree_core::{Error, Graph, Model, Rooting};
use spantree_faer::Accurate;

/// The example sentence, one token per word (node `i + 1` is `WORDS[i]`).
pub const WORDS: [&str; 7] = ["The", "cat", "sat", "on", "the", "mat", "."];

const X: f64 = f64::NEG_INFINITY;

/// Hand-written arc scores `θ(h → m)` (log-potentials) for [`WORDS`]:
/// `SCORES[h][m]`, row `0` is the root, `-∞` on column `0` and the diagonal.
///
/// They favour the Universal Dependencies tree (`sat` the root; `cat` its
/// subject, `mat` its oblique, `.` its punctuation; `The` under `cat`; `on`
/// and `the` under `mat`) and leave room for plausible alternatives such as
/// `on` attached to `sat`, or `cat` as the root.
#[rustfmt::skip]
pub const SCORES: [[f64; 8]; 8] = [
    //       The   cat   sat    on   the   mat     .
    [X,   -1.5,  0.5,  3.0, -2.0, -2.0, -0.5, -3.0], // ROOT
    [X,      X, -1.0, -2.5, -3.0, -2.0, -2.5, -3.5], // The
    [X,    3.0,    X, -0.5, -1.5, -1.0,  0.0, -1.5], // cat
    [X,   -1.0,  2.5,    X,  1.0, -1.0,  2.5,  2.0], // sat
    [X,   -2.5, -1.5, -1.5,    X, -0.5,  1.0, -2.5], // on
    [X,   -2.0, -2.0, -2.5, -2.0,    X, -1.0, -3.0], // the
    [X,   -1.5, -0.5, -1.0,  2.5,  3.0,    X, -0.5], // mat
    [X,   -3.0, -3.0, -3.0, -3.0, -3.0, -3.0,    X], // .
];

/// Everything a report section may use: the sentence, its graph, and one
/// model per rooting (factorised once each).
pub struct Demo {
    /// Row and column labels: `ROOT` then the words.
    pub labels: Vec<&'static str>,
    /// The rooting the user asked the tables for.
    pub rooting: Rooting,
    /// The single-root model.
    pub single: Model<Accurate>,
    /// The multi-root model.
    pub multi: Model<Accurate>,
}

impl Demo {
    /// Builds the graph of [`SCORES`] and both models.
    ///
    /// # Errors
    /// None in practice: the scores are valid; the signature passes core
    /// errors on rather than hiding them.
    pub fn new(rooting: Rooting) -> Result<Self, Error> {
        let graph = Graph::from_scores(&SCORES)?;
        let mut labels = vec!["ROOT"];
        labels.extend(WORDS);
        Ok(Demo {
            labels,
            rooting,
            single: Model::new(Accurate, &graph, Rooting::Single)?,
            multi: Model::new(Accurate, &graph, Rooting::Multi)?,
        })
    }

    /// The model of the requested rooting.
    pub fn model(&self) -> &Model<Accurate> {
        match self.rooting {
            Rooting::Single => &self.single,
            Rooting::Multi => &self.multi,
        }
    }
}

/// A report section: writes a block of text (the caller separates blocks).
pub type Section = fn(&Demo, &mut dyn Write) -> Result<(), DemoError>;

/// The sections of the report, in order.
pub const SECTIONS: &[Section] = &[header, partition, entropy, marginal_table, trees];

/// A failure of the demo: output or (never expected) the library.
#[derive(Debug)]
pub enum DemoError {
    /// Writing the report failed.
    Io(io::Error),
    /// The library refused the built-in example.
    Model(Error),
}

impl std::fmt::Display for DemoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DemoError::Io(e) => write!(f, "cannot write the report: {e}"),
            DemoError::Model(e) => write!(f, "the built-in example failed: {e}"),
        }
    }
}

impl std::error::Error for DemoError {}

impl From<io::Error> for DemoError {
    fn from(e: io::Error) -> Self {
        DemoError::Io(e)
    }
}

impl From<Error> for DemoError {
    fn from(e: Error) -> Self {
        DemoError::Model(e)
    }
}

/// Prints the whole report to `out`.
///
/// # Errors
/// [`DemoError`] when writing fails.
pub fn run(rooting: Rooting, out: &mut dyn Write) -> Result<(), DemoError> {
    let demo = Demo::new(rooting)?;
    for (i, section) in SECTIONS.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        section(&demo, out)?;
    }
    out.flush()?;
    Ok(())
}

fn header(demo: &Demo, out: &mut dyn Write) -> Result<(), DemoError> {
    writeln!(out, "spantree demo: \"{}\"", WORDS.join(" "))?;
    writeln!(
        out,
        "{} words, node 0 is ROOT; hand-written arc scores θ(h → m) = ln w(h → m);",
        demo.labels.len() - 1
    )?;
    writeln!(
        out,
        "backend: accurate (cancellation-free elimination of the Laplacian)"
    )?;
    Ok(())
}

fn partition(demo: &Demo, out: &mut dyn Write) -> Result<(), DemoError> {
    writeln!(
        out,
        "log Z (Z = sum over trees of the product of arc weights)"
    )?;
    writeln!(out, "  single-root  {:>10.6}", demo.single.log_partition()?)?;
    writeln!(out, "  multi-root   {:>10.6}", demo.multi.log_partition()?)?;
    Ok(())
}

fn entropy(demo: &Demo, out: &mut dyn Write) -> Result<(), DemoError> {
    let n = (demo.labels.len() - 1) as f64;
    writeln!(
        out,
        "Entropy of the tree distribution, H = -Σ_d p(d) ln p(d) (bits/word: H / (n ln 2))"
    )?;
    for (name, model) in [("single-root", &demo.single), ("multi-root ", &demo.multi)] {
        let h = model.entropy()?;
        writeln!(
            out,
            "  {name}  entropy: {h:.6} nats ({:.4} bits/word)",
            h / (n * std::f64::consts::LN_2)
        )?;
    }
    Ok(())
}

fn marginal_table(demo: &Demo, out: &mut dyn Write) -> Result<(), DemoError> {
    let mu = demo.model().marginals()?;
    let n = demo.labels.len() - 1;
    writeln!(
        out,
        "Arc marginals P(h → m in the tree), {}-root trees",
        demo.rooting.name()
    )?;
    writeln!(
        out,
        "(row: head h, column: dependent m; every column sums to 1; - is not an arc)"
    )?;
    let width = demo
        .labels
        .iter()
        .map(|l| l.len())
        .max()
        .unwrap_or(4)
        .max(6);
    write!(out, "{:<width$}", "")?;
    for label in &demo.labels[1..] {
        write!(out, " {label:>width$}")?;
    }
    writeln!(out)?;
    for h in 0..=n {
        write!(out, "{:<width$}", demo.labels[h])?;
        for m in 1..=n {
            if h == m {
                write!(out, " {:>width$}", "-")?;
            } else {
                write!(out, " {:>width$.3}", mu[(h, m)])?;
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

fn trees(demo: &Demo, out: &mut dyn Write) -> Result<(), DemoError> {
    let model = demo.model();
    let mu = model.marginals()?;
    writeln!(
        out,
        "Trees of the {}-root distribution (head of each word)",
        demo.rooting.name()
    )?;
    let width = demo.labels.iter().map(|l| l.len()).max().unwrap_or(4);
    for (what, tree) in [
        ("best tree (the mode)", model.best_tree()?),
        ("MBR tree (max expected attachment)", model.mbr_tree()?),
    ] {
        let p = model.log_probability(&tree)?.exp();
        let attachment: f64 = tree.arcs().map(|(h, m)| mu[(h, m)]).sum();
        writeln!(
            out,
            "  {what}: p = {p:.4}, expected correct heads = {attachment:.3} of {}",
            tree.n()
        )?;
        let arcs: Vec<String> = tree
            .arcs()
            .map(|(h, m)| format!("{:>width$} ← {}", demo.labels[h], demo.labels[m]))
            .collect();
        for arc in arcs {
            writeln!(out, "    {arc}")?;
        }
    }
    Ok(())
}
