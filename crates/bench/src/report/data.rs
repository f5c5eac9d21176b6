//! Treebanks on disk and the seeded score model that turns a gold tree into
//! a parser-like distribution.

use std::path::{Path, PathBuf};

use spantree_bruteforce::random::SplitMix64;
use spantree_core::{Graph, Model, Rooting};
use spantree_faer::F64;

use super::ReportError;
use spantree_conllu::{self as conllu, ConlluError, Sentence};

/// One treebank: the sentences of its CoNLL-U files.
#[derive(Clone, Debug)]
pub struct Treebank {
    /// The directory name (`English`), or the file stem for a lone file.
    pub name: String,
    /// The files read.
    pub files: Vec<PathBuf>,
    /// The well-formed sentences, in file order.
    pub sentences: Vec<Sentence>,
    /// The malformed sentences that were skipped.
    pub malformed: Vec<ConlluError>,
}

impl Treebank {
    /// The gold heads of the sentences with `min ≤ n ≤ max`, at most `limit`
    /// of them, in file order.
    pub fn heads_between(&self, min: usize, max: usize, limit: Option<usize>) -> Vec<Vec<usize>> {
        self.sentences
            .iter()
            .filter(|s| (min..=max).contains(&s.len()))
            .take(limit.unwrap_or(usize::MAX))
            .map(Sentence::heads)
            .collect()
    }
}

fn conllu_files(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ReportError::io(dir, &e))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "conllu"))
        .collect();
    files.sort();
    // Test splits when the directory holds several.
    let tests: Vec<PathBuf> = files
        .iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|f| f.to_string_lossy().contains("test"))
        })
        .cloned()
        .collect();
    Ok(if tests.is_empty() { files } else { tests })
}

/// Reads every treebank under `dir`: each subdirectory with `.conllu` files
/// is one (its `*test*` files if it has any), sorted by name; if there is
/// none, `dir` itself is one.
///
/// # Errors
/// [`ReportError::Io`] for unreadable directories or files,
/// [`ReportError::NoTreebanks`] when no `.conllu` file is found.
pub fn load_treebanks(dir: &Path) -> Result<Vec<Treebank>, ReportError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ReportError::io(dir, &e))?;
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    let mut banks = Vec::new();
    for sub in subdirs {
        let files = conllu_files(&sub)?;
        if !files.is_empty() {
            let name = sub
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            banks.push(read_bank(name, files)?);
        }
    }
    if banks.is_empty() {
        let files = conllu_files(dir)?;
        if files.is_empty() {
            return Err(ReportError::NoTreebanks {
                dir: dir.display().to_string(),
            });
        }
        let name = dir
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| "treebank".into());
        banks.push(read_bank(name, files)?);
    }
    Ok(banks)
}

fn read_bank(name: String, files: Vec<PathBuf>) -> Result<Treebank, ReportError> {
    let mut sentences = Vec::new();
    let mut malformed = Vec::new();
    for f in &files {
        let (good, bad) = conllu::read_file(f)?;
        sentences.extend(good);
        malformed.extend(bad);
    }
    Ok(Treebank {
        name,
        files,
        sentences,
        malformed,
    })
}

/// The seeded score model: `θ(h → m) = σ z_{hm} + β [h = gold(m)]`, with
/// `z_{hm}` i.i.d. standard normal from SplitMix64 seeded per sentence; the
/// root row is scored like any head; the gold bonus `β` is calibrated so that
/// the entropy lands near a target in bits per word.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreModel {
    /// The noise scale `σ`.
    pub sigma: f64,
    /// The gold-arc bonus `β`.
    pub bonus: f64,
    /// The base seed; sentence `k` of treebank `t` uses a seed derived from it.
    pub seed: u64,
}

/// The seed of sentence `sentence` of treebank `bank`.
pub fn sentence_seed(base: u64, bank: usize, sentence: usize) -> u64 {
    let mut rng = SplitMix64::new(base ^ ((bank as u64) << 40) ^ sentence as u64);
    rng.next_u64()
}

impl ScoreModel {
    /// The score graph of a sentence with gold `heads` (1-based heads, `0`
    /// the root) under `seed`.
    pub fn graph(&self, heads: &[usize], seed: u64) -> Graph {
        let n = heads.len();
        let mut rng = SplitMix64::new(seed);
        let rows: Vec<Vec<f64>> = (0..=n)
            .map(|h| {
                (0..=n)
                    .map(|m| {
                        if m == 0 || m == h {
                            f64::NEG_INFINITY
                        } else {
                            let bonus = if heads[m - 1] == h { self.bonus } else { 0.0 };
                            self.sigma * rng.normal() + bonus
                        }
                    })
                    .collect()
            })
            .collect();
        // Finite scores on every arc: always a valid graph.
        Graph::from_scores(&rows).expect("finite scores make a valid graph")
    }

    /// Σ H / Σ n in bits per word over `sentences` (heads, seed), single-root.
    pub fn bits_per_word(&self, sentences: &[(Vec<usize>, u64)]) -> Result<f64, ReportError> {
        let mut h = 0.0;
        let mut words = 0;
        for (heads, seed) in sentences {
            let model = Model::new(F64, &self.graph(heads, *seed), Rooting::Single)?;
            h += model.entropy()?;
            words += heads.len();
        }
        Ok(h / std::f64::consts::LN_2 / words.max(1) as f64)
    }

    /// The bonus `β ∈ [0, 20]` for which [`ScoreModel::bits_per_word`] is
    /// `target`, by bisection (the entropy falls as the bonus grows).
    pub fn calibrate(
        sigma: f64,
        seed: u64,
        target: f64,
        sentences: &[(Vec<usize>, u64)],
    ) -> Result<ScoreModel, ReportError> {
        let (mut lo, mut hi) = (0.0_f64, 20.0_f64);
        for _ in 0..30 {
            let mid = 0.5 * (lo + hi);
            let m = ScoreModel {
                sigma,
                bonus: mid,
                seed,
            };
            if m.bits_per_word(sentences)? > target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(ScoreModel {
            sigma,
            bonus: 0.5 * (lo + hi),
            seed,
        })
    }
}

/// A random gold tree on `n` words: words in random order, each attached to
/// the root or to a word placed before it, uniformly.
pub fn random_heads(n: usize, rng: &mut SplitMix64) -> Vec<usize> {
    let order = rng.word_permutation(n)[1..].to_vec();
    let mut heads = vec![0; n];
    for (i, &m) in order.iter().enumerate() {
        let k = rng.below(i + 1);
        heads[m - 1] = if k == i { 0 } else { order[k] };
    }
    heads
}
