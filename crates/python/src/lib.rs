//! # spantree-python
//!
//! The native half of the Python package `spantree` (the module
//! `spantree._spantree`; the Python half in `python/spantree` shapes the
//! arrays, builds `fractions.Fraction`s and raises the exceptions). One
//! class, `Batch`: a batch of sentence graphs, validated once on a
//! backend chosen by name, that answers many questions. The first question
//! factorises graph by graph (each item factorised, then all its questions
//! answered while its factors are in cache, float answers written straight
//! into their NumPy arrays), keeping the factors for later questions or not.
//!
//! Everything the command shares lives in `spantree-api`: the backend
//! choice ([`BackendKind::dispatch`]), the capability check
//! ([`Quantity::check`]), the typed information quantities
//! ([`spantree_api::typed::Information`]) and the stable error kinds
//! ([`spantree_core::Error::kind`]). This crate only moves arrays.
//!
//! Failures never panic across the boundary: a request that cannot run is
//! a `ValueError` raised here (the Python half turns it into
//! `spantree.UsageError`); a failed batch item comes back as a tuple
//! `(item, kind, message, arc)` next to the values, and the Python half
//! raises or returns it per its `errors=` policy.

use std::any::Any;
use std::sync::OnceLock;

use numpy::{
    PyArray1, PyArrayMethods, PyReadonlyArray2, PyReadonlyArray4, PyReadonlyArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;
use spantree_api::arrays::Padded;
use spantree_api::batch;
use spantree_api::typed::{self, ScoredTree};
use spantree_api::{
    parse_rooting, Backend, BackendKind, Quantity, Request, Structure, UsageError, WithBackend,
};
use spantree_core::decode::projective::Projective;
use spantree_core::{
    ArcFeatures, ArcRef, Divergence, Error, Graph, Matrix, Model, Rooting, Scalar, SecondOrder,
};

/// A failed batch item: `(item, kind, message, arc)`, the arc as
/// `(head, dependent, label)` when the error names one.
type Failure = (
    usize,
    &'static str,
    String,
    Option<(usize, usize, Option<usize>)>,
);

/// One answered question for Python: `(values, item_shape, failures)`.
type Asked = (Py<PyAny>, Vec<usize>, Vec<Failure>);

/// The values of one request over a batch, flat in row-major order with
/// padding, as `f64`, as rational strings (exact backend), as decimal
/// strings at full precision (high-precision backend), or as trees.
enum Flat {
    /// Written straight into the caller's float64 buffer, item by item.
    Written,
    Exact(Vec<String>),
    Precise(Vec<String>),
    /// `K` trees per item: heads `[B, K, N]` and labels (labeled input)
    /// padded with `-1`, one number per tree `[B, K]` (`-∞` for a missing
    /// tree of a k-best list, NaN for a failed item).
    Trees {
        heads: Vec<i64>,
        labels: Option<Vec<i64>>,
        values: Vec<f64>,
    },
}

/// What one batch item answers, before it is laid out.
enum Answer<S> {
    /// A plain number (`ln Z` is `f64` on every backend).
    Float(f64),
    /// A number of the backend's type.
    Scalar(S),
    /// A divergence, `+∞` when `p` uses an arc `q` forbids.
    Divergence(Divergence<S>),
    /// One `(n+1) × (n+1)` matrix per label (one when unlabeled).
    Labels(Vec<Matrix<S>>),
    /// Two of those (gradients with respect to `p` and to `q`).
    Pair(Vec<Matrix<S>>, Vec<Matrix<S>>),
    /// One `R × S` matrix (a covariance).
    Dense(Matrix<S>),
    /// Per-label matrices computed in `f64` whatever the backend
    /// (complex-step Hessian–vector products).
    F64Labels(Vec<Matrix<f64>>),
    /// Two of those.
    F64Pair(Vec<Matrix<f64>>, Vec<Matrix<f64>>),
    /// Trees, each with its number.
    Trees(Vec<ScoredTree>),
    /// Already written into the caller's float64 buffer.
    Written,
}

/// One item's answer to one question, or why there is none.
type Answered<S> = Result<Answer<S>, Error>;

/// A question put to every item of a batch.
#[derive(Clone, Copy, Debug)]
enum Ask {
    LogPartition,
    Partition,
    Marginals,
    Entropy,
    GradEntropy,
    Renyi(f64),
    LpNorm(f64),
    CrossEntropy,
    Kl,
    GradKl,
    MarginalsVjp,
    BestTree,
    MbrTree,
    Samples(usize),
    KBest(usize),
    ExpectedAttachment,
    GradExpectedAttachment,
    Ge,
    GradGe,
    Covariance,
    GradEntropyJvp,
    GradKlJvp,
}

impl Ask {
    fn parse(name: &str, param: f64) -> PyResult<(Self, Option<Quantity>)> {
        // The registry's quantity, for the capability check against the backend.
        let quantity = |q: &str| q.parse::<Quantity>().ok();
        Ok(match name {
            "log_partition" => (Ask::LogPartition, quantity("log_z")),
            "partition" => (Ask::Partition, quantity("log_z")),
            "marginals" => (Ask::Marginals, quantity("marginals")),
            "entropy" => (Ask::Entropy, quantity("entropy")),
            "grad_entropy" => (Ask::GradEntropy, quantity("grad_entropy")),
            "renyi" => (Ask::Renyi(param), quantity("renyi:2")),
            "lp_norm" => (Ask::LpNorm(param), quantity("lp_norm:2")),
            "cross_entropy" => (Ask::CrossEntropy, quantity("cross_entropy")),
            "kl" => (Ask::Kl, quantity("kl")),
            "grad_kl" => (Ask::GradKl, quantity("grad_kl")),
            "marginals_vjp" => (Ask::MarginalsVjp, quantity("marginals")),
            "best_tree" => (Ask::BestTree, quantity("best_tree")),
            "mbr_tree" => (Ask::MbrTree, quantity("mbr_tree")),
            // The registry checks the count's domain (a whole number ≥ 1).
            "samples" | "kbest" => {
                let q: Quantity = format!("{name}:{param}").parse().map_err(usage)?;
                let k = param as usize;
                let ask = if name == "samples" {
                    Ask::Samples(k)
                } else {
                    Ask::KBest(k)
                };
                (ask, Some(q))
            }
            "expected_attachment" => (Ask::ExpectedAttachment, quantity(name)),
            "grad_expected_attachment" => (Ask::GradExpectedAttachment, quantity(name)),
            "ge" => (Ask::Ge, quantity("ge")),
            "grad_ge" => (Ask::GradGe, quantity("grad_ge")),
            "covariance" => (Ask::Covariance, quantity("covariance")),
            "grad_entropy_jvp" => (Ask::GradEntropyJvp, quantity("grad_entropy")),
            "grad_kl_jvp" => (Ask::GradKlJvp, quantity("grad_kl")),
            _ => {
                return Err(PyValueError::new_err((
                    "unknown_quantity",
                    format!("unknown quantity {name:?}"),
                )))
            }
        })
    }

    /// The shape of one item's answer, without the batch axis: `[]` for a
    /// number, `[N+1, N+1(, L)]` for matrices, `[2, …]` for a pair, `[R, S]`
    /// for a covariance, `[K, N]` for `K` trees.
    fn item_shape(self, shape: &Shape, extra: &Extra) -> Vec<usize> {
        let matrices = || {
            let mut s = vec![shape.side, shape.side];
            if shape.labeled {
                s.push(shape.labels);
            }
            s
        };
        match self {
            Ask::LogPartition
            | Ask::Partition
            | Ask::Entropy
            | Ask::Renyi(_)
            | Ask::LpNorm(_)
            | Ask::CrossEntropy
            | Ask::Kl
            | Ask::ExpectedAttachment
            | Ask::Ge => vec![],
            Ask::Marginals
            | Ask::GradEntropy
            | Ask::MarginalsVjp
            | Ask::GradExpectedAttachment
            | Ask::GradGe
            | Ask::GradEntropyJvp => matrices(),
            Ask::GradKl | Ask::GradKlJvp => [vec![2], matrices()].concat(),
            Ask::Covariance => {
                let r = extra.features.as_ref().map_or(0, |f| f.1);
                let s = extra.features_s.as_ref().map_or(r, |f| f.1);
                vec![r, s]
            }
            Ask::BestTree | Ask::MbrTree => vec![1, shape.side - 1],
            Ask::Samples(k) | Ask::KBest(k) => vec![k, shape.side - 1],
        }
    }

    fn is_trees(self) -> bool {
        matches!(
            self,
            Ask::BestTree | Ask::MbrTree | Ask::Samples(_) | Ask::KBest(_)
        )
    }
}

/// Per-call inputs that some questions read, padded over the batch like
/// the scores (`B` items, side `N+1`, `L` labels).
#[derive(Default)]
struct Extra {
    /// `[B, N+1, N+1, L]`: the seed of `marginals_vjp`, the direction of
    /// the Hessian–vector products (of `p`'s scores for KL).
    seed: Option<Vec<f64>>,
    /// `[B, N+1, N+1, L]`: the direction along `q`'s scores (KL).
    seed_q: Option<Vec<f64>>,
    /// `[B, N]`: reference heads (expected attachment), `heads[m-1]` of word `m`.
    heads: Option<Vec<i64>>,
    /// `[B, N]`: reference labels (labeled expected attachment).
    labels: Option<Vec<i64>>,
    /// `[B, N+1, N+1, L, F]` dense arc features and `F`.
    features: Option<(Vec<f64>, usize)>,
    /// `[B, N+1, N+1, L, S]`: the second features of a covariance, and `S`.
    features_s: Option<(Vec<f64>, usize)>,
    /// `[B, F]`: GE targets.
    targets: Option<Vec<f64>>,
    /// The seed of the samplers (item `i` draws from stream `i + 1`).
    sample_seed: u64,
}

impl Extra {
    /// Item `i`'s block of a per-item array.
    fn block<T>(v: &[T], i: usize, items: usize) -> &[T] {
        let size = v.len() / items.max(1);
        &v[i * size..(i + 1) * size]
    }

    /// Item `i`'s reference tree, the first `n` entries.
    fn tree(
        &self,
        i: usize,
        n: usize,
        items: usize,
    ) -> Result<(Vec<usize>, Option<Vec<usize>>), Error> {
        let missing = Error::Unsupported("expected attachment without reference heads");
        let heads = self.heads.as_ref().ok_or(missing)?;
        // Negative entries are refused by the Python half.
        let take = |v: &[i64]| -> Vec<usize> {
            Self::block(v, i, items)[..n]
                .iter()
                .map(|&x| x.max(0) as usize)
                .collect()
        };
        Ok((take(heads), self.labels.as_deref().map(take)))
    }

    /// Item `i`'s dense features as sparse [`ArcFeatures`] of the arcs of
    /// its `n` words (labeled entries per label on labeled input).
    fn arc_features<S: Scalar>(
        dense: &(Vec<f64>, usize),
        i: usize,
        n: usize,
        shape: &Shape,
    ) -> Result<ArcFeatures<S>, Error> {
        let (values, dim) = (Self::block(&dense.0, i, shape.items), dense.1);
        let (side, labels) = (shape.side, shape.labels);
        let mut r = ArcFeatures::new(dim);
        for h in 0..=n {
            for m in 1..=n {
                if h == m {
                    continue;
                }
                for l in 0..labels {
                    let at = ((h * side + m) * labels + l) * dim;
                    let entry: Vec<(usize, S)> = values[at..at + dim]
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| **x != 0.0)
                        .map(|(k, x)| (k, S::from_f64(*x)))
                        .collect();
                    if !entry.is_empty() {
                        let label = shape.labeled.then_some(l);
                        let arc = ArcRef {
                            head: h,
                            dependent: m,
                            label,
                        };
                        r.push(arc, entry)?;
                    }
                }
            }
        }
        Ok(r)
    }

    /// Item `i`'s `(n+1) × (n+1)` matrices, one per label, of a seed array.
    fn matrices(
        seed: Option<&Vec<f64>>,
        i: usize,
        n: usize,
        shape: &Shape,
    ) -> Result<Vec<Matrix<f64>>, Error> {
        let seed = seed.ok_or(Error::Unsupported("a product without a direction"))?;
        let seed = Self::block(seed, i, shape.items);
        let (side, labels) = (shape.side, shape.labels);
        let count = if shape.labeled { labels } else { 1 };
        Ok((0..count)
            .map(|l| Matrix::from_fn(n + 1, n + 1, |h, m| seed[(h * side + m) * labels + l]))
            .collect())
    }
}

/// The padded shape of a batch: `B` items of at most `N` words, `L` labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    items: usize,
    side: usize,
    labels: usize,
    labeled: bool,
}

/// A batch on one backend, type-erased for the Python class.
trait AnyBatch: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    /// Whether the backend prints at more than `f64` precision.
    fn precise(&self) -> bool;
    /// The items that failed to build.
    fn failures(&self) -> Vec<Failure>;
    /// Every question of `asks` of every item, graph by graph: item `i` is
    /// factorised (unless it was kept from an earlier call) and answers all
    /// its questions while its factors are in cache, then the next item.
    /// `outs[k]`, when given, is question `k`'s float64 output `[B, …]`,
    /// written in place (its answer is then [`Flat::Written`]); the others
    /// are laid out after. One `(values, failures)` per question.
    fn ask(
        &self,
        asks: &[Ask],
        other: Option<&dyn AnyBatch>,
        extra: &Extra,
        threads: usize,
        outs: Vec<Option<&mut [f64]>>,
    ) -> Result<Vec<(Flat, Vec<Failure>)>, String>;
}

/// One batch item: its validated graph, and what answers its questions
/// (a factorised model, a chart), built on first use.
struct Item<M> {
    graph: Graph<f64>,
    built: OnceLock<Result<M, Error>>,
}

impl<M> Item<M> {
    fn new(graph: Graph<f64>) -> Self {
        Item {
            graph,
            built: OnceLock::new(),
        }
    }

    /// `f` of what `build` makes of the graph: kept for later calls when
    /// `keep` (a `TreeDistribution`), dropped after `f` otherwise (a
    /// one-shot function, whose next item then reuses the warm memory).
    fn with<R>(
        &self,
        keep: bool,
        build: impl FnOnce(&Graph<f64>) -> Result<M, Error>,
        f: impl FnOnce(Result<&M, &Error>) -> R,
    ) -> R {
        if keep {
            return f(self.built.get_or_init(|| build(&self.graph)).as_ref());
        }
        match self.built.get() {
            Some(built) => f(built.as_ref()),
            None => f(build(&self.graph).as_ref()),
        }
    }
}

/// The items of a batch, each `Err` when its graph failed validation.
type Items<M> = Vec<Result<Item<M>, Error>>;

struct Models<B: Backend> {
    shape: Shape,
    backend: B,
    rooting: Rooting,
    keep: bool,
    items: Items<Model<B>>,
}

/// Runs `f` on `0..lengths.len()` (item `i` of `lengths[i]` words), as
/// [`run_each`].
fn run<T: Send>(
    threads: usize,
    lengths: &[usize],
    f: impl Fn(usize) -> T + Sync + Send,
) -> Result<Vec<T>, String> {
    run_each(threads, vec![(); lengths.len()], lengths, |i, ()| f(i))
}

/// Runs `f(i, input_i)` over `inputs` (item `i` of `lengths[i]` words), the
/// longest items first ([`batch::by_length`]: the results do not depend on
/// the order, the time does), and returns the answers in input order: in
/// the calling thread for `threads = 1` (nothing to survive a fork), on a
/// fresh pool otherwise (`0`: all cores).
fn run_each<I: Send, T: Send>(
    threads: usize,
    inputs: Vec<I>,
    lengths: &[usize],
    f: impl Fn(usize, I) -> T + Sync + Send,
) -> Result<Vec<T>, String> {
    let jobs = batch::by_length(inputs, lengths);
    if threads == 1 || jobs.len() <= 1 {
        let answers = jobs.into_iter().map(|(i, x)| (i, f(i, x))).collect();
        return Ok(batch::in_input_order(answers));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| format!("cannot start {threads} threads: {e}"))?;
    let answers = pool.install(|| jobs.into_par_iter().map(|(i, x)| (i, f(i, x))).collect());
    Ok(batch::in_input_order(answers))
}

/// Runs `f(i, sinks_i)` over the batch's items, item `i` writing into
/// its block of each question's buffer ([`sinks`]), as [`run_each`] (an
/// item that failed validation counts as `0` words).
fn run_items<'a, M, T: Send>(
    threads: usize,
    items: &Items<M>,
    outs: Vec<Option<&'a mut [f64]>>,
    f: impl Fn(usize, Sinks<'a>) -> T + Sync + Send,
) -> Result<Vec<T>, String> {
    let lengths: Vec<usize> = items
        .iter()
        .map(|item| item.as_ref().map_or(0, |item| item.graph.n()))
        .collect();
    run_each(threads, sinks(outs, items.len()), &lengths, f)
}

/// Item `i`'s block of each question's output buffer, for `count` items
/// (`None` where a question has no buffer).
type Sinks<'a> = Vec<Option<&'a mut [f64]>>;

/// Splits each question's buffer `[B, …]` into its `count` items' blocks.
fn sinks(outs: Vec<Option<&mut [f64]>>, count: usize) -> Vec<Sinks<'_>> {
    let mut items: Vec<Sinks<'_>> = (0..count).map(|_| Vec::with_capacity(outs.len())).collect();
    for out in outs {
        match out {
            Some(buf) if buf.len() >= count && count > 0 => {
                let block = buf.len() / count;
                for (item, chunk) in items.iter_mut().zip(buf.chunks_mut(block)) {
                    item.push(Some(chunk));
                }
            }
            Some(_) => items.iter_mut().for_each(|item| item.push(Some(&mut []))),
            None => items.iter_mut().for_each(|item| item.push(None)),
        }
    }
    items
}

/// Writes each answer that has a sink into it (NaN for a failed item) and
/// leaves [`Answer::Written`] in its place.
fn write<S: Scalar>(answers: &mut [Answered<S>], sinks: Sinks<'_>, shape: Shape) {
    for (answer, sink) in answers.iter_mut().zip(sinks) {
        let Some(out) = sink else { continue };
        match answer {
            Ok(a) => {
                lay_out(a, shape, out, &|x: &S| x.to_f64(), &|x| x);
                *answer = Ok(Answer::Written);
            }
            // A failed item holds NaN, never a number that looks valid.
            Err(_) => out.fill(f64::NAN),
        }
    }
}

fn arc_of(e: &Error) -> Option<(usize, usize, Option<usize>)> {
    let arc = match e {
        Error::LabelCount { arc, .. }
        | Error::NotANumber { arc, .. }
        | Error::Infinite { arc, .. }
        | Error::NegativeWeight { arc, .. }
        | Error::NonexistentArc { arc, .. }
        | Error::Overflow { arc, .. }
        | Error::NoSuchArc { arc, .. }
        | Error::FeatureIndex { arc, .. }
        | Error::InfiniteDivergence { arc } => arc,
        _ => return None,
    };
    Some((arc.head, arc.dependent, arc.label))
}

fn failure(item: usize, e: &Error) -> Failure {
    (item, e.kind(), e.to_string(), arc_of(e))
}

/// Whether the backend's numbers print at more than `f64` precision.
fn precise<B: Backend>() -> bool {
    B::precise_text(&B::Scalar::one()).is_some()
}

impl<B: Backend> Models<B> {
    /// The model of a validated graph, `O(n³)`.
    fn build(&self, graph: &Graph<f64>) -> Result<Model<B>, Error> {
        Model::new(self.backend.clone(), graph, self.rooting)
    }

    /// Item `i`'s answer.
    fn answer(
        &self,
        ask: Ask,
        i: usize,
        model: &Model<B>,
        q: Option<&Model<B>>,
        extra: &Extra,
    ) -> Result<Answer<B::Scalar>, Error> {
        let info = || B::information().ok_or(Error::Unsupported("a logarithmic quantity"));
        let q = || q.ok_or(Error::Unsupported("a divergence without q"));
        let shape = &self.shape;
        let n = model.n();
        let graph = || {
            model
                .graph()
                .ok_or(Error::Unsupported("a model without f64 scores"))
        };
        let features = |dense: Option<&(Vec<f64>, usize)>| {
            let dense = dense.ok_or(Error::Unsupported("a quantity without features"))?;
            Extra::arc_features::<B::Scalar>(dense, i, n, shape)
        };
        let targets = || -> Result<Vec<B::Scalar>, Error> {
            let t = extra
                .targets
                .as_ref()
                .ok_or(Error::Unsupported("GE without targets"))?;
            let t = Extra::block(t, i, shape.items);
            Ok(t.iter().map(|&x| B::Scalar::from_f64(x)).collect())
        };
        Ok(match ask {
            // ln Z at the backend's precision where it has more than f64's.
            Ask::LogPartition if precise::<B>() => Answer::Scalar((info()?.log_partition)(model)?),
            Ask::LogPartition => Answer::Float(model.log_partition()?),
            Ask::Partition => Answer::Scalar(model.partition()?),
            Ask::Marginals if shape.labeled => Answer::Labels(model.label_marginals()?.into_vec()),
            Ask::Marginals => Answer::Labels(vec![model.marginals()?]),
            Ask::Entropy => Answer::Scalar((info()?.entropy)(model)?),
            Ask::GradEntropy => Answer::Labels((info()?.grad_entropy)(model)?.into_vec()),
            Ask::Renyi(alpha) => Answer::Scalar((info()?.renyi)(model, alpha)?),
            Ask::LpNorm(k) => Answer::Scalar((info()?.lp_norm)(model, k)?),
            Ask::CrossEntropy => Answer::Divergence((info()?.cross_entropy)(model, q()?)?),
            Ask::Kl => Answer::Divergence((info()?.kl)(model, q()?)?),
            Ask::GradKl => {
                let pair = (info()?.grad_kl)(model, q()?)?;
                Answer::Pair(pair.wrt_p.into_vec(), pair.wrt_q.into_vec())
            }
            Ask::MarginalsVjp => {
                let seeds = Extra::matrices(extra.seed.as_ref(), i, n, shape)?;
                let seeds: Vec<Matrix<B::Scalar>> = seeds
                    .iter()
                    .map(|m| m.map(|&x| B::Scalar::from_f64(x)))
                    .collect();
                Answer::Labels(model.label_marginals_vjp(&seeds)?.into_vec())
            }
            Ask::BestTree => Answer::Trees(vec![typed::best_tree(model)?]),
            Ask::MbrTree => Answer::Trees(vec![typed::mbr_tree(model)?]),
            Ask::Samples(k) => {
                Answer::Trees(typed::samples(model, k, extra.sample_seed, i as u64 + 1)?)
            }
            Ask::KBest(k) => Answer::Trees(model.k_best(k)?),
            Ask::ExpectedAttachment | Ask::GradExpectedAttachment => {
                let (heads, labels) = extra.tree(i, n, shape.items)?;
                if matches!(ask, Ask::ExpectedAttachment) {
                    Answer::Scalar(model.expected_attachment(&heads, labels.as_deref())?)
                } else {
                    let grad = model.grad_expected_attachment(&heads, labels.as_deref())?;
                    Answer::Labels(grad.into_vec())
                }
            }
            Ask::Ge => Answer::Scalar(
                model.ge_objective(&features(extra.features.as_ref())?, &targets()?)?,
            ),
            Ask::GradGe => {
                let f = features(extra.features.as_ref())?;
                Answer::Labels(model.grad_ge_objective(&f, &targets()?)?.into_vec())
            }
            Ask::Covariance => {
                let r = features(extra.features.as_ref())?;
                let s = match extra.features_s {
                    Some(_) => features(extra.features_s.as_ref())?,
                    None => r.clone(),
                };
                Answer::Dense(model.covariance(&r, &s, SecondOrder::Auto)?)
            }
            Ask::GradEntropyJvp => {
                let v = Extra::matrices(extra.seed.as_ref(), i, n, shape)?;
                let hv = typed::grad_entropy_jvp(graph()?, model.rooting(), &v)?;
                Answer::F64Labels(hv.into_vec())
            }
            Ask::GradKlJvp => {
                let q_graph = q()?
                    .graph()
                    .ok_or(Error::Unsupported("a model without f64 scores"))?;
                let vp = Extra::matrices(extra.seed.as_ref(), i, n, shape)?;
                let vq = Extra::matrices(extra.seed_q.as_ref(), i, n, shape)?;
                let hv = typed::grad_kl_jvp(graph()?, q_graph, model.rooting(), &vp, &vq)?;
                Answer::F64Pair(hv.wrt_p.into_vec(), hv.wrt_q.into_vec())
            }
        })
    }
}

/// Writes per-label matrices into a padded block (`[h][m][ℓ]`).
fn lay_matrices<S, T>(ms: &[Matrix<S>], shape: Shape, out: &mut [T], f: &impl Fn(&S) -> T) {
    let (side, labels) = (shape.side, shape.labels);
    for (l, m) in ms.iter().enumerate() {
        for h in 0..m.rows() {
            for d in 0..m.cols() {
                out[(h * side + d) * labels + l] = f(&m[(h, d)]);
            }
        }
    }
}

/// Writes one item's answer (not trees) into its padded block `out` (zeros
/// beyond the item's words).
fn lay_out<S: Scalar, T: Clone>(
    answer: &Answer<S>,
    shape: Shape,
    out: &mut [T],
    number: &impl Fn(&S) -> T,
    float: &impl Fn(f64) -> T,
) {
    let float_ref = |x: &f64| float(*x);
    let half = out.len() / 2;
    match answer {
        Answer::Float(x) => out[0] = float(*x),
        Answer::Scalar(x) => out[0] = number(x),
        Answer::Divergence(Divergence::Finite(x)) => out[0] = number(x),
        Answer::Divergence(Divergence::Infinite { .. }) => out[0] = float(f64::INFINITY),
        Answer::Labels(ms) => lay_matrices(ms, shape, out, number),
        Answer::Pair(p, q) => {
            let (a, b) = out.split_at_mut(half);
            lay_matrices(p, shape, a, number);
            lay_matrices(q, shape, b, number);
        }
        Answer::F64Labels(ms) => lay_matrices(ms, shape, out, &float_ref),
        Answer::F64Pair(p, q) => {
            let (a, b) = out.split_at_mut(half);
            lay_matrices(p, shape, a, &float_ref);
            lay_matrices(q, shape, b, &float_ref);
        }
        Answer::Dense(c) => {
            for i in 0..c.rows() {
                for j in 0..c.cols() {
                    out[i * c.cols() + j] = number(&c[(i, j)]);
                }
            }
        }
        // Laid out by `trees`, or already in place.
        Answer::Trees(_) | Answer::Written => {}
    }
}

impl<B: Backend> AnyBatch for Models<B> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn precise(&self) -> bool {
        precise::<B>()
    }

    fn failures(&self) -> Vec<Failure> {
        failures_of(&self.items)
    }

    fn ask(
        &self,
        asks: &[Ask],
        other: Option<&dyn AnyBatch>,
        extra: &Extra,
        threads: usize,
        outs: Vec<Option<&mut [f64]>>,
    ) -> Result<Vec<(Flat, Vec<Failure>)>, String> {
        let other = match other {
            Some(o) => Some(
                o.as_any()
                    .downcast_ref::<Models<B>>()
                    .ok_or("p and q must be on the same backend")?,
            ),
            None => None,
        };
        if let Some(o) = other {
            if o.items.len() != self.items.len() {
                return Err(format!(
                    "p has {} batch items and q has {}",
                    self.items.len(),
                    o.items.len()
                ));
            }
        }
        let answers = run_items(threads, &self.items, outs, |i, sinks| {
            let all = |e: &Error| asks.iter().map(|_| Err(e.clone())).collect();
            let mut answers: Vec<Answered<B::Scalar>> = match &self.items[i] {
                Err(e) => all(e),
                Ok(item) => item.with(
                    self.keep,
                    |g| self.build(g),
                    |model| {
                        let model = match model {
                            Ok(model) => model,
                            Err(e) => return all(e),
                        };
                        let answer = |q: Option<&Model<B>>| {
                            asks.iter()
                                .map(|&ask| self.answer(ask, i, model, q, extra))
                                .collect()
                        };
                        match other.map(|o| (o, &o.items[i])) {
                            None => answer(None),
                            Some((_, Err(e))) => all(e),
                            Some((o, Ok(q))) => q.with(
                                o.keep,
                                |g| o.build(g),
                                |q| match q {
                                    Ok(q) => answer(Some(q)),
                                    Err(e) => all(e),
                                },
                            ),
                        }
                    },
                ),
            };
            write(&mut answers, sinks, self.shape);
            answers
        })?;
        Ok(lay_out_all::<B>(self.shape, asks, extra, &answers))
    }
}

/// The items that failed to build, as [`Failure`]s.
fn failures_of<T>(items: &[Result<T, Error>]) -> Vec<Failure> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.as_ref().err().map(|e| failure(i, e)))
        .collect()
}

/// Every item's answers (`answers[i][k]` to `asks[k]`) laid out per question.
fn lay_out_all<B: Backend>(
    shape: Shape,
    asks: &[Ask],
    extra: &Extra,
    answers: &[Vec<Answered<B::Scalar>>],
) -> Vec<(Flat, Vec<Failure>)> {
    asks.iter()
        .enumerate()
        .map(|(k, ask)| {
            let item = ask.item_shape(&shape, extra);
            let column = answers.iter().map(|a| &a[k]);
            if ask.is_trees() {
                trees(shape, column, item[0])
            } else {
                flatten::<B>(shape, column, item.iter().product())
            }
        })
        .collect()
}

/// The answers to one question, laid out flat with padding.
fn flatten<'a, B: Backend + 'a>(
    shape: Shape,
    answers: impl ExactSizeIterator<Item = &'a Result<Answer<B::Scalar>, Error>>,
    block: usize,
) -> (Flat, Vec<Failure>) {
    let mut failures = Vec::new();
    let count = answers.len();
    let text = |exact: bool| {
        move |x: &B::Scalar| {
            let t = if exact {
                B::exact_text(x)
            } else {
                B::precise_text(x)
            };
            t.unwrap_or_else(|| format!("{:?}", x.to_f64()))
        }
    };
    if B::EXACT || precise::<B>() {
        let mut out = vec!["0".to_owned(); block * count];
        for (i, (a, chunk)) in answers.zip(out.chunks_mut(block)).enumerate() {
            match a {
                Ok(a) => lay_out(a, shape, chunk, &text(B::EXACT), &|x: f64| format!("{x:?}")),
                Err(e) => failures.push(failure(i, e)),
            }
        }
        let flat = if B::EXACT {
            Flat::Exact(out)
        } else {
            Flat::Precise(out)
        };
        return (flat, failures);
    }
    // Float values went straight into the caller's buffer (`write`).
    for (i, a) in answers.enumerate() {
        if let Err(e) = a {
            failures.push(failure(i, e));
        }
    }
    (Flat::Written, failures)
}

/// Tree answers laid out as [`Flat::Trees`] with `k` trees per item.
fn trees<'a, S: 'a>(
    shape: Shape,
    answers: impl ExactSizeIterator<Item = &'a Result<Answer<S>, Error>>,
    k: usize,
) -> (Flat, Vec<Failure>) {
    let words = shape.side - 1;
    let count = answers.len();
    let mut heads = vec![-1i64; count * k * words];
    let mut labels = shape.labeled.then(|| vec![-1i64; count * k * words]);
    let mut values = vec![f64::NEG_INFINITY; count * k];
    let mut failures = Vec::new();
    for (i, a) in answers.enumerate() {
        match a {
            Ok(Answer::Trees(trees)) => {
                for (j, (tree, value)) in trees.iter().enumerate().take(k) {
                    let at = (i * k + j) * words;
                    for (w, &h) in tree.heads().iter().enumerate() {
                        heads[at + w] = h as i64;
                    }
                    if let (Some(out), Some(ls)) = (labels.as_mut(), tree.labels()) {
                        for (w, &l) in ls.iter().enumerate() {
                            out[at + w] = l as i64;
                        }
                    }
                    values[i * k + j] = *value;
                }
            }
            Ok(_) => {}
            Err(e) => {
                values[i * k..(i + 1) * k].fill(f64::NAN);
                failures.push(failure(i, e));
            }
        }
    }
    (
        Flat::Trees {
            heads,
            labels,
            values,
        },
        failures,
    )
}

/// A batch of projective distributions: Eisner's chart per item, in `f64`
/// log space (the quantities of [`Structure::Projective`]).
struct Charts {
    shape: Shape,
    rooting: Rooting,
    keep: bool,
    items: Items<Projective>,
}

impl Charts {
    fn answer(
        &self,
        ask: Ask,
        chart: &Projective,
        graph: &Graph<f64>,
    ) -> Result<Answer<f64>, Error> {
        let labeled = self.shape.labeled;
        Ok(match ask {
            Ask::LogPartition => Answer::Float(chart.log_partition()?),
            Ask::Marginals if labeled => Answer::Labels(chart.label_marginals()?),
            Ask::Marginals => Answer::Labels(vec![chart.marginals()?]),
            Ask::Entropy => Answer::Scalar(chart.entropy()?),
            Ask::GradEntropy => Answer::Labels(chart.grad_entropy()?),
            Ask::BestTree => {
                let tree = chart.best_tree()?;
                let score = tree.score(graph)?;
                Answer::Trees(vec![(tree, score)])
            }
            Ask::MbrTree => Answer::Trees(vec![typed::projective_mbr_tree(chart)?]),
            // `Batch::ask` refuses the others through the front end's check.
            _ => return Err(Error::Unsupported("this quantity over projective trees")),
        })
    }
}

impl AnyBatch for Charts {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn precise(&self) -> bool {
        false
    }

    fn failures(&self) -> Vec<Failure> {
        failures_of(&self.items)
    }

    fn ask(
        &self,
        asks: &[Ask],
        _other: Option<&dyn AnyBatch>,
        extra: &Extra,
        threads: usize,
        outs: Vec<Option<&mut [f64]>>,
    ) -> Result<Vec<(Flat, Vec<Failure>)>, String> {
        let answers = run_items(threads, &self.items, outs, |i, sinks| {
            let all = |e: &Error| asks.iter().map(|_| Err(e.clone())).collect();
            let mut answers: Vec<Answered<f64>> = match &self.items[i] {
                Err(e) => all(e),
                Ok(item) => item.with(
                    self.keep,
                    |g| Projective::new(g, self.rooting),
                    |chart| match chart {
                        Ok(chart) => asks
                            .iter()
                            .map(|&ask| self.answer(ask, chart, &item.graph))
                            .collect(),
                        Err(e) => all(e),
                    },
                ),
            };
            write(&mut answers, sinks, self.shape);
            answers
        })?;
        Ok(lay_out_all::<spantree_faer::F64>(
            self.shape, asks, extra, &answers,
        ))
    }
}

/// Builds the models of a batch on the backend it is dispatched to.
struct Build<'a> {
    scores: &'a [f64],
    shape: Shape,
    n_words: &'a [usize],
    rooting: Rooting,
    structure: Structure,
    threads: usize,
    /// Whether items keep their factors for later questions.
    keep: bool,
}

impl Build<'_> {
    /// Item `i`'s validated graph of `n_words[i]` words.
    fn graph(&self, i: usize) -> Result<Graph<f64>, Error> {
        let Shape {
            side,
            labels,
            labeled,
            ..
        } = self.shape;
        let padded = Padded {
            items: self.n_words.len(),
            side,
            labels,
            labeled,
        };
        padded.graph(self.scores, i, self.n_words[i])
    }

    /// The validated items, `O(n²)` each: each is factorised by the first
    /// question, graph by graph with its answers.
    fn items<M: Send + Sync>(&self) -> Result<Items<M>, String> {
        run(self.threads, self.n_words, |i| {
            let graph = self.graph(i)?;
            graph
                .spanning_tree(self.rooting)
                .map_err(Error::NoSpanningTree)?;
            Ok(Item::new(graph))
        })
    }
}

impl WithBackend for Build<'_> {
    type Output = Result<Box<dyn AnyBatch>, String>;

    fn run<B: Backend>(self, backend: &B) -> Self::Output {
        let (shape, rooting, keep) = (self.shape, self.rooting, self.keep);
        if self.structure == Structure::Projective {
            // Eisner's chart in f64 log space, whatever the (float) backend.
            return Ok(Box::new(Charts {
                shape,
                rooting,
                keep,
                items: self.items()?,
            }));
        }
        Ok(Box::new(Models::<B> {
            shape,
            backend: backend.clone(),
            rooting,
            keep,
            items: self.items()?,
        }))
    }
}

fn usage(e: UsageError) -> PyErr {
    let kind = match e {
        UsageError::Unsupported { .. } => "unsupported",
        UsageError::UnknownBackend { .. } => "unknown_backend",
        UsageError::UnknownRooting { .. } => "unknown_rooting",
        _ => "usage",
    };
    PyValueError::new_err((kind, e.to_string()))
}

/// A batch of sentence graphs on one backend, validated and factorised
/// once (see the Python class `spantree.TreeDistribution`).
#[pyclass(module = "spantree._spantree", frozen)]
struct Batch {
    inner: Box<dyn AnyBatch>,
    backend: BackendKind,
    rooting: Rooting,
    structure: Structure,
    shape: Shape,
    /// Items that failed at construction, in the form of [`Failure`].
    failures: Vec<Failure>,
}

/// The front end's request for `quantities` over the trees of `structure`:
/// its checks (projective trees need a float backend and have only some
/// quantities) are the command's.
fn request(
    backend: BackendKind,
    rooting: Rooting,
    quantities: &[Quantity],
    structure: Structure,
) -> PyResult<Request> {
    Request::unchecked(backend, rooting, quantities, false)
        .with_structure(structure)
        .map_err(usage)
}

#[pymethods]
impl Batch {
    /// `scores`: `[B, N+1, N+1, L]` float64 (`L = 1` and `labeled = False`
    /// for plain graphs); `n_words`: `B` sentence lengths `1 ≤ n ≤ N`.
    #[new]
    /// `structure`: `"nonprojective"` (all spanning trees) or
    /// `"projective"` (Eisner's chart).
    ///
    /// Construction validates the graphs (`O(n²)` each); the first
    /// question factorises each item and answers it graph by graph. With
    /// `keep` the factors stay for later questions; without (the one-shot
    /// functions, which ask once) each is dropped after its answers.
    #[pyo3(signature = (scores, n_words, labeled, rooting, backend, threads, structure="nonprojective", keep=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        scores: PyReadonlyArray4<'_, f64>,
        n_words: Vec<usize>,
        labeled: bool,
        rooting: &str,
        backend: &str,
        threads: usize,
        structure: &str,
        keep: bool,
    ) -> PyResult<Self> {
        let backend: BackendKind = backend.parse().map_err(usage)?;
        let rooting = parse_rooting(rooting).map_err(usage)?;
        let known = [Structure::Nonprojective, Structure::Projective];
        let Some(structure) = known.into_iter().find(|s| s.name() == structure) else {
            return Err(PyValueError::new_err((
                "usage",
                format!("unknown structure {structure:?}: nonprojective or projective"),
            )));
        };
        request(backend, rooting, &[], structure)?;
        let dims = scores.shape().to_vec();
        // The shape checks are the api's (`spantree_api::arrays`), fuzzed there.
        let padded = Padded::new(&dims, &n_words, labeled, scores.as_array().len())
            .map_err(|e| PyValueError::new_err((e.kind, e.message)))?;
        let shape = Shape {
            items: padded.items,
            side: padded.side,
            labels: padded.labels,
            labeled,
        };
        // The caller's buffer when contiguous (the Python half makes it so).
        let copy;
        let data: &[f64] = match scores.as_slice() {
            Ok(data) => data,
            Err(_) => {
                copy = scores.as_array().iter().copied().collect::<Vec<f64>>();
                &copy
            }
        };
        let built = py.detach(|| {
            backend.dispatch(Build {
                scores: data,
                shape,
                n_words: &n_words,
                rooting,
                structure,
                threads,
                keep,
            })
        });
        let inner = built.map_err(PyRuntimeError::new_err)?;
        let failures = inner.failures();
        Ok(Batch {
            inner,
            backend,
            rooting,
            structure,
            shape,
            failures,
        })
    }

    /// `"nonprojective"` or `"projective"`.
    #[getter]
    fn structure(&self) -> &'static str {
        self.structure.name()
    }

    /// The backend's name.
    #[getter]
    fn backend(&self) -> &'static str {
        self.backend.name()
    }

    /// Whether values are exact rationals (strings from [`Batch::ask`]).
    #[getter]
    fn exact(&self) -> bool {
        self.backend.is_exact()
    }

    /// Whether values are decimal strings at more than `f64` precision
    /// (the high-precision backend).
    #[getter]
    fn precise(&self) -> bool {
        self.inner.precise()
    }

    /// `(B, N+1, L, labeled)`.
    #[getter]
    fn shape(&self) -> (usize, usize, usize, bool) {
        (
            self.shape.items,
            self.shape.side,
            self.shape.labels,
            self.shape.labeled,
        )
    }

    /// The items whose graph failed to validate or has no spanning tree:
    /// `[(item, kind, message, arc)]`.
    #[getter]
    fn failures(&self) -> Vec<Failure> {
        self.failures.clone()
    }

    /// Quantities of every item, in one pass over the items: for each
    /// `(name, param)` of `asks`, `(values, item_shape, failures)`, values
    /// flat (float64 array, a list of rational strings on the exact
    /// backend, of decimal strings on the high-precision one), padded with
    /// exact zeros, NaN for failed items; for trees, values is
    /// `(heads, labels or None, numbers)` (see [`Flat::Trees`]).
    ///
    /// The inputs some questions read, each padded over the batch:
    /// `seed`/`seed_q` `[B, N+1, N+1, L]`, `heads`/`labels` `[B, N]`,
    /// `features`/`features_s` `[B, N+1, N+1, L, F]`, `targets` `[B, F]`;
    /// `sample_seed` for the samplers.
    #[pyo3(signature = (asks, other=None, seed=None, threads=1, *, seed_q=None, heads=None,
                        labels=None, features=None, features_s=None, targets=None, sample_seed=0))]
    #[allow(clippy::too_many_arguments)]
    fn ask<'py>(
        &self,
        py: Python<'py>,
        asks: Vec<(String, f64)>,
        other: Option<PyRef<'py, Batch>>,
        seed: Option<PyReadonlyArray4<'py, f64>>,
        threads: usize,
        seed_q: Option<PyReadonlyArray4<'py, f64>>,
        heads: Option<PyReadonlyArray2<'py, i64>>,
        labels: Option<PyReadonlyArray2<'py, i64>>,
        features: Option<PyReadonlyArrayDyn<'py, f64>>,
        features_s: Option<PyReadonlyArrayDyn<'py, f64>>,
        targets: Option<PyReadonlyArray2<'py, f64>>,
        sample_seed: u64,
    ) -> PyResult<Vec<Asked>> {
        let mut parsed = Vec::with_capacity(asks.len());
        for (name, param) in &asks {
            let (ask, quantity) = Ask::parse(name, *param)?;
            if let Some(q) = quantity {
                q.check(self.backend).map_err(usage)?;
                request(self.backend, self.rooting, &[q], self.structure)?;
            }
            parsed.push(ask);
        }
        let Shape {
            items,
            side,
            labels: l,
            ..
        } = self.shape;
        let grid = [items, side, side, l];
        let features = features
            .map(|f| {
                let dim = f.shape().get(4).copied().unwrap_or(0);
                checked(&f, &[items, side, side, l, dim], "features").map(|v| (v, dim))
            })
            .transpose()?;
        let features_s = features_s
            .map(|f| {
                let dim = f.shape().get(4).copied().unwrap_or(0);
                checked(&f, &[items, side, side, l, dim], "features_s").map(|v| (v, dim))
            })
            .transpose()?;
        let dim = features.as_ref().map_or(0, |f| f.1);
        let extra = Extra {
            seed: seed.map(|s| checked(&s, &grid, "seed")).transpose()?,
            seed_q: seed_q.map(|s| checked(&s, &grid, "seed_q")).transpose()?,
            heads: heads
                .map(|h| checked(&h, &[items, side - 1], "heads"))
                .transpose()?,
            labels: labels
                .map(|h| checked(&h, &[items, side - 1], "labels"))
                .transpose()?,
            targets: targets
                .map(|t| checked(&t, &[items, dim], "targets"))
                .transpose()?,
            features,
            features_s,
            sample_seed,
        };
        let other_inner = other.as_ref().map(|o| &*o.inner);
        // Float answers go straight into their NumPy arrays, item by item.
        let floats = !self.backend.is_exact() && !self.inner.precise();
        let arrays: Vec<Option<Bound<'py, PyArray1<f64>>>> = parsed
            .iter()
            .map(|ask| {
                let block: usize = ask.item_shape(&self.shape, &extra).iter().product();
                (floats && !ask.is_trees()).then(|| PyArray1::zeros(py, items * block, false))
            })
            .collect();
        let mut writers: Vec<_> = arrays
            .iter()
            .map(|a| a.as_ref().map(|a| a.readwrite()))
            .collect();
        let outs: Vec<Option<&mut [f64]>> = writers
            .iter_mut()
            .map(|w| w.as_mut().and_then(|w| w.as_slice_mut().ok()))
            .collect();
        let results = py
            .detach(|| self.inner.ask(&parsed, other_inner, &extra, threads, outs))
            .map_err(|e| PyValueError::new_err(("mismatch", e)))?;
        drop(writers);
        let mut out = Vec::with_capacity(results.len());
        for ((ask, (flat, failures)), array) in parsed.iter().zip(results).zip(arrays) {
            let values = match flat {
                Flat::Written => array
                    .ok_or_else(|| PyRuntimeError::new_err("an answer without its array"))?
                    .into_any()
                    .unbind(),
                Flat::Exact(v) | Flat::Precise(v) => v.into_pyobject(py)?.into_any().unbind(),
                Flat::Trees {
                    heads,
                    labels,
                    values,
                } => (
                    PyArray1::from_vec(py, heads),
                    labels.map(|l| PyArray1::from_vec(py, l)),
                    PyArray1::from_vec(py, values),
                )
                    .into_pyobject(py)?
                    .into_any()
                    .unbind(),
            };
            out.push((values, ask.item_shape(&self.shape, &extra), failures));
        }
        Ok(out)
    }
}

/// The values of an array of the expected shape, row-major.
///
/// # Errors
/// A `ValueError("shape", …)` naming the array for any other shape.
fn checked<T: numpy::Element + Copy, D: numpy::ndarray::Dimension>(
    a: &numpy::PyReadonlyArray<'_, T, D>,
    want: &[usize],
    what: &str,
) -> PyResult<Vec<T>> {
    if a.shape() != want {
        return Err(PyValueError::new_err((
            "shape",
            format!("{what} must have shape {want:?}, got {:?}", a.shape()),
        )));
    }
    Ok(a.as_array().iter().copied().collect())
}

/// The backends by name, and one line of help each.
#[pyfunction]
fn backends() -> Vec<(&'static str, &'static str)> {
    BackendKind::ALL.map(|b| (b.name(), b.help())).to_vec()
}

/// The native module `spantree._spantree`.
#[pymodule]
fn _spantree(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Batch>()?;
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    Ok(())
}
