//! One input record to one output record: a result record or an error
//! record, computed from a checked [`Request`].

use serde_json::Value;
use spantree_core::decode::projective::Projective;
use spantree_core::{
    baseline, ArcRef, Divergence, Error, GradientPair, Graph, Layout, Matrix, Model, Rooting,
    Scalar, Transcendental, Tree,
};

use crate::algorithm::{AlgorithmChoice, Algorithms, EntropyBy, GradGeBy, LogZBy, MarginalsBy};
use crate::backend::{write_f64, write_string, Backend, BackendKind};
use crate::error::{LineError, UsageError};
use crate::input::{
    build_graph_in, build_q_graph_in, covariance_inputs, ge_inputs, layout_hint, line_too_long,
    reference_tree, GeInputs, Limits, LineGraph, RawLine,
};
use crate::quantity::{Quantity, Structure};

/// What every record of a run is computed with, checked once: names
/// resolved, capabilities checked, contradictions refused.
#[derive(Clone, Debug)]
pub struct Request {
    /// Single- or multi-root trees.
    pub rooting: Rooting,
    /// The backend (and the output's `"backend"` field).
    pub backend: BackendKind,
    /// The quantities, sorted and without repeats (the output order).
    pub quantities: Vec<Quantity>,
    /// Values as exact rational strings (exact backend only).
    pub exact_output: bool,
    /// The algorithm of each quantity that has a choice (defaults: the fast ones).
    pub algorithms: Algorithms,
    /// All spanning trees, or projective ones.
    pub structure: Structure,
    /// The seed of `samples:K` (each line draws from its own stream: the
    /// seed and the line number).
    pub seed: u64,
    /// The layout of the input matrices (results are always in spantree's).
    pub layout: Layout,
    /// The longest line and sentence read.
    pub limits: Limits,
}

impl Request {
    /// A checked request. `quantities` may come in any order and with
    /// repeats; `marginals` brings `label_marginals` along (for labeled
    /// input). `O(q²)` for `q` quantities.
    ///
    /// # Errors
    /// The first failing check, in this order:
    /// * [`UsageError::ExactOutputNeedsExact`]: `exact_output` on a
    ///   floating-point backend;
    /// * [`UsageError::Unsupported`]: the first quantity the backend
    ///   cannot give ([`Quantity::check`]);
    /// * [`UsageError::TwoAlgorithms`]: one quantity given two algorithms;
    /// * [`UsageError::MinorsNeedSingleRoot`]: `log_z=minors` with
    ///   multi-root trees;
    /// * [`UsageError::TwoOrders`]: one parameterised quantity with two
    ///   parameters (it has one output field).
    ///
    /// ```
    /// use spantree_api::{BackendKind, Quantity, Request};
    /// use spantree_core::Rooting;
    /// let entropy: Quantity = "entropy".parse()?;
    /// let ok = Request::new(BackendKind::Accurate, Rooting::Single, &[entropy], &[], false);
    /// assert!(ok.is_ok());
    /// let exact = Request::new(BackendKind::Exact, Rooting::Single, &[entropy], &[], false);
    /// assert!(exact.is_err()); // rationals have no logarithms
    /// # Ok::<(), spantree_api::UsageError>(())
    /// ```
    pub fn new(
        backend: BackendKind,
        rooting: Rooting,
        quantities: &[Quantity],
        algorithms: &[AlgorithmChoice],
        exact_output: bool,
    ) -> Result<Self, UsageError> {
        if exact_output && !backend.is_exact() {
            return Err(UsageError::ExactOutputNeedsExact);
        }
        for q in quantities {
            q.check(backend)?;
        }
        let algorithms = Algorithms::from_choices(algorithms)?;
        if algorithms.log_z == LogZBy::Minors && rooting == Rooting::Multi {
            return Err(UsageError::MinorsNeedSingleRoot);
        }
        for (i, a) in quantities.iter().enumerate() {
            for b in &quantities[i + 1..] {
                if a.name() == b.name() && a != b {
                    return Err(UsageError::TwoOrders {
                        name: a.name(),
                        first: a.order().unwrap_or(0.0),
                        second: b.order().unwrap_or(0.0),
                    });
                }
            }
        }
        Ok(Self::unchecked(backend, rooting, quantities, exact_output).with_algorithms(algorithms))
    }

    /// A request without the checks of [`Request::new`] (default
    /// algorithms): a quantity the backend cannot give then becomes an
    /// error record of kind `"unsupported"` on every line.
    pub fn unchecked(
        backend: BackendKind,
        rooting: Rooting,
        quantities: &[Quantity],
        exact_output: bool,
    ) -> Self {
        let mut quantities = quantities.to_vec();
        if quantities.contains(&Quantity::Marginals) {
            quantities.push(Quantity::LabelMarginals);
        }
        quantities.sort();
        quantities.dedup();
        Request {
            rooting,
            backend,
            quantities,
            exact_output,
            algorithms: Algorithms::default(),
            structure: Structure::Nonprojective,
            seed: 0,
            layout: Layout::Spantree,
            limits: Limits::default(),
        }
    }

    /// The same request with other resource limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same request with the seed of `samples:K`.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The same request over the trees of `structure`.
    ///
    /// # Errors
    /// [`UsageError::ProjectiveNeedsFloat`] for projective trees on the exact
    /// backend, [`UsageError::NotProjective`] for the first quantity they do
    /// not have.
    pub fn with_structure(mut self, structure: Structure) -> Result<Self, UsageError> {
        if structure == Structure::Projective && self.backend.is_exact() {
            return Err(UsageError::ProjectiveNeedsFloat);
        }
        if let Some(q) = self.quantities.iter().find(|&&q| !structure.has(q)) {
            return Err(UsageError::NotProjective { quantity: q.name() });
        }
        self.structure = structure;
        Ok(self)
    }

    /// The same request with other algorithms.
    pub fn with_algorithms(mut self, algorithms: Algorithms) -> Self {
        self.algorithms = algorithms;
        self
    }

    /// The same request reading its matrices in another layout
    /// ([`spantree_core::layout`]); results stay in spantree's layout.
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// Processes one record on the request's backend; see [`process_line`].
    /// (Batches dispatch once, not per record: [`crate::batch`].)
    pub fn process_line(&self, line: usize, bytes: &[u8], out: &mut Vec<u8>) -> Outcome {
        struct One<'a> {
            request: &'a Request,
            line: usize,
            bytes: &'a [u8],
            out: &'a mut Vec<u8>,
        }
        impl crate::backend::WithBackend for One<'_> {
            type Output = Outcome;
            fn run<B: Backend>(self, backend: &B) -> Outcome {
                process_line(backend, self.request, self.line, self.bytes, self.out)
            }
        }
        self.backend.dispatch(One {
            request: self,
            line,
            bytes,
            out,
        })
    }
}

/// What became of one input record.
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

/// Processes one input record (`line` is its 1-based number) into `out`,
/// which is cleared first and holds one JSON object without newline after.
/// `backend` must be the one of `request.backend`.
pub fn process_line<B: Backend>(
    backend: &B,
    request: &Request,
    line: usize,
    bytes: &[u8],
    out: &mut Vec<u8>,
) -> Outcome {
    out.clear();
    let bytes = bytes.trim_ascii();
    if bytes.is_empty() {
        return Outcome::Blank;
    }
    if bytes.len() > request.limits.max_line_bytes {
        write_error(
            &Value::Null,
            line,
            &line_too_long(request.limits.max_line_bytes),
            out,
        );
        return Outcome::Failed;
    }
    let raw = match RawLine::parse_limited(bytes, request.limits.max_words) {
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
    match write_result(backend, request, &raw, &id, line, out) {
        Ok(()) => Outcome::Done,
        Err(e) => {
            out.clear();
            write_error(&id, line, &e, out);
            Outcome::Failed
        }
    }
}

/// Builds the model of one parsed record and writes its result record;
/// `number` is its 1-based line number (the random stream of `samples:K`).
///
/// # Errors
/// Any validation, structural (no spanning tree) or numerical error, and
/// missing or malformed fields that a requested quantity reads; `out` then
/// holds a partial record that the caller discards.
pub fn write_result<B: Backend>(
    backend: &B,
    request: &Request,
    raw: &RawLine,
    id: &Value,
    number: usize,
    out: &mut Vec<u8>,
) -> Result<(), LineError> {
    if request.structure == Structure::Projective {
        let graph = build_graph_in::<B>(raw, request.layout)?;
        return write_projective(request, &graph, id, out);
    }
    let built = build_graph_in::<B>(raw, request.layout).and_then(|graph| {
        let model = model_of(backend, &graph, request.rooting)?;
        model.spanning_tree()?;
        Ok((graph, model))
    });
    let (graph, model) = match built {
        Ok(built) => built,
        // An invalid graph, or one without a tree, may be a layout mistake.
        Err(mut e) => {
            if request.layout == Layout::Spantree {
                if let Some(hint) = layout_hint(raw) {
                    e.message = format!("{} ({hint})", e.message);
                }
            }
            return Err(e);
        }
    };

    // One allocation for the whole record: an `(n+1) × (n+1)` matrix of
    // numbers takes about 24 bytes a cell (regrowing by doubling would copy
    // a long record's bytes twice more).
    let cells = (graph.n() + 1) * (graph.n() + 1) * graph.labels();
    let matrices = request
        .quantities
        .iter()
        .filter(|q| {
            matches!(q, Quantity::Marginals | Quantity::LabelMarginals)
                || q.name().starts_with("grad_")
        })
        .count();
    out.reserve(128 + 24 * cells * matrices);
    out.extend_from_slice(b"{\"id\":");
    write_value(id, out);
    out.extend_from_slice(format!(",\"n\":{},\"rooting\":", graph.n()).as_bytes());
    write_string(request.rooting.name(), out);
    out.extend_from_slice(b",\"backend\":");
    write_string(request.backend.name(), out);
    let mut line = Line {
        backend,
        number,
        raw,
        request,
        graph: &graph,
        model: &model,
        labeled: graph.is_labeled(),
        labels: graph.labels(),
        q: None,
        ge: None,
    };
    for &q in &request.quantities {
        eval(q, &mut line, out)?;
    }
    out.push(b'}');
    Ok(())
}

/// Computes one quantity of a record and appends its field(s) (`,"name":…`).
/// The quantities that need logarithms go to the backend's
/// [`Backend::logarithms`].
fn eval<B: Backend>(
    q: Quantity,
    line: &mut Line<'_, B>,
    out: &mut Vec<u8>,
) -> Result<(), LineError> {
    if q.needs_logarithms() {
        let Some(eval_logarithmic) = B::logarithms() else {
            // `Request::new` refuses these up front: this is the defence in depth.
            return Err(LineError {
                kind: "unsupported",
                message: format!(
                    "{} needs logarithms, which this backend's numbers do not have",
                    q.name()
                ),
            });
        };
        return eval_logarithmic(q, line, out);
    }
    let name = q.name();
    let model = line.model;
    let exact = line.request.exact_output;
    let algorithms = line.request.algorithms;
    match q {
        Quantity::LogZ => {
            let (log_z, z) = match algorithms.log_z {
                LogZBy::Lu => (model.log_partition()?, B::EXACT.then(|| model.partition())),
                LogZBy::Minors => (
                    baseline::log_partition_by_minors(model)?,
                    B::EXACT.then(|| baseline::partition_by_minors(model)),
                ),
            };
            field(name, out);
            write_f64(log_z, out)?;
            if let Some(z) = z {
                if let Some(z) = B::exact_text(&z?) {
                    field("z", out);
                    write_string(&z, out);
                }
            }
        }
        Quantity::Marginals => {
            let mu = match algorithms.marginals {
                MarginalsBy::Inverse => model.marginals()?,
                MarginalsBy::McDonaldSatta => baseline::marginals_by_zeroing(model)?,
            };
            field(name, out);
            write_matrix::<B>(&mu, exact, out)?;
        }
        Quantity::LabelMarginals if line.labeled => {
            field(name, out);
            write_label_matrices::<B>(&model.label_marginals()?, exact, out)?;
        }
        Quantity::LabelMarginals => {}
        Quantity::ExpectedAttachment | Quantity::GradExpectedAttachment => {
            let (heads, labels) = reference_tree(line.raw)?;
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
                B::write_json(&value, exact, out)?;
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
            B::write_json(&value, exact, out)?;
        }
        Quantity::GradGe => {
            let ge = line.ge_inputs()?;
            let grad = match algorithms.grad_ge {
                GradGeBy::ReverseMode => model.grad_ge_objective(&ge.features, &ge.targets)?,
                GradGeBy::Covariance => {
                    baseline::grad_ge_by_covariance(model, &ge.features, &ge.targets)?
                }
            };
            line.write_gradient(name, &grad, out)?;
        }
        Quantity::Covariance => {
            let inputs = covariance_inputs::<B>(line.raw, model.n(), line.labels)?;
            let s = inputs.s.as_ref().unwrap_or(&inputs.r);
            let c = model.covariance(&inputs.r, s, algorithms.covariance)?;
            field(name, out);
            write_matrix::<B>(&c, exact, out)?;
        }
        Quantity::BestTree => {
            let rooting = line.request.rooting;
            let (tree, score) = match (line.graph, model.graph()) {
                (_, Some(g)) => {
                    let tree = model.best_tree()?;
                    let score = tree.score(g)?;
                    (tree, score)
                }
                // Weights in the backend's own numbers (exact rationals):
                // decoded by exact comparisons of products.
                (LineGraph::Weights(g), None) => {
                    let tree = g.best_tree_exact(rooting)?;
                    let score = tree.score(g)?;
                    (tree, score)
                }
                (LineGraph::Scores(g), None) => {
                    let tree = g.best_tree(rooting)?;
                    let score = tree.score(g)?;
                    (tree, score)
                }
            };
            field(name, out);
            write_tree(&tree, score, out)?;
        }
        Quantity::MbrTree => {
            let (tree, score) = crate::typed::mbr_tree(model)?;
            field(name, out);
            write_tree(&tree, score, out)?;
        }
        Quantity::Samples(k) => {
            // The stream of this line: the same trees whatever the threads.
            let trees = model.samples(k.get() as usize, line.request.seed, line.number as u64)?;
            let ln_z = model.log_partition()?;
            field(name, out);
            out.push(b'[');
            for (i, tree) in trees.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let score = match line.graph {
                    LineGraph::Scores(g) => tree.score(g)?,
                    LineGraph::Weights(g) => tree.score(g)?,
                };
                write_tree_as(tree, "log_prob", score - ln_z, out)?;
            }
            out.push(b']');
        }
        Quantity::KBest(k) => {
            let k = k.get() as usize;
            let list = match (line.graph, model.graph()) {
                (_, Some(_)) => model.k_best(k)?,
                // Weights in the backend's own numbers: exact comparisons.
                (LineGraph::Weights(g), None) => g
                    .k_best_exact(line.request.rooting, k)?
                    .into_iter()
                    .map(|(tree, w)| (tree, w.ln_abs()))
                    .collect(),
                (LineGraph::Scores(g), None) => g.k_best(line.request.rooting, k)?,
            };
            field(name, out);
            out.push(b'[');
            for (i, (tree, score)) in list.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_tree(tree, *score, out)?;
            }
            out.push(b']');
        }
        Quantity::Entropy
        | Quantity::GradEntropy
        | Quantity::CrossEntropy
        | Quantity::GradCrossEntropy
        | Quantity::Kl
        | Quantity::GradKl
        | Quantity::Renyi(_)
        | Quantity::LpNorm(_) => return Err(not_here(q)),
    }
    Ok(())
}

/// The evaluation of the quantities that need logarithms, handed out by
/// [`Backend::logarithms`] on backends whose scalar has them.
pub type LogEval<B> = for<'a> fn(Quantity, &mut Line<'a, B>, &mut Vec<u8>) -> Result<(), LineError>;

/// Computes one quantity that needs logarithms and appends its field(s); a
/// [`LogEval`].
///
/// # Errors
/// As [`write_result`].
pub fn eval_logarithmic<B: Backend>(
    q: Quantity,
    line: &mut Line<'_, B>,
    out: &mut Vec<u8>,
) -> Result<(), LineError>
where
    B::Scalar: Transcendental,
{
    let name = q.name();
    let model = line.model;
    let exact = line.request.exact_output;
    match q {
        Quantity::Entropy => {
            let entropy = match line.request.algorithms.entropy {
                EntropyBy::Expectation => model.entropy()?,
                EntropyBy::SmithEisner => baseline::entropy_by_columns(model)?,
            };
            field(name, out);
            B::write_json(&entropy, exact, out)?;
        }
        Quantity::GradEntropy => {
            let grad = model.grad_entropy()?;
            line.write_gradient(name, &grad, out)?;
        }
        Quantity::CrossEntropy | Quantity::Kl => {
            let q_model = line.q_model()?;
            let value = if q == Quantity::Kl {
                model.kl_divergence(q_model)?
            } else {
                model.cross_entropy(q_model)?
            };
            line.write_divergence(name, &value, out)?;
        }
        Quantity::GradCrossEntropy | Quantity::GradKl => {
            let q_model = line.q_model()?;
            let (gradient, what) = if q == Quantity::GradKl {
                (model.grad_kl_divergence(q_model), "KL(p ‖ q)")
            } else {
                (model.grad_cross_entropy(q_model), "H(p, q)")
            };
            let GradientPair { wrt_p, wrt_q } = gradient.map_err(|e| infinite(name, what, e))?;
            line.write_gradient(name, &wrt_p, out)?;
            line.write_gradient(&format!("{name}_q"), &wrt_q, out)?;
        }
        Quantity::Renyi(order) | Quantity::LpNorm(order) => {
            let value = if matches!(q, Quantity::Renyi(_)) {
                model.renyi_entropy(order.get())
            } else {
                model.lp_norm(order.get())
            };
            // The library factorises the graph of w^order: say so in its errors.
            let value =
                value.map_err(|e| LineError::from(e).within(&format!("{name}:{}", order.get())))?;
            field(name, out);
            B::write_json(&value, exact, out)?;
        }
        _ => return Err(not_here(q)),
    }
    Ok(())
}

/// A quantity handed to the evaluation of the other capability: a bug of
/// this crate, reported as an error record rather than a panic.
fn not_here(q: Quantity) -> LineError {
    LineError {
        kind: "unsupported",
        message: format!(
            "{} is not evaluated on this route (a bug of spantree-api)",
            q.name()
        ),
    }
}

/// The model of a validated graph: scores through [`Model::new`], weights
/// in the backend's scalar through [`Backend::weights_model`].
fn model_of<B: Backend>(
    backend: &B,
    graph: &LineGraph<B::Scalar>,
    rooting: Rooting,
) -> Result<Model<B>, LineError> {
    Ok(match graph {
        LineGraph::Scores(g) => Model::new(backend.clone(), g, rooting)?,
        LineGraph::Weights(g) => backend.weights_model(g, rooting)?,
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

/// One record being evaluated: its model and the inputs that some
/// quantities read, each parsed at most once.
pub struct Line<'a, B: Backend> {
    backend: &'a B,
    number: usize,
    raw: &'a RawLine,
    request: &'a Request,
    graph: &'a LineGraph<B::Scalar>,
    model: &'a Model<B>,
    labeled: bool,
    labels: usize,
    q: Option<Model<B>>,
    ge: Option<GeInputs<B::Scalar>>,
}

impl<B: Backend> Line<'_, B> {
    /// The model of `q` (`"scores_q"` or `"weights_q"`), same rooting as `p`.
    fn q_model(&mut self) -> Result<&Model<B>, LineError> {
        if self.q.is_none() {
            let graph = build_q_graph_in::<B>(self.raw, self.request.layout)?;
            let q =
                model_of(self.backend, &graph, self.request.rooting).map_err(|e| e.within("q"))?;
            self.q = Some(q);
        }
        // Just filled when it was empty.
        self.q
            .as_ref()
            .ok_or_else(|| LineError::parse("q could not be built"))
    }

    /// The GE features and targets.
    fn ge_inputs(&mut self) -> Result<&GeInputs<B::Scalar>, LineError> {
        if self.ge.is_none() {
            self.ge = Some(ge_inputs::<B>(self.raw, self.model.n(), self.labels)?);
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
        grad: &[Matrix<B::Scalar>],
        out: &mut Vec<u8>,
    ) -> Result<(), LineError> {
        field(name, out);
        match grad {
            [one] if !self.labeled => write_matrix::<B>(one, self.request.exact_output, out),
            _ => write_label_matrices::<B>(grad, self.request.exact_output, out),
        }
    }

    /// `,"name":value`, or for `+∞` `,"name":null,"name_infinite_arc":[h,m]`
    /// (`[h,m,ℓ]` for a label of a labeled graph).
    fn write_divergence(
        &self,
        name: &str,
        value: &Divergence<B::Scalar>,
        out: &mut Vec<u8>,
    ) -> Result<(), LineError> {
        field(name, out);
        match value {
            Divergence::Finite(x) => B::write_json(x, self.request.exact_output, out)?,
            Divergence::Infinite { arc } => {
                out.extend_from_slice(b"null");
                field(&format!("{name}_infinite_arc"), out);
                write_arc(arc, out);
            }
        }
        Ok(())
    }
}

/// `{"heads":[…],"score":s}`, plus `"labels":[…]` for a labeled tree.
fn write_tree(tree: &Tree, score: f64, out: &mut Vec<u8>) -> Result<(), LineError> {
    write_tree_as(tree, "score", score, out)
}

/// `{"heads":[…],"key":value}`, plus `"labels":[…]` for a labeled tree.
fn write_tree_as(tree: &Tree, key: &str, value: f64, out: &mut Vec<u8>) -> Result<(), LineError> {
    out.extend_from_slice(b"{\"heads\":");
    write_value(&Value::from(tree.heads().to_vec()), out);
    if let Some(labels) = tree.labels() {
        out.extend_from_slice(b",\"labels\":");
        write_value(&Value::from(labels.to_vec()), out);
    }
    field(key, out);
    write_f64(value, out)?;
    out.push(b'}');
    Ok(())
}

/// The result record of projective trees (Eisner's chart in log space):
/// the quantities [`Structure::Projective`] has.
fn write_projective<S: Scalar>(
    request: &Request,
    graph: &LineGraph<S>,
    id: &Value,
    out: &mut Vec<u8>,
) -> Result<(), LineError> {
    let weights;
    let g = match graph {
        LineGraph::Scores(g) => g,
        LineGraph::Weights(g) => {
            weights = f64_weights(g)?;
            &weights
        }
    };
    let chart = Projective::new(g, request.rooting)?;
    out.extend_from_slice(b"{\"id\":");
    write_value(id, out);
    out.extend_from_slice(format!(",\"n\":{},\"rooting\":", g.n()).as_bytes());
    write_string(request.rooting.name(), out);
    out.extend_from_slice(b",\"backend\":");
    write_string(request.backend.name(), out);
    out.extend_from_slice(b",\"structure\":\"projective\"");
    let labeled = g.is_labeled();
    let write_f64s = |per_label: &[Matrix<f64>], out: &mut Vec<u8>| -> Result<(), LineError> {
        match per_label {
            [one] if !labeled => write_f64_matrix(one, out),
            _ => write_f64_label_matrices(per_label, out),
        }
    };
    for &q in &request.quantities {
        let name = q.name();
        match q {
            Quantity::LogZ => {
                field(name, out);
                write_f64(chart.log_partition()?, out)?;
            }
            Quantity::Marginals => {
                field(name, out);
                write_f64_matrix(&chart.marginals()?, out)?;
            }
            Quantity::LabelMarginals if labeled => {
                field(name, out);
                write_f64_label_matrices(&chart.label_marginals()?, out)?;
            }
            Quantity::Entropy => {
                field(name, out);
                write_f64(chart.entropy()?, out)?;
            }
            Quantity::GradEntropy => {
                field(name, out);
                write_f64s(&chart.grad_entropy()?, out)?;
            }
            Quantity::BestTree => {
                let tree = chart.best_tree()?;
                let score = tree.score(g)?;
                field(name, out);
                write_tree(&tree, score, out)?;
            }
            Quantity::MbrTree => {
                let (tree, score) = crate::typed::projective_mbr_tree(&chart)?;
                field(name, out);
                write_tree(&tree, score, out)?;
            }
            // `Request::with_structure` refuses the others up front.
            _ => {}
        }
    }
    out.push(b'}');
    Ok(())
}

/// A weight graph in `f64` (the floating-point backends' own numbers; the
/// exact backend is refused before).
fn f64_weights<S: Scalar>(g: &Graph<S>) -> Result<Graph<f64>, LineError> {
    let n1 = g.n() + 1;
    let cell = |h: usize, m: usize| {
        g.values(h, m)
            .iter()
            .map(Scalar::to_f64)
            .collect::<Vec<_>>()
    };
    Ok(if g.is_labeled() {
        let rows: Vec<Vec<Vec<f64>>> = (0..n1)
            .map(|h| (0..n1).map(|m| cell(h, m)).collect())
            .collect();
        Graph::from_labeled_weights(&rows)?
    } else {
        let rows: Vec<Vec<f64>> = (0..n1)
            .map(|h| (0..n1).map(|m| cell(h, m)[0]).collect())
            .collect();
        Graph::from_weights(&rows)?
    })
}

fn write_f64_matrix(m: &Matrix<f64>, out: &mut Vec<u8>) -> Result<(), LineError> {
    write_matrix::<spantree_faer::F64>(m, false, out)
}

fn write_f64_label_matrices(per_label: &[Matrix<f64>], out: &mut Vec<u8>) -> Result<(), LineError> {
    write_label_matrices::<spantree_faer::F64>(per_label, false, out)
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
/// The error record of input line `line`, longer than the request's
/// limit, which the batch reader dropped unread ([`crate::input::read_line_limited`]).
pub fn too_long(request: &Request, line: usize, out: &mut Vec<u8>) -> Outcome {
    out.clear();
    write_error(
        &Value::Null,
        line,
        &line_too_long(request.limits.max_line_bytes),
        out,
    );
    Outcome::Failed
}

/// Writes the error record of input line `line` (1-based) into `out`.
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

fn write_matrix<B: Backend>(
    m: &Matrix<B::Scalar>,
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
            B::write_json(x, exact, out)?;
        }
        out.push(b']');
    }
    out.push(b']');
    Ok(())
}

/// `[h][m][ℓ]` from one matrix per label.
fn write_label_matrices<B: Backend>(
    per_label: &[Matrix<B::Scalar>],
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
                B::write_json(&matrix[(h, m)], exact, out)?;
            }
            out.push(b']');
        }
        out.push(b']');
    }
    out.push(b']');
    Ok(())
}
