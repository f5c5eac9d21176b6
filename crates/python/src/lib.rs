//! # spantree-python
//!
//! The native half of the Python package `spantree` (the module
//! `spantree._spantree`; the Python half in `python/spantree` shapes the
//! arrays, builds `fractions.Fraction`s and raises the exceptions). One
//! class, [`Batch`]: a batch of sentence graphs, validated and factorised
//! once on a backend chosen by name, that answers many questions.
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

use numpy::{PyArray1, PyReadonlyArray4, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;
use spantree_api::arrays::Padded;
use spantree_api::{parse_rooting, Backend, BackendKind, Quantity, UsageError, WithBackend};
use spantree_core::{Divergence, Error, Matrix, Model, Rooting, Scalar};

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
/// padding, as `f64` or (exact backend) as rational strings.
enum Flat {
    Float(Vec<f64>),
    Exact(Vec<String>),
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
}

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
            _ => {
                return Err(PyValueError::new_err((
                    "unknown_quantity",
                    format!("unknown quantity {name:?}"),
                )))
            }
        })
    }

    /// Item shape: 0 for a number, 1 for matrices, 2 for a pair of them.
    fn rank(self) -> usize {
        match self {
            Ask::LogPartition
            | Ask::Partition
            | Ask::Entropy
            | Ask::Renyi(_)
            | Ask::LpNorm(_)
            | Ask::CrossEntropy
            | Ask::Kl => 0,
            Ask::Marginals | Ask::GradEntropy | Ask::MarginalsVjp => 1,
            Ask::GradKl => 2,
        }
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

impl Shape {
    /// The shape of one item's answer, without the batch axis.
    fn item(&self, rank: usize) -> Vec<usize> {
        let mut s = Vec::new();
        if rank == 2 {
            s.push(2);
        }
        if rank >= 1 {
            s.extend([self.side, self.side]);
            if self.labeled {
                s.push(self.labels);
            }
        }
        s
    }
}

/// A batch on one backend, type-erased for the Python class.
trait AnyBatch: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    /// The items that failed to build.
    fn failures(&self) -> Vec<Failure>;
    /// Every question of `asks` of every item, in one pass over the items
    /// (each item answers all its questions while its factorisation is in
    /// cache); one `(values, failures)` per question.
    fn ask(
        &self,
        asks: &[Ask],
        other: Option<&dyn AnyBatch>,
        seed: Option<&[f64]>,
        threads: usize,
    ) -> Result<Vec<(Flat, Vec<Failure>)>, String>;
}

struct Models<B: Backend> {
    shape: Shape,
    items: Vec<Result<Model<B>, Error>>,
}

/// Runs `f` on `0..count`, in order: in the calling thread for `threads = 1`
/// (nothing to survive a fork), on a fresh pool otherwise (`0`: all cores).
fn run<T: Send>(
    threads: usize,
    count: usize,
    f: impl Fn(usize) -> T + Sync + Send,
) -> Result<Vec<T>, String> {
    if threads == 1 || count <= 1 {
        return Ok((0..count).map(f).collect());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| format!("cannot start {threads} threads: {e}"))?;
    Ok(pool.install(|| (0..count).into_par_iter().map(f).collect()))
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

impl<B: Backend> Models<B> {
    /// One item's answer.
    fn answer(
        &self,
        ask: Ask,
        model: &Model<B>,
        q: Option<&Model<B>>,
        seed: Option<&[f64]>,
    ) -> Result<Answer<B::Scalar>, Error> {
        let info = || B::information().ok_or(Error::Unsupported("a logarithmic quantity"));
        let q = || q.ok_or(Error::Unsupported("a divergence without q"));
        Ok(match ask {
            Ask::LogPartition => Answer::Float(model.log_partition()?),
            Ask::Partition => Answer::Scalar(model.partition()?),
            Ask::Marginals if self.shape.labeled => {
                Answer::Labels(model.label_marginals()?.into_vec())
            }
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
                let seed = seed.ok_or(Error::Unsupported("marginals_vjp without a seed"))?;
                let side = self.shape.side;
                let labels = self.shape.labels;
                let n1 = model.n() + 1;
                // The seed's labels for this item, read off the padded layout.
                let seeds: Vec<Matrix<B::Scalar>> = (0..labels)
                    .map(|l| {
                        Matrix::from_fn(n1, n1, |h, m| {
                            B::Scalar::from_f64(seed[(h * side + m) * labels + l])
                        })
                    })
                    .collect();
                let seeds = if self.shape.labeled {
                    seeds
                } else {
                    seeds.into_iter().take(1).collect()
                };
                Answer::Labels(model.label_marginals_vjp(&seeds)?.into_vec())
            }
        })
    }
}

/// Writes one item's answer into its padded block `out` (zeros beyond the
/// item's words).
fn lay_out<S: Scalar, T: Clone>(
    answer: &Answer<S>,
    shape: Shape,
    out: &mut [T],
    number: &impl Fn(&S) -> T,
    float: &impl Fn(f64) -> T,
) {
    let side = shape.side;
    let labels = shape.labels;
    let matrices = |ms: &[Matrix<S>], out: &mut [T]| {
        for (l, m) in ms.iter().enumerate() {
            for h in 0..m.rows() {
                for d in 0..m.cols() {
                    out[(h * side + d) * labels + l] = number(&m[(h, d)]);
                }
            }
        }
    };
    match answer {
        Answer::Float(x) => out[0] = float(*x),
        Answer::Scalar(x) => out[0] = number(x),
        Answer::Divergence(Divergence::Finite(x)) => out[0] = number(x),
        Answer::Divergence(Divergence::Infinite { .. }) => out[0] = float(f64::INFINITY),
        Answer::Labels(ms) => matrices(ms, out),
        Answer::Pair(p, q) => {
            let half = out.len() / 2;
            let (a, b) = out.split_at_mut(half);
            matrices(p, a);
            matrices(q, b);
        }
    }
}

impl<B: Backend> AnyBatch for Models<B> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn failures(&self) -> Vec<Failure> {
        self.items
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.as_ref().err().map(|e| failure(i, e)))
            .collect()
    }

    fn ask(
        &self,
        asks: &[Ask],
        other: Option<&dyn AnyBatch>,
        seed: Option<&[f64]>,
        threads: usize,
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
        let blocks: Vec<usize> = asks
            .iter()
            .map(|a| self.shape.item(a.rank()).iter().product())
            .collect();
        let seed_block = self.shape.side * self.shape.side * self.shape.labels;
        let answers = run(threads, self.items.len(), |i| {
            let model = self.items[i].as_ref().map_err(Clone::clone);
            let q = other.map(|o| o.items[i].as_ref().map_err(Clone::clone));
            let seed = seed.map(|s| &s[i * seed_block..(i + 1) * seed_block]);
            asks.iter()
                .map(|&ask| {
                    let model = model.clone()?;
                    let q = q.clone().transpose()?;
                    self.answer(ask, model, q, seed)
                })
                .collect::<Vec<_>>()
        })?;
        Ok(asks
            .iter()
            .enumerate()
            .map(|(k, _)| self.flatten(answers.iter().map(|a| &a[k]), blocks[k]))
            .collect())
    }
}

impl<B: Backend> Models<B> {
    /// The answers to one question, laid out flat with padding.
    fn flatten<'a>(
        &self,
        answers: impl ExactSizeIterator<Item = &'a Result<Answer<B::Scalar>, Error>>,
        block: usize,
    ) -> (Flat, Vec<Failure>)
    where
        B: 'a,
    {
        let mut failures = Vec::new();
        let shape = self.shape;
        let count = answers.len();
        let flat = if B::EXACT {
            let mut out = vec!["0".to_owned(); block * count];
            for (i, (a, chunk)) in answers.zip(out.chunks_mut(block)).enumerate() {
                match a {
                    Ok(a) => lay_out(
                        a,
                        shape,
                        chunk,
                        &|x: &B::Scalar| B::exact_text(x).unwrap_or_else(|| x.to_f64().to_string()),
                        &|x: f64| format!("{x:?}"),
                    ),
                    Err(e) => failures.push(failure(i, e)),
                }
            }
            Flat::Exact(out)
        } else {
            let mut out = vec![0.0; block * count];
            for (i, (a, chunk)) in answers.zip(out.chunks_mut(block)).enumerate() {
                match a {
                    Ok(a) => lay_out(a, shape, chunk, &|x: &B::Scalar| x.to_f64(), &|x| x),
                    Err(e) => {
                        // A failed item holds NaN, never a number that looks valid.
                        chunk.fill(f64::NAN);
                        failures.push(failure(i, e));
                    }
                }
            }
            Flat::Float(out)
        };
        (flat, failures)
    }
}

/// Builds the models of a batch on the backend it is dispatched to.
struct Build<'a> {
    scores: &'a [f64],
    shape: Shape,
    n_words: &'a [usize],
    rooting: Rooting,
    threads: usize,
}

impl WithBackend for Build<'_> {
    type Output = Result<Box<dyn AnyBatch>, String>;

    fn run<B: Backend>(self, backend: &B) -> Self::Output {
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
        let items = run(self.threads, self.n_words.len(), |i| {
            let graph = padded.graph(self.scores, i, self.n_words[i])?;
            let model = Model::new(backend.clone(), &graph, self.rooting)?;
            model.spanning_tree().map_err(Error::NoSpanningTree)?;
            Ok(model)
        })?;
        Ok(Box::new(Models::<B> {
            shape: self.shape,
            items,
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
    shape: Shape,
    /// Items that failed at construction, in the form of [`Failure`].
    failures: Vec<Failure>,
}

#[pymethods]
impl Batch {
    /// `scores`: `[B, N+1, N+1, L]` float64 (`L = 1` and `labeled = False`
    /// for plain graphs); `n_words`: `B` sentence lengths `1 ≤ n ≤ N`.
    #[new]
    #[pyo3(signature = (scores, n_words, labeled, rooting, backend, threads))]
    fn new(
        py: Python<'_>,
        scores: PyReadonlyArray4<'_, f64>,
        n_words: Vec<usize>,
        labeled: bool,
        rooting: &str,
        backend: &str,
        threads: usize,
    ) -> PyResult<Self> {
        let backend: BackendKind = backend.parse().map_err(usage)?;
        let rooting = parse_rooting(rooting).map_err(usage)?;
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
        let data: Vec<f64> = scores.as_array().iter().copied().collect();
        let built = py.detach(|| {
            backend.dispatch(Build {
                scores: &data,
                shape,
                n_words: &n_words,
                rooting,
                threads,
            })
        });
        let inner = built.map_err(PyRuntimeError::new_err)?;
        let failures = inner.failures();
        Ok(Batch {
            inner,
            backend,
            shape,
            failures,
        })
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
    /// flat (float64 array, or a list of rational strings on the exact
    /// backend), padded with exact zeros, NaN for failed items.
    #[pyo3(signature = (asks, other=None, seed=None, threads=1))]
    fn ask<'py>(
        &self,
        py: Python<'py>,
        asks: Vec<(String, f64)>,
        other: Option<PyRef<'py, Batch>>,
        seed: Option<PyReadonlyArray4<'py, f64>>,
        threads: usize,
    ) -> PyResult<Vec<Asked>> {
        let mut parsed = Vec::with_capacity(asks.len());
        for (name, param) in &asks {
            let (ask, quantity) = Ask::parse(name, *param)?;
            if let Some(q) = quantity {
                q.check(self.backend).map_err(usage)?;
            }
            parsed.push(ask);
        }
        let seed: Option<Vec<f64>> = match seed {
            Some(s) => {
                let want = [
                    self.shape.items,
                    self.shape.side,
                    self.shape.side,
                    self.shape.labels,
                ];
                if s.shape() != want {
                    return Err(PyValueError::new_err((
                        "shape",
                        format!("the seed must have shape {want:?}, got {:?}", s.shape()),
                    )));
                }
                Some(s.as_array().iter().copied().collect())
            }
            None => None,
        };
        let other_inner = other.as_ref().map(|o| &*o.inner);
        let results = py
            .detach(|| {
                self.inner
                    .ask(&parsed, other_inner, seed.as_deref(), threads)
            })
            .map_err(|e| PyValueError::new_err(("mismatch", e)))?;
        let mut out = Vec::with_capacity(results.len());
        for (ask, (flat, failures)) in parsed.iter().zip(results) {
            let values = match flat {
                Flat::Float(v) => PyArray1::from_vec(py, v).into_any().unbind(),
                Flat::Exact(v) => v.into_pyobject(py)?.into_any().unbind(),
            };
            out.push((values, self.shape.item(ask.rank()), failures));
        }
        Ok(out)
    }
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
