//! One input record (a JSON line): JSON to a validated [`Graph`] and the
//! typed fields that some quantities read.
//!
//! The matrix is read cell by cell with visitors that know their position,
//! so that even a JSON type error names the arc (`arc 2 → 3`).

use std::borrow::Cow;
use std::cell::Cell as StdCell;
use std::fmt;
use std::io::{self, BufRead};

use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use spantree_core::layout::{self, Layout};
use spantree_core::{ArcFeatures, ArcRef, Error, Graph, Scalar};

use crate::backend::Backend;
use crate::error::LineError;

/// One value of the input matrix, before it is known to be a score or a weight.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    /// `null`: a forbidden arc (or label).
    Null,
    /// A JSON number.
    Number(f64),
    /// A JSON string: a rational weight on the exact backend.
    Text(String),
}

/// One cell `[h][m]` of the input matrix.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// An unlabeled value.
    One(Entry),
    /// One value per label.
    Labels(Vec<Entry>),
}

/// The matrix of a `"scores"` or `"weights"` field, rows as given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawMatrix(pub Vec<Vec<Cell>>);

/// One input line as read, before validation.
#[derive(Debug, Default, Deserialize)]
pub struct RawLine {
    /// The `"id"`, any JSON value (checked in [`RawLine::id`]).
    #[serde(default)]
    pub id: Option<Value>,
    /// Log-potentials.
    #[serde(default)]
    pub scores: Option<RawMatrix>,
    /// Non-negative weights.
    #[serde(default)]
    pub weights: Option<RawMatrix>,
    /// The second distribution `q` of cross-entropy and KL, as scores…
    /// (these fields are read only when a quantity needs them: see
    /// [`build_q_graph`], [`reference_tree`], [`ge_inputs`]).
    #[serde(default)]
    pub scores_q: Option<Value>,
    /// …or as weights.
    #[serde(default)]
    pub weights_q: Option<Value>,
    /// The reference head of every word, for the attachment score.
    #[serde(default)]
    pub heads: Option<Value>,
    /// The reference label of every word, for the labeled attachment score.
    #[serde(default)]
    pub labels: Option<Value>,
    /// Sparse arc features for GE: `[[h, m, [v…]], [h, m, ℓ, [v…]], …]`.
    #[serde(default)]
    pub features: Option<Value>,
    /// GE targets, one per feature.
    #[serde(default)]
    pub targets: Option<Value>,
    /// The second feature map of `covariance`, in the format of `features`.
    #[serde(default)]
    pub features_s: Option<Value>,
}

/// Just the id of a line whose body could not be read: error records keep it.
#[derive(Deserialize)]
struct IdOnly {
    #[serde(default)]
    id: Option<Value>,
}

/// The resource limits of one input record, with generous defaults for
/// real text (Universal Dependencies sentences have fewer than 300 words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest line read, in bytes (newline excluded): a longer line
    /// becomes an error record of kind `"line_too_long"` and is skipped
    /// without being held in memory. Default [`Limits::MAX_LINE_BYTES`].
    pub max_line_bytes: usize,
    /// The most words per sentence: a matrix with more than
    /// `max_words + 1` rows or columns becomes an error record of kind
    /// `"sentence_too_long"` as soon as the reader meets the extra row or
    /// cell. Default [`Limits::MAX_WORDS`].
    pub max_words: usize,
}

impl Limits {
    /// The default line limit, 64 MiB: a 300-word sentence with 40 labels
    /// written with 10 characters a score takes about 36 MB.
    pub const MAX_LINE_BYTES: usize = 64 << 20;
    /// The default sentence limit, 2000 words (`O(n³)` work: about a
    /// second per quantity on one core).
    pub const MAX_WORDS: usize = 2000;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: Self::MAX_LINE_BYTES,
            max_words: Self::MAX_WORDS,
        }
    }
}

thread_local! {
    /// The most rows and cells per row the matrix reader accepts on this
    /// thread (set by [`RawLine::parse_limited`]), and whether it refused one.
    static MAX_SIDE: StdCell<usize> = const { StdCell::new(usize::MAX) };
    static SIDE_EXCEEDED: StdCell<bool> = const { StdCell::new(false) };
}

/// Refuses a matrix side beyond the thread's limit (a serde error, turned
/// into a `"sentence_too_long"` record by [`RawLine::parse_limited`]).
fn check_side<E: de::Error>(len: usize) -> Result<(), E> {
    let max = MAX_SIDE.with(StdCell::get);
    if len > max {
        SIDE_EXCEEDED.with(|x| x.set(true));
        return Err(E::custom(format_args!("more than {max} rows or columns")));
    }
    Ok(())
}

/// The error record of a line longer than `max_line_bytes`.
pub fn line_too_long(max_line_bytes: usize) -> LineError {
    LineError {
        kind: "line_too_long",
        message: format!(
            "the line is longer than {max_line_bytes} bytes (the limit;              spantree infer --max-line-bytes raises it)"
        ),
    }
}

/// Reads one line into `line` (cleared first, newline kept) but keeps at
/// most `max + 1` bytes of it (the newline included): the rest of a longer
/// line is read and dropped. Returns the bytes consumed (0 at the end of
/// the input) and whether the line was longer than `max` bytes without its
/// newline. `O(line length)` time, `O(max)` memory.
///
/// # Errors
/// The reader's.
pub fn read_line_limited(
    input: &mut dyn BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<(usize, bool)> {
    line.clear();
    let (mut consumed, mut over) = (0, false);
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if !over {
            let content = take - usize::from(done);
            if line.len() + content > max {
                over = true;
                line.clear();
            } else {
                line.extend_from_slice(&buf[..take]);
            }
        }
        input.consume(take);
        consumed += take;
        if done {
            break;
        }
    }
    Ok((consumed, over))
}

impl RawLine {
    /// [`RawLine::parse`] with at most `max_words` words: a matrix with a
    /// longer side stops the reader at once.
    ///
    /// # Errors
    /// As [`RawLine::parse`], and kind `"sentence_too_long"` for a matrix
    /// with more than `max_words + 1` rows or cells in a row.
    pub fn parse_limited(bytes: &[u8], max_words: usize) -> Result<RawLine, (Value, LineError)> {
        let previous = MAX_SIDE.with(|x| x.replace(max_words.saturating_add(1)));
        SIDE_EXCEEDED.with(|x| x.set(false));
        let parsed = Self::parse(bytes);
        MAX_SIDE.with(|x| x.set(previous));
        match parsed {
            Err((id, _)) if SIDE_EXCEEDED.with(|x| x.replace(false)) => Err((
                id,
                LineError {
                    kind: "sentence_too_long",
                    message: format!(
                        "the matrix has more than {max_words} words (the limit; \
                         spantree infer --max-words raises it)"
                    ),
                },
            )),
            other => other,
        }
    }

    /// Parses one line of JSON.
    ///
    /// # Errors
    /// A `"parse"` error with serde's message and the column, and the id if
    /// the line is an object with a readable `"id"`.
    ///
    /// A UTF-8 byte-order mark before the line is skipped. The tokens
    /// `-Infinity`, `Infinity` and `NaN` outside strings (Python's
    /// `json.dumps` of `float('-inf')`, …) are read as those numbers. A JSON
    /// array, or a piece of pretty-printed JSON, gets a message that says so.
    pub fn parse(bytes: &[u8]) -> Result<RawLine, (Value, LineError)> {
        let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes).trim_ascii();
        // serde would also accept a struct written as an array: refuse that here.
        if bytes.first() != Some(&b'{') {
            return Err((Value::Null, LineError::parse(not_an_object(bytes))));
        }
        let rewritten = rewrite_nonfinite(bytes);
        let bytes = rewritten.as_deref().unwrap_or(bytes);
        serde_json::from_slice::<RawLine>(bytes).map_err(|e| {
            if bytes == b"{" || e.classify() == serde_json::error::Category::Eof {
                let id = Value::Null;
                return (
                    id,
                    LineError::parse(format!("{}: {PRETTY}", json_message(&e))),
                );
            }
            let id = serde_json::from_slice::<IdOnly>(bytes)
                .ok()
                .and_then(|x| x.id)
                .filter(valid_id)
                .unwrap_or(Value::Null);
            (id, LineError::parse(json_message(&e)))
        })
    }

    /// The id to echo: a string or a number, `null` when absent.
    ///
    /// # Errors
    /// A `"parse"` error for any other JSON type.
    pub fn id(&self) -> Result<Value, LineError> {
        match &self.id {
            None => Ok(Value::Null),
            Some(v) if valid_id(v) => Ok(v.clone()),
            Some(_) => Err(LineError::parse("\"id\" must be a string or a number")),
        }
    }
}

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

const PRETTY: &str = "the input is JSON lines, one whole object per line: \
     pretty-printed JSON spreads one object over many lines (compact it, e.g. `jq -c .`)";

/// The message for a line that does not start with `{`.
fn not_an_object(bytes: &[u8]) -> String {
    match bytes.first() {
        Some(b'[') => "this line is a JSON array, but the input is JSON lines: one object \
             ({\"id\": …, \"scores\": …}) per line; a JSON array file converts with \
             `jq -c '.[]'`"
            .to_owned(),
        Some(b'"' | b'}' | b']' | b',') => {
            format!("this line is a piece of a JSON object, not one: {PRETTY}")
        }
        _ => "a line must be a JSON object ({\"id\": …, \"scores\": …})".to_owned(),
    }
}

/// Marks the strings that stand for the non-finite tokens (a NUL first:
/// no rational or id starts with it).
const NONFINITE: [(&[u8], &[u8], f64); 3] = [
    (b"-Infinity", b"\"\\u0000-Infinity\"", f64::NEG_INFINITY),
    (b"Infinity", b"\"\\u0000Infinity\"", f64::INFINITY),
    (b"NaN", b"\"\\u0000NaN\"", f64::NAN),
];

/// The number a marker string of [`rewrite_nonfinite`] stands for.
fn nonfinite(text: &str) -> Option<f64> {
    let token = text.strip_prefix('\0')?;
    NONFINITE
        .iter()
        .find(|(t, _, _)| t == &token.as_bytes())
        .map(|&(_, _, x)| x)
}

/// The line with the tokens `-Infinity`, `Infinity` and `NaN` outside
/// strings replaced by marker strings that the matrix reader turns back
/// into numbers; `None` (no copy) when there are none. `O(length)`.
fn rewrite_nonfinite(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let (mut i, mut in_string, mut escaped) = (0, false, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if let Some((token, marker, _)) = matches!(b, b'-' | b'I' | b'N')
            .then(|| NONFINITE.iter().find(|(t, _, _)| bytes[i..].starts_with(t)))
            .flatten()
        {
            let out = out.get_or_insert_with(|| bytes[..i].to_vec());
            out.extend_from_slice(marker);
            i += token.len();
            continue;
        }
        if let Some(out) = out.as_mut() {
            out.push(b);
        }
        i += 1;
    }
    out
}

fn valid_id(v: &Value) -> bool {
    matches!(v, Value::Null | Value::String(_) | Value::Number(_))
}

/// serde_json's message with "at line 1 column c" turned into "at column c":
/// a line of input is always line 1 to serde_json.
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let head = text.strip_suffix(&suffix).unwrap_or(&text);
    let what = match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => "invalid JSON: ",
        _ => "",
    };
    if e.column() == 0 {
        format!("{what}{head}")
    } else {
        format!("{what}{head} (at column {})", e.column())
    }
}

// ---------------------------------------------------------------- reading

impl<'de> Deserialize<'de> for RawMatrix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(MatrixVisitor)
    }
}

struct MatrixVisitor;

impl<'de> Visitor<'de> for MatrixVisitor {
    type Value = RawMatrix;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an (n+1)×(n+1) matrix (an array of rows)")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawMatrix, A::Error> {
        let mut rows = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(row) = seq.next_element_seed(RowSeed { head: rows.len() })? {
            rows.push(row);
            check_side(rows.len())?;
        }
        Ok(RawMatrix(rows))
    }
}

struct RowSeed {
    head: usize,
}

impl<'de> DeserializeSeed<'de> for RowSeed {
    type Value = Vec<Cell>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Cell>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowSeed {
    type Value = Vec<Cell>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "row {} as an array", self.head)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Cell>, A::Error> {
        // Rows of a well-formed matrix are all as long as the first one.
        let mut cells = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(cell) = seq.next_element_seed(CellSeed {
            head: self.head,
            dependent: cells.len(),
            label: None,
        })? {
            cells.push(cell);
            check_side(cells.len())?;
        }
        Ok(cells)
    }
}

/// Reads one cell, or (with `label` set) one label value inside a cell.
#[derive(Clone, Copy)]
struct CellSeed {
    head: usize,
    dependent: usize,
    label: Option<usize>,
}

impl CellSeed {
    fn arc(self) -> ArcRef {
        ArcRef {
            head: self.head,
            dependent: self.dependent,
            label: self.label,
        }
    }
}

impl<'de> DeserializeSeed<'de> for CellSeed {
    type Value = Cell;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cell, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CellSeed {
    type Value = Cell;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.label.is_some() {
            write!(f, "a number, null or a string for {}", self.arc())
        } else {
            write!(
                f,
                "a number, null, a string or an array of those (one per label) for {}",
                self.arc()
            )
        }
    }
    fn visit_unit<E: de::Error>(self) -> Result<Cell, E> {
        Ok(Cell::One(Entry::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<Cell, E> {
        Ok(Cell::One(Entry::Null))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Cell, E> {
        Ok(Cell::One(Entry::Number(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Cell, E> {
        Ok(Cell::One(Entry::Number(v as f64)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Cell, E> {
        Ok(Cell::One(Entry::Number(v as f64)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cell, E> {
        Ok(Cell::One(match nonfinite(v) {
            Some(x) => Entry::Number(x),
            None => Entry::Text(v.to_owned()),
        }))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Cell, E> {
        Ok(Cell::One(match nonfinite(&v) {
            Some(x) => Entry::Number(x),
            None => Entry::Text(v),
        }))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Cell, A::Error> {
        if self.label.is_some() {
            return Err(de::Error::invalid_type(de::Unexpected::Seq, &self));
        }
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            let seed = CellSeed {
                label: Some(values.len()),
                ..self
            };
            match seq.next_element_seed(seed)? {
                Some(Cell::One(e)) => values.push(e),
                // A label seed never yields an array: `visit_seq` refuses it above.
                Some(Cell::Labels(_)) => {
                    return Err(de::Error::invalid_type(de::Unexpected::Seq, &seed))
                }
                None => break,
            }
        }
        Ok(Cell::Labels(values))
    }
}

// ------------------------------------------------------------- validation

/// A validated graph of one line: scores stay `f64` (the backend converts
/// them through `exp`); weights are read straight into the backend's scalar,
/// so that rational strings are exact.
#[derive(Debug)]
pub enum LineGraph<S> {
    /// From `"scores"`.
    Scores(Graph<f64>),
    /// From `"weights"`.
    Weights(Graph<S>),
}

impl<S: Scalar> LineGraph<S> {
    /// The number of words.
    pub fn n(&self) -> usize {
        match self {
            LineGraph::Scores(g) => g.n(),
            LineGraph::Weights(g) => g.n(),
        }
    }

    /// Whether the input gave one value per label.
    pub fn is_labeled(&self) -> bool {
        match self {
            LineGraph::Scores(g) => g.is_labeled(),
            LineGraph::Weights(g) => g.is_labeled(),
        }
    }

    /// The number of labels (`1` for unlabeled graphs).
    pub fn labels(&self) -> usize {
        match self {
            LineGraph::Scores(g) => g.labels(),
            LineGraph::Weights(g) => g.labels(),
        }
    }
}

/// Validates a parsed line into a graph for backend `E`.
///
/// # Errors
/// `"parse"` when neither or both of `"scores"` and `"weights"` are given or
/// a value has the wrong type; otherwise the kind of the [`Error`] that
/// [`Graph`] validation raised, with its message naming the arc.
pub fn build_graph<B: Backend>(line: &RawLine) -> Result<LineGraph<B::Scalar>, LineError> {
    build_graph_in::<B>(line, Layout::Spantree)
}

/// [`build_graph`] for a matrix in `layout` (see [`spantree_core::layout`]).
///
/// # Errors
/// As [`build_graph`]; a wrong shape names the row as given.
pub fn build_graph_in<B: Backend>(
    line: &RawLine,
    layout: Layout,
) -> Result<LineGraph<B::Scalar>, LineError> {
    let scores = line
        .scores
        .as_ref()
        .map(|m| to_spantree(m, layout))
        .transpose()?;
    let weights = line
        .weights
        .as_ref()
        .map(|m| to_spantree(m, layout))
        .transpose()?;
    match (&scores, &weights) {
        (Some(_), Some(_)) => Err(LineError::parse(
            "give either \"scores\" or \"weights\", not both",
        )),
        (None, None) => Err(LineError::parse(
            "missing \"scores\" or \"weights\" (an (n+1)×(n+1) matrix)",
        )),
        (scores, weights) => graph_of::<B>(scores.as_deref(), weights.as_deref()),
    }
}

/// The graph of `q` from `"scores_q"` or `"weights_q"` (either form,
/// whichever form `p` has), with the conventions of [`build_graph`].
///
/// # Errors
/// `"missing_field"` when neither is given, `"parse"` when both are; as
/// [`build_graph`] otherwise, the message prefixed with the field.
pub fn build_q_graph<B: Backend>(line: &RawLine) -> Result<LineGraph<B::Scalar>, LineError> {
    build_q_graph_in::<B>(line, Layout::Spantree)
}

/// [`build_q_graph`] for a matrix in `layout`.
///
/// # Errors
/// As [`build_q_graph`].
pub fn build_q_graph_in<B: Backend>(
    line: &RawLine,
    layout: Layout,
) -> Result<LineGraph<B::Scalar>, LineError> {
    let read = |v: &Value, field: &str| {
        RawMatrix::deserialize(v)
            .map_err(|e| LineError::parse(json_message(&e)))
            .and_then(|m| to_spantree(&m, layout).map(Cow::into_owned))
            .map_err(|e| e.within(field))
    };
    match (&line.scores_q, &line.weights_q) {
        (Some(_), Some(_)) => Err(LineError::parse(
            "give either \"scores_q\" or \"weights_q\", not both",
        )),
        (None, None) => Err(LineError::missing(
            "scores_q",
            "cross_entropy and kl need q as \"scores_q\" (or \"weights_q\"), in the layout of \"scores\"",
        )),
        (Some(v), None) => graph_of::<B>(Some(&read(v, "in \"scores_q\"")?), None)
            .map_err(|e| e.within("in \"scores_q\"")),
        (None, Some(v)) => graph_of::<B>(None, Some(&read(v, "in \"weights_q\"")?))
            .map_err(|e| e.within("in \"weights_q\"")),
    }
}

/// The raw matrix in spantree's layout (borrowed when it is in it already).
fn to_spantree(m: &RawMatrix, layout: Layout) -> Result<Cow<'_, RawMatrix>, LineError> {
    if layout == Layout::Spantree {
        return Ok(Cow::Borrowed(m));
    }
    Ok(Cow::Owned(RawMatrix(
        layout.to_spantree(&m.0, Cell::One(Entry::Null))?,
    )))
}

/// When the `"scores"` of a line, read in spantree's layout, look like
/// another layout ([`layout::suspect`]): a sentence to add to its error.
pub fn layout_hint(line: &RawLine) -> Option<String> {
    let m = line.scores.as_ref()?;
    let number = |e: &Entry| match e {
        Entry::Null => f64::NEG_INFINITY,
        Entry::Number(x) => *x,
        Entry::Text(_) => f64::NAN,
    };
    let rows: Vec<Vec<f64>> =
        m.0.iter()
            .map(|r| {
                r.iter()
                    .map(|c| match c {
                        Cell::One(e) => number(e),
                        // The largest label's score stands for the cell.
                        Cell::Labels(v) => v.iter().map(number).fold(f64::NEG_INFINITY, f64::max),
                    })
                    .collect()
            })
            .collect();
    let (layout, why) = layout::suspect(&rows)?;
    Some(format!(
        "hint: {why}; if so, give the layout \"{layout}\" (spantree infer --layout {layout})"
    ))
}

fn graph_of<B: Backend>(
    scores: Option<&RawMatrix>,
    weights: Option<&RawMatrix>,
) -> Result<LineGraph<B::Scalar>, LineError> {
    match (scores, weights) {
        (Some(m), None) => {
            let read = |e: &Entry, arc: ArcRef| match e {
                Entry::Null => Ok(f64::NEG_INFINITY),
                Entry::Number(x) => Ok(*x),
                Entry::Text(t) => Err(LineError::parse(format!(
                    "score of {arc} is a string ({t:?}); scores are numbers or null"
                ))),
            };
            // A single value that forbids every label of a labeled arc: -∞, or
            // a mask whose weight underflows `f64` (`-1e9`, SuPar's `-1e32`).
            let forbidden = |x: &f64| *x <= UNDERFLOW_SCORE;
            Ok(match tabulate(&m.0, read, forbidden, f64::NEG_INFINITY)? {
                Table::Plain(rows) => LineGraph::Scores(Graph::from_scores(&rows)?),
                Table::Labeled(rows) => LineGraph::Scores(Graph::from_labeled_scores(&rows)?),
            })
        }
        (None, Some(m)) => {
            let read = |e: &Entry, arc: ArcRef| match e {
                Entry::Null => Ok(B::Scalar::zero()),
                Entry::Number(x) => Ok(B::Scalar::from_f64(*x)),
                Entry::Text(t) => B::weight_from_str(t)
                    .map_err(|why| LineError::parse(format!("weight of {arc} {why}"))),
            };
            let forbidden = |x: &B::Scalar| x.is_zero();
            Ok(match tabulate(&m.0, read, forbidden, B::Scalar::zero())? {
                Table::Plain(rows) => LineGraph::Weights(Graph::from_weights(&rows)?),
                Table::Labeled(rows) => LineGraph::Weights(Graph::from_labeled_weights(&rows)?),
            })
        }
        // `build_graph` and `build_q_graph` pass exactly one of the two.
        _ => Err(LineError::parse(
            "give exactly one of \"scores\" and \"weights\"",
        )),
    }
}

enum Table<W> {
    Plain(Vec<Vec<W>>),
    Labeled(Vec<Vec<Vec<W>>>),
}

/// Converts the cells, checks the shape, and turns the cells that are not
/// arcs (column 0, the diagonal) into `forbidden` when they hold `null` or
/// `0`. Everything else (signs, NaN, label counts) is left to [`Graph`].
fn tabulate<W: Clone>(
    rows: &[Vec<Cell>],
    read: impl Fn(&Entry, ArcRef) -> Result<W, LineError>,
    is_forbidden: impl Fn(&W) -> bool,
    forbidden: W,
) -> Result<Table<W>, LineError> {
    let size = rows.len();
    if size <= 1 {
        return Err(Error::Empty.into());
    }
    for (row, cells) in rows.iter().enumerate() {
        if cells.len() != size {
            return Err(Error::Shape {
                row,
                found: cells.len(),
                expected: size,
            }
            .into());
        }
    }
    let arc = |head, dependent, label| ArcRef {
        head,
        dependent,
        label,
    };
    // Non-arcs (column 0, the diagonal) are ignored whatever they hold; the
    // first arc whose cell is an array sets the label count.
    let labels = rows.iter().enumerate().find_map(|(h, cells)| {
        cells.iter().enumerate().find_map(|(m, c)| match c {
            Cell::Labels(v) if m != 0 && m != h => Some((arc(h, m, None), v.len())),
            _ => None,
        })
    });
    let Some((first, labels)) = labels else {
        let mut out = Vec::with_capacity(size);
        for (h, cells) in rows.iter().enumerate() {
            let mut row = Vec::with_capacity(size);
            for (m, cell) in cells.iter().enumerate() {
                let a = arc(h, m, None);
                match cell {
                    _ if m == 0 || m == h => row.push(forbidden.clone()),
                    Cell::One(e) => row.push(read(e, a)?),
                    // `labels` is None: no arc's cell is an array.
                    Cell::Labels(_) => return Err(Error::NoLabels.into()),
                }
            }
            out.push(row);
        }
        return Ok(Table::Plain(out));
    };
    if labels == 0 {
        return Err(LineError {
            kind: "no_labels",
            message: format!(
                "{first} has an empty array: a labeled graph needs at least one label value per arc"
            ),
        });
    }
    let mut out = Vec::with_capacity(size);
    for (h, cells) in rows.iter().enumerate() {
        let mut row = Vec::with_capacity(size);
        for (m, cell) in cells.iter().enumerate() {
            let exists = m != 0 && m != h;
            let values = match cell {
                _ if !exists => vec![forbidden.clone(); labels],
                Cell::Labels(v) if v.len() != labels => {
                    return Err(Error::LabelCount {
                        arc: arc(h, m, None),
                        found: v.len(),
                        expected: labels,
                    }
                    .into());
                }
                // A single null, zero weight or mask forbids every label of the arc.
                Cell::One(e) => {
                    if !is_forbidden(&read(e, arc(h, m, None))?) {
                        return Err(Error::LabelCount {
                            arc: arc(h, m, None),
                            found: 1,
                            expected: labels,
                        }
                        .into());
                    }
                    vec![forbidden.clone(); labels]
                }
                Cell::Labels(v) => v
                    .iter()
                    .enumerate()
                    .map(|(l, e)| read(e, arc(h, m, Some(l))))
                    .collect::<Result<Vec<W>, _>>()?,
            };
            row.push(values);
        }
        out.push(row);
    }
    Ok(Table::Labeled(out))
}

/// `ln` of half the smallest positive `f64`, `−1075 ln 2 ≈ −745.13`: a
/// score at or below it has weight `e^θ = 0` in `f64`. A single such score
/// in a labeled arc's cell forbids all of its labels, like `null`.
pub const UNDERFLOW_SCORE: f64 = -745.133_219_101_941_1;

// ------------------------------------------- the fields some quantities read

/// The reference tree of the attachment score: `"heads"` (`heads[i]` is the
/// head of word `i + 1`, `0` the root) and, when given, `"labels"` (label
/// indices, `0`-based). Their lengths and arcs are checked against the graph
/// by the library ([`Error::Mismatch`], [`Error::NoSuchArc`]).
///
/// # Errors
/// `"missing_field"` without `"heads"`; `"parse"` naming the position of an
/// entry that is not a non-negative integer.
pub fn reference_tree(line: &RawLine) -> Result<(Vec<usize>, Option<Vec<usize>>), LineError> {
    let Some(heads) = &line.heads else {
        return Err(LineError::missing(
            "heads",
            "expected_attachment needs the reference heads, \"heads\": [h1, …, hn]",
        ));
    };
    let heads = indices(heads, "heads", "a node index")?;
    let labels = match &line.labels {
        Some(labels) => Some(indices(labels, "labels", "a label index")?),
        None => None,
    };
    Ok((heads, labels))
}

fn indices(v: &Value, field: &str, what: &str) -> Result<Vec<usize>, LineError> {
    let Value::Array(items) = v else {
        return Err(LineError::parse(format!(
            "{field:?} must be an array of non-negative integers ({what} per word), found {}",
            kind_of(v)
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, x)| index(x).ok_or_else(|| bad_index(field, i, what, x)))
        .collect()
}

fn index(x: &Value) -> Option<usize> {
    x.as_u64().and_then(|k| usize::try_from(k).ok())
}

fn bad_index(field: &str, i: usize, what: &str, x: &Value) -> LineError {
    LineError::parse(format!(
        "{field:?}[{i}] must be {what} (a non-negative integer), found {x}"
    ))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A number of the line other than a weight (a feature value, a target): a
/// JSON number, or on the exact backend a rational string.
fn number<B: Backend>(v: &Value, what: &str) -> Result<B::Scalar, LineError> {
    match v {
        Value::Number(x) => x
            .as_f64()
            .map(B::Scalar::from_f64)
            .ok_or_else(|| LineError::parse(format!("{what} is not a finite number ({x})"))),
        Value::String(t) => match nonfinite(t) {
            Some(x) => Err(LineError::parse(format!(
                "{what} is not a finite number ({x})"
            ))),
            None => B::weight_from_str(t).map_err(|why| LineError::parse(format!("{what} {why}"))),
        },
        other => Err(LineError::parse(format!(
            "{what} must be a number, found {}",
            kind_of(other)
        ))),
    }
}

/// The arc features and targets of the GE objective.
#[derive(Clone, Debug, PartialEq)]
pub struct GeInputs<S> {
    /// `f_e`, sparse.
    pub features: ArcFeatures<S>,
    /// `t`, one per feature.
    pub targets: Vec<S>,
}

/// The arc features and targets of the GE objective for a graph of `n`
/// words and `labels` labels (`1` when unlabeled). `"targets"` is
/// `[t1, …, tF]`; every entry of `"features"` is `[h, m, [v1, …, vF]]` (for
/// every label of the arc) or `[h, m, ℓ, [v1, …, vF]]` (label `ℓ` only);
/// arcs not listed have all-zero features, entries for the same arc add up.
///
/// # Errors
/// `"missing_field"` without `"features"` or `"targets"`; `"parse"` naming
/// the position of a malformed entry; `"no_such_arc"` for an entry whose arc
/// (or label) is not in the graph; `"mismatch"` for an entry whose number of
/// values is not the number of targets.
pub fn ge_inputs<B: Backend>(
    line: &RawLine,
    n: usize,
    labels: usize,
) -> Result<GeInputs<B::Scalar>, LineError> {
    let need = "ge needs \"features\": [[h, m, [v1, …, vF]], …] and \"targets\": [t1, …, tF]";
    let (Some(features), Some(targets)) = (&line.features, &line.targets) else {
        let field = if line.features.is_none() {
            "features"
        } else {
            "targets"
        };
        return Err(LineError::missing(field, need));
    };
    let Value::Array(targets) = targets else {
        return Err(LineError::parse(format!(
            "\"targets\" must be an array of numbers, found {}",
            kind_of(targets)
        )));
    };
    let targets = targets
        .iter()
        .enumerate()
        .map(|(i, t)| number::<B>(t, &format!("\"targets\"[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let features = arc_features::<B>(features, "features", Some(targets.len()), n, labels)?;
    Ok(GeInputs { features, targets })
}

/// The two feature maps of `covariance`: `"features"`, and `"features_s"`
/// when the line has it (`None`: the covariance of `"features"` with itself).
///
/// # Errors
/// `"missing_field"` without `"features"`; otherwise as [`arc_features`].
pub fn covariance_inputs<B: Backend>(
    line: &RawLine,
    n: usize,
    labels: usize,
) -> Result<CovarianceInputs<B::Scalar>, LineError> {
    let Some(r) = &line.features else {
        return Err(LineError::missing(
            "features",
            "covariance needs \"features\": [[h, m, [v1, …, vR]], …] \
             (and optionally \"features_s\" in the same format)",
        ));
    };
    let r = arc_features::<B>(r, "features", None, n, labels)?;
    let s = match &line.features_s {
        Some(s) => Some(arc_features::<B>(s, "features_s", None, n, labels)?),
        None => None,
    };
    Ok(CovarianceInputs { r, s })
}

/// The feature maps of `covariance`.
#[derive(Clone, Debug, PartialEq)]
pub struct CovarianceInputs<S> {
    /// `r`, from `"features"`: the rows.
    pub r: ArcFeatures<S>,
    /// `s`, from `"features_s"`, or `None` for `r` itself: the columns.
    pub s: Option<ArcFeatures<S>>,
}

/// Sparse arc features from the JSON `value` of the line's field `field`:
/// entries `[h, m, [v…]]` (every label of the arc) or `[h, m, ℓ, [v…]]`
/// (label `ℓ` only), for a graph of `n` words and `labels` labels. Every
/// entry has `dim` values, or with `dim = None` as many as the first entry
/// (an empty list then has dimension 0).
///
/// # Errors
/// `"parse"` naming the position of a malformed entry; `"no_such_arc"` for
/// an entry whose arc (or label) is not in the graph; `"mismatch"` for an
/// entry with the wrong number of values.
pub fn arc_features<B: Backend>(
    value: &Value,
    field: &str,
    dim: Option<usize>,
    n: usize,
    labels: usize,
) -> Result<ArcFeatures<B::Scalar>, LineError> {
    let Value::Array(entries) = value else {
        return Err(LineError::parse(format!(
            "{field:?} must be an array of [h, m, [v1, …, vF]] entries, found {}",
            kind_of(value)
        )));
    };
    // Without targets the first entry fixes the dimension (a malformed first
    // entry is reported by the loop below).
    let (dim, against) = match dim {
        Some(d) => (d, "\"targets\"".to_owned()),
        None => {
            let first = entries
                .first()
                .and_then(Value::as_array)
                .and_then(|parts| parts.last())
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            (first, format!("{field:?}[0]"))
        }
    };
    let mut out = ArcFeatures::new(dim);
    for (k, entry) in entries.iter().enumerate() {
        let at = format!("{field:?}[{k}]");
        let shape = || {
            LineError::parse(format!(
                "{at} must be [h, m, [v1, …, vF]] or [h, m, label, [v1, …, vF]], found {entry}"
            ))
        };
        let Value::Array(parts) = entry else {
            return Err(shape());
        };
        let (arc, values) = match parts.as_slice() {
            [h, m, Value::Array(values)] => ((h, m, None), values),
            [h, m, l, Value::Array(values)] => ((h, m, Some(l)), values),
            _ => return Err(shape()),
        };
        let (Some(head), Some(dependent)) = (index(arc.0), index(arc.1)) else {
            return Err(shape());
        };
        let label = match arc.2 {
            Some(l) => Some(index(l).ok_or_else(shape)?),
            None => None,
        };
        let arc = ArcRef {
            head,
            dependent,
            label,
        };
        let exists = head <= n
            && (1..=n).contains(&dependent)
            && head != dependent
            && label.is_none_or(|l| l < labels);
        if !exists {
            return Err(LineError::from(Error::NoSuchArc { arc, n }).within(&at));
        }
        if values.len() != dim {
            return Err(LineError {
                kind: "mismatch",
                message: format!(
                    "{at} ({arc}) has {} feature values, but {against} has {dim}",
                    values.len()
                ),
            });
        }
        let mut sparse = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let x = number::<B>(v, &format!("{at} value {i}"))?;
            if !x.is_zero() {
                sparse.push((i, x));
            }
        }
        out.push(arc, sparse)?;
    }
    Ok(out)
}
