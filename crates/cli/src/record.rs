//! One input line to one output line: a result record or an error record.

use serde_json::Value;
use spantree_core::{Matrix, Model, Rooting};

use crate::args::Quantity;
use crate::engine::{write_f64, write_string, Engine};
use crate::input::{build_graph, LineError, LineGraph, RawLine};

/// What every line is computed with.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Single- or multi-root trees.
    pub rooting: Rooting,
    /// The `"backend"` field of the output.
    pub backend_name: &'static str,
    /// The quantities, sorted and without repeats (the output order).
    pub quantities: Vec<Quantity>,
    /// Marginals as exact rational strings (exact backend only).
    pub exact_output: bool,
}

impl Settings {
    /// Settings from the requested quantities (in any order, with repeats):
    /// `marginals` brings `label_marginals` along for labeled input.
    pub fn new(
        rooting: Rooting,
        backend_name: &'static str,
        quantities: &[Quantity],
        exact_output: bool,
    ) -> Self {
        let mut quantities = quantities.to_vec();
        if quantities.contains(&Quantity::Marginals) {
            quantities.push(Quantity::LabelMarginals);
        }
        quantities.sort();
        quantities.dedup();
        Settings {
            rooting,
            backend_name,
            quantities,
            exact_output,
        }
    }
}

/// What became of one input line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Outcome {
    /// A blank line: no output, but it counts for line numbers.
    #[default]
    Blank,
    /// A result record was written.
    Done,
    /// An error record was written.
    Failed,
}

/// Processes one input line (`line` is its 1-based number) into `out`,
/// which is cleared first and holds one JSON object without newline after.
pub fn process_line<E: Engine>(
    engine: &E,
    settings: &Settings,
    line: usize,
    bytes: &[u8],
    out: &mut Vec<u8>,
) -> Outcome {
    out.clear();
    let bytes = bytes.trim_ascii();
    if bytes.is_empty() {
        return Outcome::Blank;
    }
    let raw = match RawLine::parse(bytes) {
        Ok(raw) => raw,
        Err((id, e)) => {
            write_error(&id, line, &e, out);
            return Outcome::Failed;
        }
    };
    let id = match raw.id() {
        Ok(id) => id,
        Err(e) => {
            write_error(&Value::Null, line, &e, out);
            return Outcome::Failed;
        }
    };
    match write_result(engine, settings, &raw, &id, out) {
        Ok(()) => Outcome::Done,
        Err(e) => {
            out.clear();
            write_error(&id, line, &e, out);
            Outcome::Failed
        }
    }
}

/// Builds the model of one parsed line and writes its result record.
///
/// # Errors
/// Any validation, structural (no spanning tree) or numerical error; `out`
/// then holds a partial record that the caller discards.
pub fn write_result<E: Engine>(
    engine: &E,
    settings: &Settings,
    raw: &RawLine,
    id: &Value,
    out: &mut Vec<u8>,
) -> Result<(), LineError> {
    let graph = build_graph::<E>(raw)?;
    let model = match &graph {
        LineGraph::Scores(g) => Model::new(engine.clone(), g, settings.rooting)?,
        LineGraph::Weights(g) => Model::from_scalar_graph(engine.clone(), g, settings.rooting)?,
    };
    model.spanning_tree()?;

    out.extend_from_slice(b"{\"id\":");
    write_value(id, out);
    out.extend_from_slice(format!(",\"n\":{},\"rooting\":", graph.n()).as_bytes());
    write_string(settings.rooting.name(), out);
    out.extend_from_slice(b",\"backend\":");
    write_string(settings.backend_name, out);
    for q in &settings.quantities {
        match q {
            Quantity::LogZ => {
                out.extend_from_slice(b",\"log_z\":");
                write_f64(model.log_partition()?, out)?;
                if E::EXACT {
                    if let Some(z) = E::exact_text(&model.partition()?) {
                        out.extend_from_slice(b",\"z\":");
                        write_string(&z, out);
                    }
                }
            }
            Quantity::Marginals => {
                out.extend_from_slice(b",\"marginals\":");
                write_matrix::<E>(&model.marginals()?, settings.exact_output, out)?;
            }
            Quantity::LabelMarginals if graph.is_labeled() => {
                out.extend_from_slice(b",\"label_marginals\":");
                write_label_matrices::<E>(&model.label_marginals()?, settings.exact_output, out)?;
            }
            Quantity::LabelMarginals => {}
        }
    }
    out.push(b'}');
    Ok(())
}

/// Writes `{"id":…,"line":k,"error":{"kind":…,"message":…}}`.
pub fn write_error(id: &Value, line: usize, error: &LineError, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"id\":");
    write_value(id, out);
    out.extend_from_slice(format!(",\"line\":{line},\"error\":{{\"kind\":").as_bytes());
    write_string(error.kind, out);
    out.extend_from_slice(b",\"message\":");
    write_string(&error.message, out);
    out.extend_from_slice(b"}}");
}

fn write_value(v: &Value, out: &mut Vec<u8>) {
    // A Value holds no NaN, and writing to a Vec cannot fail.
    let _ = serde_json::to_writer(out, v);
}

fn write_matrix<E: Engine>(
    m: &Matrix<E::Scalar>,
    exact: bool,
    out: &mut Vec<u8>,
) -> Result<(), LineError> {
    out.push(b'[');
    for i in 0..m.rows() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'[');
        for (j, x) in m.row(i).iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            E::write_json(x, exact, out)?;
        }
        out.push(b']');
    }
    out.push(b']');
    Ok(())
}

/// `[h][m][ℓ]` from one matrix per label.
fn write_label_matrices<E: Engine>(
    per_label: &[Matrix<E::Scalar>],
    exact: bool,
    out: &mut Vec<u8>,
) -> Result<(), LineError> {
    let Some(first) = per_label.first() else {
        out.extend_from_slice(b"[]");
        return Ok(());
    };
    out.push(b'[');
    for h in 0..first.rows() {
        if h > 0 {
            out.push(b',');
        }
        out.push(b'[');
        for m in 0..first.cols() {
            if m > 0 {
                out.push(b',');
            }
            out.push(b'[');
            for (l, matrix) in per_label.iter().enumerate() {
                if l > 0 {
                    out.push(b',');
                }
                E::write_json(&matrix[(h, m)], exact, out)?;
            }
            out.push(b']');
        }
        out.push(b']');
    }
    out.push(b']');
    Ok(())
}
