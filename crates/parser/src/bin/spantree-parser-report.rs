//! Regenerates `docs/report/parser.md` (and the learning-curve SVG next to
//! it): the parser on Universal Dependencies, trained on each language's
//! `*-ud-dev.conllu` and tested on its `*-ud-test.conllu`.
//!
//! ```text
//! cargo run --release -p spantree-parser --bin spantree-parser-report -- \
//!     --ud ../shared/ud --out docs/report/parser.md [--epochs 4] [--languages English,German]
//! ```
//!
//! The UD directory may also come from `SPANTREE_UD`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use plotters::prelude::*;
use spantree_core::{Graph, Rooting};
use spantree_parser::baseline::{left_chain, nearest_attachment, right_chain};
use spantree_parser::eval::shape;
use spantree_parser::{
    evaluate, parse_all, train, Objective, RootingChoice, Scores, Sentence, SentenceFeatures,
    Structure, TrainConfig, Trained,
};

const LANGUAGES: [&str; 4] = ["English", "German", "Finnish", "French"];
/// GE: sentences that keep their trees.
const FEW: usize = 100;

struct Options {
    ud: PathBuf,
    out: PathBuf,
    epochs: usize,
    languages: Vec<String>,
    ge_weights: Vec<f64>,
}

fn options() -> Result<Options, String> {
    let mut ud = std::env::var_os("SPANTREE_UD").map(PathBuf::from);
    let mut out = PathBuf::from("docs/report/parser.md");
    let mut epochs = 4;
    let mut languages: Vec<String> = LANGUAGES.iter().map(|s| s.to_string()).collect();
    let mut ge_weights = vec![0.1, 0.01];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--ud" => ud = Some(PathBuf::from(value()?)),
            "--out" => out = PathBuf::from(value()?),
            "--epochs" => epochs = value()?.parse().map_err(|e| format!("--epochs: {e}"))?,
            "--languages" => languages = value()?.split(',').map(str::to_string).collect(),
            "--ge-weights" => {
                ge_weights = value()?
                    .split(',')
                    .map(|w| w.parse().map_err(|e| format!("--ge-weights: {e}")))
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    let ud = ud.ok_or("give the UD directory with --ud or SPANTREE_UD")?;
    Ok(Options {
        ud,
        out,
        epochs,
        languages,
        ge_weights,
    })
}

/// The `*-ud-{split}.conllu` file of a language directory.
fn split(dir: &Path, split: &str) -> Result<PathBuf, String> {
    let suffix = format!("-ud-{split}.conllu");
    std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with(&suffix))
        .ok_or_else(|| format!("{}: no *{suffix}", dir.display()))
}

fn read(path: &Path) -> Result<(Vec<Sentence>, usize), String> {
    let (good, bad) = spantree_conllu::read_file(path).map_err(|e| e.to_string())?;
    Ok((good, bad.len()))
}

struct Row {
    name: String,
    /// Whether relations were predicted (LAS is meaningless otherwise).
    labeled: bool,
    scores: Scores,
    train_seconds: Option<f64>,
    sentences_per_second: Option<f64>,
}

fn pct(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

fn run(
    name: &str,
    train_set: &[Sentence],
    test: &[Sentence],
    config: &TrainConfig,
    curve: bool,
) -> Result<(Row, Trained), String> {
    let trained = train(train_set, if curve { test } else { &[] }, config, |_| {})
        .map_err(|e| format!("{name}: {e}"))?;
    let predicted = parse_all(&trained.parser, test);
    let epoch_seconds: f64 = trained.epochs.iter().map(|e| e.seconds).sum();
    let used = if config.objective == Objective::Ge {
        trained.sentences
    } else {
        trained.sentences - trained.epochs.last().map_or(0, |e| e.skipped)
    };
    let row = Row {
        name: name.to_string(),
        labeled: true,
        scores: evaluate(test, &predicted),
        train_seconds: Some(trained.seconds),
        sentences_per_second: Some((used * config.epochs) as f64 / epoch_seconds),
    };
    eprintln!(
        "  {name}: UAS {:.1}% in {:.1} s",
        100.0 * row.scores.uas_no_punct,
        trained.seconds
    );
    Ok((row, trained))
}

fn baseline(name: &str, test: &[Sentence], heads: impl Fn(&Sentence) -> Vec<usize>) -> Row {
    let predicted: Vec<_> = test.iter().map(|s| (heads(s), Vec::new())).collect();
    Row {
        name: name.to_string(),
        labeled: false,
        scores: evaluate(test, &predicted),
        train_seconds: None,
        sentences_per_second: None,
    }
}

/// Shares of multi-root trees and of malformed outputs (cycles) when the
/// CRF's scores are decoded without the root constraint: multi-root MST,
/// and the greedy best head of every word.
fn unconstrained(trained: &Trained, test: &[Sentence]) -> (f64, f64, f64) {
    let (mut mst_multi, mut greedy_multi, mut greedy_bad) = (0, 0, 0);
    for s in test {
        let theta =
            SentenceFeatures::new(s, trained.parser.bits()).scores(trained.parser.weights());
        if let Ok(t) = Graph::from_scores(&theta).and_then(|g| g.best_tree(Rooting::Multi)) {
            mst_multi += usize::from(t.root_children().len() > 1);
        }
        let greedy: Vec<usize> = (1..theta.len())
            .map(|m| {
                (0..theta.len())
                    .filter(|&h| h != m)
                    .max_by(|&a, &b| theta[a][m].total_cmp(&theta[b][m]))
                    .unwrap_or(0)
            })
            .collect();
        let (tree, one) = shape(&greedy);
        greedy_bad += usize::from(!tree);
        greedy_multi += usize::from(tree && !one);
    }
    let n = test.len().max(1) as f64;
    (
        mst_multi as f64 / n,
        greedy_multi as f64 / n,
        greedy_bad as f64 / n,
    )
}

fn table(rows: &[Row]) -> String {
    let mut t = String::from(
        "| model | UAS | LAS | UAS −punct | LAS −punct | single-root trees | train s | sent/s |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let s = &r.scores;
        let las = |x: f64| if r.labeled { pct(x) } else { "–".into() };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            pct(s.uas),
            las(s.las),
            pct(s.uas_no_punct),
            las(s.las_no_punct),
            pct(s.well_formed_single_root),
            r.train_seconds.map_or("–".into(), |x| format!("{x:.1}")),
            r.sentences_per_second
                .map_or("–".into(), |x| format!("{x:.0}")),
        );
    }
    t
}

fn plot(path: &Path, curves: &[(String, Vec<f64>)], epochs: usize) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let lo = curves
        .iter()
        .flat_map(|c| c.1.iter().copied())
        .fold(100.0, f64::min);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "CRF, non-projective, single root: test UAS without punctuation",
            ("sans-serif", 18),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(0.5..epochs as f64 + 0.5, (lo - 2.0).floor()..100.0)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc("UAS (%)")
        .draw()
        .map_err(|e| err(&e))?;
    let colors = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
    ];
    for (i, (name, ys)) in curves.iter().enumerate() {
        let color = colors[i % colors.len()];
        let points: Vec<(f64, f64)> = ys
            .iter()
            .enumerate()
            .map(|(e, &y)| ((e + 1) as f64, y))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, color.filled())),
            )
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

fn main() -> std::process::ExitCode {
    match report() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spantree-parser-report: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn report() -> Result<(), String> {
    let o = options()?;
    let start = Instant::now();
    let threads = rayon::current_num_threads();
    let base = TrainConfig {
        epochs: o.epochs,
        ..TrainConfig::default()
    };
    let mut md = String::new();
    let mut curves = Vec::new();
    let mut summary = Vec::new();
    let mut cost = String::from(
        "| language | training sentences (≥ 2 words) | words | CRF non-proj. s/epoch | CRF proj. s/epoch | perceptron non-proj. s/epoch | sent/s/core (CRF non-proj.) |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut roots = String::from(
        "| language | multi-root MST: >1 root child | greedy heads: >1 root child | greedy heads: cycles |\n|---|---:|---:|---:|\n",
    );
    for lang in &o.languages {
        let dir = o.ud.join(lang);
        let (train_set, bad_train) = read(&split(&dir, "dev")?)?;
        let (test, bad_test) = read(&split(&dir, "test")?)?;
        eprintln!(
            "{lang}: {} training, {} test sentences",
            train_set.len(),
            test.len()
        );
        let words: usize = train_set.iter().map(Sentence::len).sum();
        let mut rows = Vec::new();
        let mut crf_np = None;
        let mut crf_p_epoch = 0.0;
        let mut perceptron_epoch = 0.0;
        for (objective, structure, rooting) in [
            (
                Objective::Crf,
                Structure::Nonprojective,
                RootingChoice::Single,
            ),
            (Objective::Crf, Structure::Projective, RootingChoice::Single),
            (
                Objective::Hinge,
                Structure::Nonprojective,
                RootingChoice::Single,
            ),
            (
                Objective::Hinge,
                Structure::Projective,
                RootingChoice::Single,
            ),
            (
                Objective::Perceptron,
                Structure::Nonprojective,
                RootingChoice::Single,
            ),
            (
                Objective::Perceptron,
                Structure::Projective,
                RootingChoice::Single,
            ),
            (
                Objective::Crf,
                Structure::Nonprojective,
                RootingChoice::Multi,
            ),
            (Objective::Crf, Structure::Projective, RootingChoice::Multi),
        ] {
            let name = format!(
                "{} {} {}-root",
                objective.name(),
                structure.name(),
                rooting.name()
            );
            let config = TrainConfig {
                objective,
                structure,
                rooting,
                ..base.clone()
            };
            let curve = objective == Objective::Crf
                && structure == Structure::Nonprojective
                && rooting == RootingChoice::Single;
            let (row, trained) = run(&name, &train_set, &test, &config, curve)?;
            rows.push(row);
            let per_epoch =
                trained.epochs.iter().map(|e| e.seconds).sum::<f64>() / o.epochs.max(1) as f64;
            if curve {
                curves.push((
                    lang.clone(),
                    trained
                        .epochs
                        .iter()
                        .map(|e| e.dev.map_or(0.0, |d| 100.0 * d.uas_no_punct))
                        .collect::<Vec<_>>(),
                ));
                crf_np = Some((trained, per_epoch));
            } else if objective == Objective::Crf && rooting == RootingChoice::Single {
                crf_p_epoch = per_epoch;
            } else if objective == Objective::Perceptron && structure == Structure::Nonprojective {
                perceptron_epoch = per_epoch;
            }
        }
        // Semi-supervised: the first FEW sentences keep their trees.
        let few = TrainConfig {
            objective: Objective::Crf,
            ..base.clone()
        };
        let (row, _) = run(
            &format!("crf on the first {FEW} sentences only"),
            &train_set[..FEW.min(train_set.len())],
            &test,
            &few,
            false,
        )?;
        rows.push(row);
        for &weight in &o.ge_weights {
            let ge = TrainConfig {
                objective: Objective::Ge,
                labeled: FEW,
                ge_weight: weight,
                ..base.clone()
            };
            let (row, _) = run(
                &format!("ge (weight {weight}): {FEW} labeled + the rest unlabeled"),
                &train_set,
                &test,
                &ge,
                false,
            )?;
            rows.push(row);
        }
        rows.push(baseline("baseline: left chain", &test, |s| {
            left_chain(s.len())
        }));
        rows.push(baseline("baseline: right chain", &test, |s| {
            right_chain(s.len())
        }));
        rows.push(baseline(
            "baseline: nearest attachment (UPOS rules)",
            &test,
            nearest_attachment,
        ));
        let (trained, per_epoch) = crf_np.ok_or("no CRF run")?;
        let used = trained.sentences;
        let _ = writeln!(
            cost,
            "| {lang} | {used} | {words} | {per_epoch:.2} | {crf_p_epoch:.2} | {perceptron_epoch:.2} | {:.0} |",
            used as f64 / per_epoch / threads as f64
        );
        let (mst, greedy_multi, greedy_bad) = unconstrained(&trained, &test);
        let _ = writeln!(
            roots,
            "| {lang} | {} | {} | {} |",
            pct(mst),
            pct(greedy_multi),
            pct(greedy_bad)
        );
        summary.push((
            lang.clone(),
            rows[0].scores.uas_no_punct,
            rows[rows.len() - 1].scores.uas_no_punct,
        ));
        let _ = writeln!(
            md,
            "### {lang}\n\nTrained on `{}` ({} sentences, {} malformed skipped), tested on `{}` ({} sentences, {} malformed skipped).\n\n{}",
            split(&dir, "dev")?.file_name().map_or(String::new(), |f| f.to_string_lossy().into()),
            train_set.len(),
            bad_train,
            split(&dir, "test")?.file_name().map_or(String::new(), |f| f.to_string_lossy().into()),
            test.len(),
            bad_test,
            table(&rows)
        );
    }
    let svg = o.out.with_file_name("parser-learning-curve.svg");
    plot(&svg, &curves, o.epochs)?;
    let mut curve_table = String::from("| language |");
    for e in 1..=o.epochs {
        let _ = write!(curve_table, " epoch {e} |");
    }
    curve_table.push_str("\n|---|");
    curve_table.push_str(&"---:|".repeat(o.epochs));
    curve_table.push('\n');
    for (lang, ys) in &curves {
        let _ = write!(curve_table, "| {lang} |");
        for y in ys {
            let _ = write!(curve_table, " {y:.1} |");
        }
        curve_table.push('\n');
    }
    let headline: String = summary
        .iter()
        .map(|(l, crf, near)| {
            format!(
                "{l} {:.1}% (nearest-attachment baseline {:.1}%)",
                100.0 * crf,
                100.0 * near
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "# The parser on Universal Dependencies\n\n\
Generated by `cargo run --release -p spantree-parser --bin spantree-parser-report -- --ud <UD directory> --epochs {epochs}` \
in {secs:.0} s on {threads} threads. Do not edit by hand.\n\n\
**Data.** The full UD training splits are not available here: every model is **trained on the language's `dev` split and \
tested on its `test` split**. No model selection or early stopping uses the test split; the learning curve only records \
it after each epoch. Gold UPOS tags and lemmas are inputs (as in McDonald et al. 2005).\n\n\
**Models.** First-order features of McDonald, Crammer & Pereira (2005) hashed into 2^21 weights; {epochs} epochs, \
mini-batches of 32, AdaGrad (step 0.1), L2 1e-5. `crf` is the conditional log-likelihood (matrix-tree marginals, or \
inside–outside when projective), `hinge` the structured hinge with Hamming loss by loss-augmented MST / Eisner, trained by \
**subgradient** steps (not Koo et al.'s exponentiated gradient), `perceptron` the averaged perceptron (mini-batches decoded \
in parallel, updates applied in order). The projective CRF cannot score a non-projective gold tree and skips those \
sentences; the other objectives train on every sentence. `ge` keeps the trees of the first {FEW} sentences \
(CRF) and fits the others to generalised-expectation targets `P(head UPOS, direction | dependent UPOS)` estimated \
from those {FEW} (Druck, Mann & McCallum 2009), with the GE term weighted as given per unlabeled sentence; the row \
above them is the CRF on the {FEW} sentences alone. Relations \
come from a separate averaged-perceptron labeler on the predicted arcs. Baselines: every word headed by its left or right \
neighbour, and attach-to-nearest with UPOS rules (function words → nearest nominal, nominals → nearest verb, verbs → \
the main verb). Columns: attachment scores in %, with and without punctuation (gold UPOS `PUNCT`); the share of \
single-root trees among the outputs; training wall-clock seconds (features, epochs and labeler); training sentences \
per second over the epochs.\n\n\
**Headline** (non-projective single-root CRF, test UAS without punctuation): {headline}.\n\n\
## Results per language\n\n{md}\
## Learning curve\n\n![test UAS per epoch](parser-learning-curve.svg)\n\n{curve_table}\n\
## Cost of training\n\nSeconds per epoch (dev evaluation excluded) and CRF throughput per core \
({threads} threads; the machine was shared with other jobs, so these are upper bounds on the cost). \
The perceptron's epoch does the same feature scoring and sparse updates with an `O(n²)` MST instead of the \
`O(n³)` marginals (and a dense gradient): the difference to the CRF's epoch is the matrix-tree work.\n\n{cost}\n\
## Decoding without the root constraint\n\nThe non-projective single-root CRF's scores decoded by the multi-root MST \
(every output a tree, but not always single-root) and by the best head of every word independently (not always a tree). \
The single-root decoders of the tables above always output well-formed single-root trees.\n\n{roots}",
        epochs = o.epochs,
        secs = start.elapsed().as_secs_f64(),
    );
    std::fs::write(&o.out, text).map_err(|e| format!("{}: {e}", o.out.display()))?;
    eprintln!(
        "wrote {} and {} in {:.0} s",
        o.out.display(),
        svg.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
