//! One input line to one output line: a result record or an error record.

use serde_json::Value;
use spantree_core::{baseline, ArcRef, Divergence, Error, GradientPair, Matrix, Model, Rooting};

use crate::args::{Algorithms, EntropyBy, GradGeBy, LogZBy, MarginalsBy, Quantity};
use crate::engine::{write_f64, write_string, Backend, Logarithms};
use crate::input::{
    build_graph, build_q_graph, covariance_inputs, ge_inputs, reference_tree, GeInputs, LineError,
    LineGraph, RawLine,
};

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
    /// The algorithm of each quantity that has a choice (defaults: the fast ones).
    pub algorithms: Algorithms,
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
            algorithms: Algorithms::default(),
        }
    }

    /// The same settings with other algorithms (`--algorithm`).
    pub fn with_algorithms(mut self, algorithms: Algorithms) -> Self {
        self.algorithms = algorithms;
        self
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
pub fn process_line<E: Backend>(
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
/// Any validation, structural (no spanning tree) or numerical error, and
/// missing or malformed fields that a requested quantity reads; `out` then
/// holds a partial record that the caller discards.
pub fn write_result<E: Backend>(
    engine: &E,
    settings: &Settings,
    raw: &RawLine,
    id: &Value,
    out: &mut Vec<u8>,
) -> Result<(), LineError> {
    let graph = build_graph::<E>(raw)?;
    let model = model_of(engine, &graph, settings.rooting)?;
    model.spanning_tree()?;

    out.extend_from_slice(b"{\"id\":");
    write_value(id, out);
    out.extend_from_slice(format!(",\"n\":{},\"rooting\":", graph.n()).as_bytes());
    write_string(settings.rooting.name(), out);
    out.extend_from_slice(b",\"backend\":");
    write_string(settings.backend_name, out);
    let mut line = Line {
        engine,
        raw,
        settings,
        model: &model,
        labeled: graph.is_labeled(),
        labels: graph.labels(),
        q: None,
        ge: None,
    };
    let exact = settings.exact_output;
    let algorithms = settings.algorithms;
    for &q in &settings.quantities {
        let name = q.name();
        match q {
            Quantity::LogZ => {
                let (log_z, z) = match algorithms.log_z {
                    LogZBy::Lu => (model.log_partition()?, E::EXACT.then(|| model.partition())),
                    LogZBy::Minors => (
                        baseline::log_partition_by_minors(&model)?,
                        E::EXACT.then(|| baseline::partition_by_minors(&model)),
                    ),
                };
                field(name, out);
                write_f64(log_z, out)?;
                if let Some(z) = z {
                    if let Some(z) = E::exact_text(&z?) {
                        field("z", out);
                        write_string(&z, out);
                    }
                }
            }
            Quantity::Marginals => {
                let mu = match algorithms.marginals {
                    MarginalsBy::Inverse => model.marginals()?,
                    MarginalsBy::McDonaldSatta => baseline::marginals_by_zeroing(&model)?,
                };
                field(name, out);
                write_matrix::<E>(&mu, exact, out)?;
            }
            Quantity::LabelMarginals if line.labeled => {
                field(name, out);
                write_label_matrices::<E>(&model.label_marginals()?, exact, out)?;
            }
            Quantity::LabelMarginals => {}
            Quantity::Entropy => {
                let logs = logarithms::<E>(q)?;
                let entropy = match algorithms.entropy {
                    EntropyBy::Expectation => logs.entropy,
                    EntropyBy::SmithEisner => logs.entropy_by_columns,
                };
                field(name, out);
                E::write_json(&entropy(&model)?, exact, out)?;
            }
            Quantity::GradEntropy => {
                let grad = (logarithms::<E>(q)?.grad_entropy)(&model)?;
                line.write_gradient(name, &grad, out)?;
            }
            Quantity::CrossEntropy | Quantity::Kl => {
                let logs = logarithms::<E>(q)?;
                let divergence = if q == Quantity::Kl {
                    logs.kl
                } else {
                    logs.cross_entropy
                };
                let value = divergence(&model, line.q_model()?)?;
                line.write_divergence(name, &value, out)?;
            }
            Quantity::GradCrossEntropy | Quantity::GradKl => {
                let logs = logarithms::<E>(q)?;
                let (gradient, what) = if q == Quantity::GradKl {
                    (logs.grad_kl, "KL(p ‖ q)")
                } else {
                    (logs.grad_cross_entropy, "H(p, q)")
                };
                let GradientPair { wrt_p, wrt_q } =
                    gradient(&model, line.q_model()?).map_err(|e| infinite(name, what, e))?;
                line.write_gradient(name, &wrt_p, out)?;
                line.write_gradient(&format!("{name}_q"), &wrt_q, out)?;
            }
            Quantity::Renyi(order) | Quantity::LpNorm(order) => {
                let logs = logarithms::<E>(q)?;
                let f = if matches!(q, Quantity::Renyi(_)) {
                    logs.renyi
                } else {
                    logs.lp_norm
                };
                // The library factorises the graph of w^order: say so in its errors.
                let value = f(&model, order.get())
                    .map_err(|e| LineError::from(e).within(&format!("{name}:{}", order.get())))?;
                field(name, out);
                E::write_json(&value, exact, out)?;
            }
            Quantity::ExpectedAttachment | Quantity::GradExpectedAttachment => {
                let (heads, labels) = reference_tree(raw)?;
                let within = |e: Error| match e {
                    // The position of the offending entry: the arc of word m is heads[m - 1].
                    Error::NoSuchArc { arc, n } => {
                        let bad_head = arc.head > n || arc.head == arc.dependent;
                        let at = if bad_head { "heads" } else { "labels" };
                        let at = format!("{at:?}[{}]", arc.dependent.saturating_sub(1));
                        LineError::from(e).within(&at)
                    }
                    e => e.into(),
                };
                if q == Quantity::ExpectedAttachment {
                    let value = model
                        .expected_attachment(&heads, labels.as_deref())
                        .map_err(within)?;
                    field(name, out);
                    E::write_json(&value, exact, out)?;
                } else {
                    let grad = model
                        .grad_expected_attachment(&heads, labels.as_deref())
                        .map_err(within)?;
                    line.write_gradient(name, &grad, out)?;
                }
            }
            Quantity::Ge => {
                let ge = line.ge_inputs()?;
                let value = model.ge_objective(&ge.features, &ge.targets)?;
                field(name, out);
                E::write_json(&value, exact, out)?;
            }
            Quantity::GradGe => {
                let ge = line.ge_inputs()?;
                let grad = match algorithms.grad_ge {
                    GradGeBy::ReverseMode => model.grad_ge_objective(&ge.features, &ge.targets)?,
                    GradGeBy::Covariance => {
                        baseline::grad_ge_by_covariance(&model, &ge.features, &ge.targets)?
                    }
                };
                line.write_gradient(name, &grad, out)?;
            }
            Quantity::Covariance => {
                let inputs = covariance_inputs::<E>(raw, model.n(), line.labels)?;
                let s = inputs.s.as_ref().unwrap_or(&inputs.r);
                let c = model.covariance(&inputs.r, s, algorithms.covariance)?;
                field(name, out);
                write_matrix::<E>(&c, exact, out)?;
            }
        }
    }
    out.push(b'}');
    Ok(())
}

/// The model of a validated graph: scores through [`Model::new`], weights
/// in the backend's scalar through [`Backend::weights_model`].
fn model_of<E: Backend>(
    engine: &E,
    graph: &LineGraph<E::Scalar>,
    rooting: Rooting,
) -> Result<Model<E>, LineError> {
    Ok(match graph {
        LineGraph::Scores(g) => Model::new(engine.clone(), g, rooting)?,
        LineGraph::Weights(g) => engine.weights_model(g, rooting)?,
    })
}

/// The entropy-type functions of the backend, or an `"unsupported"` error
/// for backends without logarithms (`--backend exact` refuses these
/// quantities up front: this is the defence in depth).
fn logarithms<E: Backend>(q: Quantity) -> Result<Logarithms<E>, LineError> {
    E::logarithms().ok_or_else(|| LineError {
        kind: "unsupported",
        message: format!(
            "{} needs logarithms, which this backend's numbers do not have",
            q.name()
        ),
    })
}

/// A gradient of a divergence that is `+∞`: the library names the arc that
/// `p` uses and `q` forbids as [`Error::InfiniteDivergence`].
fn infinite(name: &str, what: &str, e: Error) -> LineError {
    match e {
        Error::InfiniteDivergence { arc } => LineError {
            kind: "infinite_divergence",
            message: format!(
                "{name}: {what} is +∞ because p gives probability to {arc}, which q forbids; \
                 it has no gradient"
            ),
        },
        e => e.into(),
    }
}

/// One line's model and the inputs that some quantities read, each parsed
/// at most once.
struct Line<'a, E: Backend> {
    engine: &'a E,
    raw: &'a RawLine,
    settings: &'a Settings,
    model: &'a Model<E>,
    labeled: bool,
    labels: usize,
    q: Option<Model<E>>,
    ge: Option<GeInputs<E::Scalar>>,
}

impl<E: Backend> Line<'_, E> {
    /// The model of `q` (`"scores_q"` or `"weights_q"`), same rooting as `p`.
    fn q_model(&mut self) -> Result<&Model<E>, LineError> {
        if self.q.is_none() {
            let graph = build_q_graph::<E>(self.raw)?;
            let q =
                model_of(self.engine, &graph, self.settings.rooting).map_err(|e| e.within("q"))?;
            self.q = Some(q);
        }
        // Just filled when it was empty.
        self.q
            .as_ref()
            .ok_or_else(|| LineError::parse("q could not be built"))
    }

    /// The GE features and targets.
    fn ge_inputs(&mut self) -> Result<&GeInputs<E::Scalar>, LineError> {
        if self.ge.is_none() {
            self.ge = Some(ge_inputs::<E>(self.raw, self.model.n(), self.labels)?);
        }
        // Just filled when it was empty.
        self.ge
            .as_ref()
            .ok_or_else(|| LineError::parse("the GE inputs could not be read"))
    }

    /// `,"name":` and a gradient with respect to scores: the marginals'
    /// `(n+1) × (n+1)` layout, or `[h][m][ℓ]` for labeled graphs.
    fn write_gradient(
        &self,
        name: &str,
        grad: &[Matrix<E::Scalar>],
        out: &mut Vec<u8>,
    ) -> Result<(), LineError> {
        field(name, out);
        match grad {
            [one] if !self.labeled => write_matrix::<E>(one, self.settings.exact_output, out),
            _ => write_label_matrices::<E>(grad, self.settings.exact_output, out),
        }
    }

    /// `,"name":value`, or for `+∞` `,"name":null,"name_infinite_arc":[h,m]`
    /// (`[h,m,ℓ]` for a label of a labeled graph).
    fn write_divergence(
        &self,
        name: &str,
        value: &Divergence<E::Scalar>,
        out: &mut Vec<u8>,
    ) -> Result<(), LineError> {
        field(name, out);
        match value {
            Divergence::Finite(x) => E::write_json(x, self.settings.exact_output, out)?,
            Divergence::Infinite { arc } => {
                out.extend_from_slice(b"null");
                field(&format!("{name}_infinite_arc"), out);
                write_arc(arc, out);
            }
        }
        Ok(())
    }
}

/// Appends `,"name":`.
fn field(name: &str, out: &mut Vec<u8>) {
    out.push(b',');
    write_string(name, out);
    out.push(b':');
}

/// `[h,m]`, or `[h,m,ℓ]` for one label of an arc.
fn write_arc(arc: &ArcRef, out: &mut Vec<u8>) {
    let text = match arc.label {
        Some(l) => format!("[{},{},{l}]", arc.head, arc.dependent),
        None => format!("[{},{}]", arc.head, arc.dependent),
    };
    out.extend_from_slice(text.as_bytes());
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

fn write_matrix<E: Backend>(
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
fn write_label_matrices<E: Backend>(
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
