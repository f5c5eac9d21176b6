//! # spantree-conllu
//!
//! A small CoNLL-U reader for spantree: words (form, lemma, tags, features),
//! gold heads and gold labels of the basic dependency tree, for the command, the reports and training
//! code alike. It depends on nothing of spantree; heads are `0` for the root
//! and `1..=n` for the words, as in the format.
//!
//! [CoNLL-U](https://universaldependencies.org/format.html) stores one token
//! per line in ten tab-separated columns
//! (`ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC`), sentences are
//! separated by blank lines, and `#` lines before a sentence are comments.
//! This reader
//!
//! * splits on tabs only (forms may contain spaces);
//! * keeps the comments of each sentence (`# sent_id = …`, `# text = …`);
//! * skips multiword-token ranges (`3-4`) and empty nodes (`5.1`), which are
//!   not part of the basic tree, but checks that their IDs are well formed;
//! * reads the enhanced-dependency column (`DEPS`, `head:rel|head:rel` or `_`)
//!   into [`Word::enhanced`], keeping the heads as text because they may name
//!   empty nodes (`5.1`);
//! * checks that word IDs run `1, 2, …, n` and that every head is in `0..=n`.
//!
//! Every problem is a [`ConlluError`] with the 1-based line number; the
//! [`Sentences`] iterator reports it and resumes at the next sentence, so one
//! malformed sentence does not hide the rest of a treebank.
//!
//! ```
//! use spantree_conllu::parse;
//!
//! let text = "# text = Dogs bark\n1\tDogs\tdog\tNOUN\t_\t_\t2\tnsubj\t2:nsubj\t_\n\
//!             2\tbark\tbark\tVERB\t_\t_\t0\troot\t0:root\t_\n\n";
//! let sentences = parse(text)?;
//! assert_eq!(sentences[0].heads(), vec![2, 0]);
//! assert_eq!(sentences[0].labels(), vec!["nsubj", "root"]);
//! # Ok::<(), spantree_conllu::ConlluError>(())
//! ```

use std::path::Path;

/// One syntactic word of the basic tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// The word form (column 2).
    pub form: String,
    /// The lemma (column 3), `_` when absent.
    pub lemma: String,
    /// The universal part-of-speech tag (column 4), `_` when absent.
    pub upos: String,
    /// The language-specific tag (column 5), `_` when absent.
    pub xpos: String,
    /// The morphological features (column 6), `_` when absent.
    pub feats: String,
    /// The gold head (column 7): `0` is the root, `1..=n` the words.
    pub head: usize,
    /// The gold relation (column 8), with its subtype (`nmod:poss`).
    pub label: String,
    /// The enhanced dependencies (column 9) as `(head, relation)` pairs;
    /// heads are text because they may be empty nodes (`5.1`). Empty for `_`.
    pub enhanced: Vec<(String, String)>,
    /// The last column (column 10, `MISC`), `_` when absent.
    pub misc: String,
}

/// A sentence: its comment lines and its words in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sentence {
    /// The 1-based line of the sentence's first line (comment or token).
    pub line: usize,
    /// Comment lines without the leading `#` and surrounding spaces.
    pub comments: Vec<String>,
    /// The words `1..=n` (multiword tokens and empty nodes left out).
    pub words: Vec<Word>,
}

impl Sentence {
    /// The number of words `n`.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the sentence has no word (never true for a parsed sentence).
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The gold heads, word by word (`0` for the root).
    pub fn heads(&self) -> Vec<usize> {
        self.words.iter().map(|w| w.head).collect()
    }

    /// The gold relations, word by word.
    pub fn labels(&self) -> Vec<&str> {
        self.words.iter().map(|w| w.label.as_str()).collect()
    }

    /// The word forms.
    pub fn forms(&self) -> Vec<&str> {
        self.words.iter().map(|w| w.form.as_str()).collect()
    }

    /// The value of a `# key = value` comment (`sent_id`, `text`), if any.
    pub fn comment(&self, key: &str) -> Option<&str> {
        self.comments.iter().find_map(|c| {
            let (k, v) = c.split_once('=')?;
            (k.trim() == key).then(|| v.trim())
        })
    }
}

/// What is wrong with a CoNLL-U line; every variant names the 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConlluError {
    /// A token line without exactly ten tab-separated columns.
    #[error("line {line}: a token line needs 10 tab-separated columns, found {found}")]
    Columns {
        /// The line.
        line: usize,
        /// How many columns it had.
        found: usize,
    },
    /// An ID that is neither `k`, `k-l` nor `k.l` with decimal integers.
    #[error("line {line}: ID {id:?} is not `k`, `k-l` or `k.l`")]
    BadId {
        /// The line.
        line: usize,
        /// The ID column as written.
        id: String,
    },
    /// A word ID out of sequence (IDs must run `1, 2, …, n`).
    #[error("line {line}: expected word ID {expected}, found {found}")]
    OutOfOrder {
        /// The line.
        line: usize,
        /// The ID expected there.
        expected: usize,
        /// The ID found.
        found: usize,
    },
    /// A HEAD that is not a decimal integer (`_` included) on a word line.
    #[error("line {line}: HEAD {head:?} is not a word index")]
    BadHead {
        /// The line.
        line: usize,
        /// The HEAD column as written.
        head: String,
    },
    /// A HEAD above the sentence's word count, or equal to the word's own ID.
    #[error("line {line}: HEAD {head} is not another word of this {words}-word sentence or 0")]
    HeadOutOfRange {
        /// The line.
        line: usize,
        /// The head.
        head: usize,
        /// The sentence's word count.
        words: usize,
    },
    /// An enhanced-dependency entry that is not `head:relation`.
    #[error("line {line}: enhanced dependency {entry:?} is not `head:relation`")]
    BadEnhanced {
        /// The line.
        line: usize,
        /// The offending entry.
        entry: String,
    },
    /// A sentence of comments, multiword tokens or empty nodes but no word.
    #[error("line {line}: sentence without any word")]
    NoWords {
        /// The sentence's first line.
        line: usize,
    },
    /// The file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The path.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

impl ConlluError {
    /// A stable snake_case name of the variant (`"columns"`, `"bad_id"`,
    /// `"out_of_order"`, `"bad_head"`, `"head_out_of_range"`,
    /// `"bad_enhanced"`, `"no_words"`, `"io"`), for error records.
    pub fn kind(&self) -> &'static str {
        match self {
            ConlluError::Columns { .. } => "columns",
            ConlluError::BadId { .. } => "bad_id",
            ConlluError::OutOfOrder { .. } => "out_of_order",
            ConlluError::BadHead { .. } => "bad_head",
            ConlluError::HeadOutOfRange { .. } => "head_out_of_range",
            ConlluError::BadEnhanced { .. } => "bad_enhanced",
            ConlluError::NoWords { .. } => "no_words",
            ConlluError::Io { .. } => "io",
        }
    }

    /// The 1-based line the error is on (`None` for [`ConlluError::Io`]).
    pub fn line(&self) -> Option<usize> {
        match self {
            ConlluError::Columns { line, .. }
            | ConlluError::BadId { line, .. }
            | ConlluError::OutOfOrder { line, .. }
            | ConlluError::BadHead { line, .. }
            | ConlluError::HeadOutOfRange { line, .. }
            | ConlluError::BadEnhanced { line, .. }
            | ConlluError::NoWords { line } => Some(*line),
            ConlluError::Io { .. } => None,
        }
    }
}

/// The property the fuzz target `conllu` (in `fuzz/`) checks on any text,
/// and the regular tests replay on the stored corpus: [`parse`] and the
/// resuming [`Sentences`] return (no panic), agree with each other, every
/// sentence has words `1..=n` with heads in `0..=n` and not their own ID,
/// and every error has a kind, a message and a line inside the text.
/// `O(length)`.
///
/// # Errors
/// A description of the violated property.
///
/// ```
/// assert!(spantree_conllu::check("1\tA\ta\tX\t_\t_\t0\troot\t_\t_\n").is_ok());
/// assert!(spantree_conllu::check("garbage").is_ok()); // an error is fine
/// ```
pub fn check(text: &str) -> Result<(), String> {
    let lines = text.lines().count();
    let all: Vec<Result<Sentence, ConlluError>> = Sentences::new(text).collect();
    for item in &all {
        match item {
            Ok(s) => {
                let n = s.len();
                if n == 0 || s.line == 0 || s.line > lines {
                    return Err(format!("a sentence with {n} words at line {}", s.line));
                }
                for (i, w) in s.words.iter().enumerate() {
                    if w.head > n || w.head == i + 1 {
                        return Err(format!("word {} has head {} in {n} words", i + 1, w.head));
                    }
                }
            }
            Err(e) => {
                let line = e.line().unwrap_or(0);
                if e.kind().is_empty() || e.to_string().is_empty() || line == 0 || line > lines {
                    return Err(format!(
                        "error {e:?} without kind, message or a line in 1..={lines}"
                    ));
                }
            }
        }
    }
    let first_error = all.iter().find_map(|r| r.as_ref().err());
    match (parse(text), first_error) {
        (Ok(parsed), None) if parsed.len() == all.len() => Ok(()),
        (Err(e), Some(first)) if &e == first => Ok(()),
        (parsed, first) => Err(format!(
            "parse and Sentences disagree: {:?} vs first error {first:?}",
            parsed.map(|p| p.len())
        )),
    }
}

/// Parses a whole CoNLL-U text; the first malformed sentence is an error.
/// `O(length)`.
///
/// # Errors
/// The first [`ConlluError`]; use [`Sentences`] to skip bad sentences instead.
pub fn parse(text: &str) -> Result<Vec<Sentence>, ConlluError> {
    Sentences::new(text).collect()
}

/// Reads a CoNLL-U file, keeping the well-formed sentences and returning the
/// errors of the others alongside.
///
/// # Errors
/// [`ConlluError::Io`] when the file cannot be read (not valid UTF-8 included).
pub fn read_file(path: &Path) -> Result<(Vec<Sentence>, Vec<ConlluError>), ConlluError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConlluError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for s in Sentences::new(&text) {
        match s {
            Ok(s) => good.push(s),
            Err(e) => bad.push(e),
        }
    }
    Ok((good, bad))
}

/// An iterator over the sentences of a CoNLL-U text. After an error it
/// resumes at the next blank line, so each malformed sentence costs one
/// [`ConlluError`] and the others still come through.
#[derive(Clone, Debug)]
pub struct Sentences<'a> {
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
}

impl<'a> Sentences<'a> {
    /// Starts at the beginning of `text`.
    pub fn new(text: &'a str) -> Self {
        Sentences {
            lines: text.lines().enumerate(),
        }
    }

    /// Skips to just after the next blank line.
    fn skip_sentence(&mut self) {
        for (_, l) in self.lines.by_ref() {
            if l.trim().is_empty() {
                break;
            }
        }
    }
}

impl Iterator for Sentences<'_> {
    type Item = Result<Sentence, ConlluError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut sentence: Option<Sentence> = None;
        let mut raw_heads: Vec<(usize, usize)> = Vec::new();
        let mut tokens = 0;
        while let Some((index, raw)) = self.lines.next() {
            let line = index + 1;
            let text = raw.strip_suffix('\r').unwrap_or(raw);
            if text.trim().is_empty() {
                if tokens > 0 {
                    break;
                }
                // A block of comments alone (a file header) is no sentence.
                sentence = None;
                continue;
            }
            let s = sentence.get_or_insert_with(|| Sentence {
                line,
                comments: Vec::new(),
                words: Vec::new(),
            });
            if let Some(c) = text.strip_prefix('#') {
                s.comments.push(c.trim().to_string());
                continue;
            }
            tokens += 1;
            match token(text, line, s.words.len() + 1) {
                Ok(None) => {}
                Ok(Some(word)) => {
                    raw_heads.push((line, word.head));
                    s.words.push(word);
                }
                Err(e) => {
                    self.skip_sentence();
                    return Some(Err(e));
                }
            }
        }
        let s = sentence?;
        if tokens == 0 {
            return None; // trailing comments at the end of the text
        }
        if s.words.is_empty() {
            return Some(Err(ConlluError::NoWords { line: s.line }));
        }
        let n = s.words.len();
        for (m, &(line, head)) in raw_heads.iter().enumerate() {
            if head > n || head == m + 1 {
                return Some(Err(ConlluError::HeadOutOfRange {
                    line,
                    head,
                    words: n,
                }));
            }
        }
        Some(Ok(s))
    }
}

/// Parses one token line: `Ok(None)` for multiword tokens and empty nodes.
fn token(text: &str, line: usize, expected: usize) -> Result<Option<Word>, ConlluError> {
    let cols: Vec<&str> = text.split('\t').collect();
    if cols.len() != 10 {
        return Err(ConlluError::Columns {
            line,
            found: cols.len(),
        });
    }
    let id = cols[0];
    let bad_id = || ConlluError::BadId {
        line,
        id: id.to_string(),
    };
    let number = |s: &str| -> Option<usize> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    if let Some((a, b)) = id.split_once('-') {
        return match (number(a), number(b)) {
            (Some(a), Some(b)) if a >= 1 && a < b => Ok(None),
            _ => Err(bad_id()),
        };
    }
    if let Some((a, b)) = id.split_once('.') {
        return match (number(a), number(b)) {
            (Some(_), Some(b)) if b >= 1 => Ok(None),
            _ => Err(bad_id()),
        };
    }
    let found = number(id).ok_or_else(bad_id)?;
    if found != expected {
        return Err(ConlluError::OutOfOrder {
            line,
            expected,
            found,
        });
    }
    let head = number(cols[6]).ok_or_else(|| ConlluError::BadHead {
        line,
        head: cols[6].to_string(),
    })?;
    let enhanced = if cols[8] == "_" {
        Vec::new()
    } else {
        cols[8]
            .split('|')
            .map(|entry| match entry.split_once(':') {
                Some((h, rel)) if !h.is_empty() && !rel.is_empty() => {
                    Ok((h.to_string(), rel.to_string()))
                }
                _ => Err(ConlluError::BadEnhanced {
                    line,
                    entry: entry.to_string(),
                }),
            })
            .collect::<Result<_, _>>()?
    };
    Ok(Some(Word {
        form: cols[1].to_string(),
        lemma: cols[2].to_string(),
        upos: cols[3].to_string(),
        xpos: cols[4].to_string(),
        feats: cols[5].to_string(),
        head,
        label: cols[7].to_string(),
        enhanced,
        misc: cols[9].to_string(),
    }))
}
