//! A trained parser and its model file.
//!
//! # The model file (format version 1)
//!
//! One JSON object:
//!
//! ```text
//! {
//!   "format": "spantree-parser",      // always this string
//!   "version": 1,                      // FORMAT_VERSION; other versions are refused
//!   "objective": "crf",                // crf | hinge | perceptron | ge (informative)
//!   "structure": "nonprojective",      // decoder: nonprojective (MST) | projective (Eisner)
//!   "rooting": "single",               // single | multi
//!   "bits": 21,                        // arc weights: 2^bits hashed slots (1..=MAX_BITS)
//!   "arc_weights": [[index, value], …],   // non-zero slots only
//!   "label_bits": 18,                  // label weights: 2^label_bits slots
//!   "labels": ["acl", "advcl", …],     // relation names, sorted
//!   "label_weights": [[index, value], …]
//! }
//! ```
//!
//! Feature hashing is fixed (see [`features`](crate::features)), so the
//! weights are the whole model. Values are stored as `f32`.

use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::error::{ParserError, Result};
use crate::features::SentenceFeatures;
use crate::labeler::Labeler;
use crate::objective::{decode, Objective, RootingChoice, Structure};
use crate::Sentence;

/// The model-file format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The widest hash a model file may declare, for arcs and labels alike:
/// `2^26` weights are 512 MiB in memory, so a hostile file cannot make the
/// reader allocate more (the default is 21 bits, 16 MiB).
pub const MAX_BITS: u32 = 26;
const FORMAT_NAME: &str = "spantree-parser";

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    version: u32,
}

#[derive(Serialize, Deserialize)]
struct File {
    format: String,
    version: u32,
    objective: Objective,
    structure: Structure,
    rooting: RootingChoice,
    bits: u32,
    arc_weights: Vec<(u32, f32)>,
    label_bits: u32,
    labels: Vec<String>,
    label_weights: Vec<(u32, f32)>,
}

fn sparse(w: &[f64]) -> Vec<(u32, f32)> {
    w.iter()
        .enumerate()
        .filter(|(_, &v)| v != 0.0)
        .map(|(i, &v)| (i as u32, v as f32))
        .collect()
}

fn dense(bits: u32, pairs: &[(u32, f32)], path: &str) -> Result<Vec<f64>> {
    let mut w = vec![0.0; 1usize << bits];
    for &(i, v) in pairs {
        let slot = w.get_mut(i as usize).ok_or_else(|| ParserError::BadModel {
            path: path.to_string(),
            message: format!("weight index {i} beyond 2^{bits}"),
        })?;
        *slot = f64::from(v);
    }
    Ok(w)
}

/// A trained first-order parser: hashed arc weights, the structure and
/// rooting it decodes, and a labeler for the relations.
#[derive(Clone, Debug)]
pub struct Parser {
    /// The objective it was trained with (informative).
    pub objective: Objective,
    /// Non-projective (MST) or projective (Eisner) decoding.
    pub structure: Structure,
    /// Single- or multi-root decoding.
    pub rooting: RootingChoice,
    pub(crate) bits: u32,
    pub(crate) weights: Vec<f64>,
    pub(crate) labeler: Labeler,
}

impl Parser {
    /// The arc weights (`2^bits` hashed slots).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The hash width of the arc features.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// The relation names the labeler predicts.
    pub fn labels(&self) -> &[String] {
        &self.labeler.labels
    }

    /// The heads (`0` the root) and relations of one sentence:
    /// features `O(F n²)`, decoding `O(n²)` (MST) or `O(n³)` (Eisner).
    ///
    /// # Errors
    /// [`ParserError::Core`] if the library refuses the scores (not finite).
    pub fn parse(&self, sentence: &Sentence) -> Result<(Vec<usize>, Vec<String>)> {
        let feats = SentenceFeatures::new(sentence, self.bits);
        let theta = feats.scores(&self.weights);
        let tree = decode(
            &theta,
            self.structure,
            self.rooting.rooting(),
            sentence.line,
        )?;
        let heads = tree.heads().to_vec();
        let labels = self.labeler.predict(sentence, &heads);
        Ok((heads, labels))
    }

    /// Writes the model file (format above). `O(2^bits)`.
    ///
    /// # Errors
    /// [`ParserError::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        let file = File {
            format: FORMAT_NAME.to_string(),
            version: FORMAT_VERSION,
            objective: self.objective,
            structure: self.structure,
            rooting: self.rooting,
            bits: self.bits,
            arc_weights: sparse(&self.weights),
            label_bits: self.labeler.bits,
            labels: self.labeler.labels.clone(),
            label_weights: sparse(&self.labeler.w),
        };
        let io = |e: std::io::Error| ParserError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let out = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
        serde_json::to_writer(out, &file).map_err(|e| ParserError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// Reads a model file, checking its format name and version first.
    ///
    /// # Errors
    /// [`ParserError::Io`] for an unreadable file, [`ParserError::Version`]
    /// for another format version, [`ParserError::BadModel`] for anything
    /// else that is not the documented layout.
    pub fn load(path: &Path) -> Result<Parser> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ParserError::Io {
            path: p.clone(),
            message: e.to_string(),
        })?;
        Self::from_json(&text, &p)
    }

    /// Reads a model from the text of a model file; `path` names it in errors.
    ///
    /// # Errors
    /// As [`Parser::load`].
    pub fn from_json(text: &str, path: &str) -> Result<Parser> {
        let bad = |e: serde_json::Error| ParserError::BadModel {
            path: path.to_string(),
            message: e.to_string(),
        };
        let header: Header = serde_json::from_str(text).map_err(bad)?;
        if header.format != FORMAT_NAME {
            return Err(ParserError::BadModel {
                path: path.to_string(),
                message: format!("format {:?}, expected {FORMAT_NAME:?}", header.format),
            });
        }
        if header.version != FORMAT_VERSION {
            return Err(ParserError::Version {
                path: path.to_string(),
                found: header.version,
                expected: FORMAT_VERSION,
            });
        }
        let f: File = serde_json::from_str(text).map_err(bad)?;
        for (what, bits) in [("bits", f.bits), ("label_bits", f.label_bits)] {
            if !(1..=MAX_BITS).contains(&bits) {
                return Err(ParserError::BadModel {
                    path: path.to_string(),
                    message: format!("{what} = {bits} is outside 1..={MAX_BITS}"),
                });
            }
        }
        Ok(Parser {
            objective: f.objective,
            structure: f.structure,
            rooting: f.rooting,
            bits: f.bits,
            weights: dense(f.bits, &f.arc_weights, path)?,
            labeler: Labeler {
                bits: f.label_bits,
                labels: f.labels,
                w: dense(f.label_bits, &f.label_weights, path)?,
            },
        })
    }
}

/// The property the fuzz target `model` (in `fuzz/`) checks on any text, and
/// the regular tests replay on the stored corpus: [`Parser::from_json`]
/// returns (no panic, at most `2^MAX_BITS` weights allocated); an error has
/// a message; a model it accepts parses a fixed three-word sentence into
/// one head in `0..=3` (not the word itself) and one relation per word, or
/// refuses it with a typed error. `O(length + 2^bits)`.
///
/// # Errors
/// A description of the violated property.
///
/// ```
/// assert!(spantree_parser::model::check("{}").is_ok()); // an error is fine
/// ```
pub fn check(text: &str) -> std::result::Result<(), String> {
    const SENTENCE: &str = "1\tDogs\tdog\tNOUN\t_\t_\t2\tnsubj\t_\t_\n\
                            2\tbark\tbark\tVERB\t_\t_\t0\troot\t_\t_\n\
                            3\tloudly\tloudly\tADV\t_\t_\t2\tadvmod\t_\t_\n\n";
    let parser = match Parser::from_json(text, "fuzz") {
        Ok(parser) => parser,
        Err(e) if e.to_string().is_empty() => return Err(format!("an empty message: {e:?}")),
        Err(_) => return Ok(()),
    };
    let sentences = spantree_conllu::parse(SENTENCE).map_err(|e| e.to_string())?;
    match parser.parse(&sentences[0]) {
        Ok((heads, labels)) => {
            let n = heads.len();
            if n != 3 || labels.len() != 3 {
                return Err(format!("{n} heads and {} labels for 3 words", labels.len()));
            }
            match heads
                .iter()
                .enumerate()
                .find(|&(i, &h)| h > n || h == i + 1)
            {
                Some((i, h)) => Err(format!("word {} gets head {h}", i + 1)),
                None => Ok(()),
            }
        }
        Err(e) if e.to_string().is_empty() => Err(format!("an empty message: {e:?}")),
        Err(_) => Ok(()),
    }
}
