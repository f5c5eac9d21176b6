//! The per-sentence speed table: every op a user calls, timed per sentence
//! on the default and the dense engines, next to the bare kernels it cannot
//! avoid (the exponentials of the scores, the LU of the Laplacian, its
//! inverse, two `n × n` solves), in one run, so that the ratio op ÷ kernel
//! says how much time goes to anything but the factorisations.
//!
//! Shared by the `speed` criterion bench and `spantree-report speed`.

use std::hint::black_box;

use faer::linalg::solvers::{DenseSolveCore, PartialPivLu, SolveCore};
use faer::{Conj, Mat};
use spantree_core::{ArcFeatures, Engine, Factorization, Graph, Matrix, Model, Rooting};
use spantree_faer::Lu;

use crate::{normal_graph, sparse_features};

/// The sentence lengths of the table.
pub const SIZES: [usize; 6] = [10, 20, 36, 50, 100, 200];

/// The standard deviation of the scores: `N(0, 2²)`, inputs that dense LU
/// holds (no elimination needed).
pub const SIGMA: f64 = 2.0;

/// One operation a user calls, per sentence (the model is built inside:
/// validation, preparation and factorisation are part of the call).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `ln Z`.
    LogZ,
    /// `ln Z` and every arc marginal.
    LogZMarginals,
    /// The entropy `H(p)`.
    Entropy,
    /// `∇_θ H(p)`.
    GradEntropy,
    /// The gradient of the GE objective (20 sparse features).
    GradGe,
    /// `KL(p ‖ q)`, two models.
    Kl,
}

impl Op {
    /// Every op, in table order.
    pub const ALL: [Op; 6] = [
        Op::LogZ,
        Op::LogZMarginals,
        Op::Entropy,
        Op::GradEntropy,
        Op::GradGe,
        Op::Kl,
    ];

    /// The op's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Op::LogZ => "log_z",
            Op::LogZMarginals => "log_z+marginals",
            Op::Entropy => "entropy",
            Op::GradEntropy => "grad_entropy",
            Op::GradGe => "grad_ge",
            Op::Kl => "kl",
        }
    }

    /// The bare kernel the op needs: its dense factorisations and nothing else.
    pub fn kernel(self) -> Kernel {
        match self {
            Op::LogZ => Kernel::ExpLu,
            Op::LogZMarginals | Op::Entropy => Kernel::ExpLuInverse,
            Op::GradEntropy | Op::GradGe => Kernel::ExpLuInverseSolves,
            Op::Kl => Kernel::TwoExpLuInverse,
        }
    }
}

/// A bare kernel: what any implementation must pay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// `e^θ` of every arc, the Laplacian, its LU.
    ExpLu,
    /// … and the inverse.
    ExpLuInverse,
    /// … and two solves with `n` right-hand sides (`X C X` of reverse mode).
    ExpLuInverseSolves,
    /// `ExpLuInverse` for `p` plus `ExpLu` for `q` (KL).
    TwoExpLuInverse,
}

impl Kernel {
    /// Every kernel, in table order.
    pub const ALL: [Kernel; 4] = [
        Kernel::ExpLu,
        Kernel::ExpLuInverse,
        Kernel::ExpLuInverseSolves,
        Kernel::TwoExpLuInverse,
    ];

    /// The kernel's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::ExpLu => "exp+lu",
            Kernel::ExpLuInverse => "exp+lu+inv",
            Kernel::ExpLuInverseSolves => "exp+lu+inv+2solves",
            Kernel::TwoExpLuInverse => "2exp+2lu+inv",
        }
    }
}

/// Which LU the bare kernel calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelEngine {
    /// faer's `PartialPivLu` called directly.
    Faer,
    /// `spantree_faer::Lu` (the plain LU below its crossover).
    Spantree,
}

/// The inputs of one size: `p` and `q` with `N(0, 2²)` scores, the scores
/// of `p` as a dense matrix for the kernels, GE features and targets.
pub struct Inputs {
    /// The sentence length.
    pub n: usize,
    /// The graph of `p`.
    pub p: Graph,
    /// The graph of `q` (KL).
    pub q: Graph,
    /// The scores of `p`, `(n+1) × (n+1)`, `−∞` off the arcs.
    pub scores: Matrix<f64>,
    /// The scores of `q`.
    pub q_scores: Matrix<f64>,
    /// 20 sparse binary features.
    pub features: ArcFeatures<f64>,
    /// GE targets.
    pub targets: Vec<f64>,
}

impl Inputs {
    /// Seeded inputs for `n` words.
    pub fn new(n: usize, seed: u64) -> Inputs {
        let p = normal_graph(n, SIGMA, seed);
        let q = normal_graph(n, SIGMA, seed + 1);
        let scores = score_matrix(&p);
        let q_scores = score_matrix(&q);
        Inputs {
            n,
            p,
            q,
            scores,
            q_scores,
            features: sparse_features(n, 20, seed + 2),
            targets: vec![0.5; 20],
        }
    }
}

fn score_matrix(g: &Graph) -> Matrix<f64> {
    let n = g.n();
    Matrix::from_fn(n + 1, n + 1, |h, m| {
        if m == 0 || h == m {
            f64::NEG_INFINITY
        } else {
            *g.value(h, m, 0)
        }
    })
}

/// Runs `op` once on `engine`, single-root; returns a number so that
/// nothing is optimised away.
///
/// # Panics
/// If the op fails (the generated inputs are valid and well conditioned).
pub fn run_op<E: Engine<Scalar = f64>>(engine: &E, op: Op, i: &Inputs) -> f64 {
    let model = || Model::new(engine.clone(), &i.p, Rooting::Single).expect("valid graph");
    match op {
        Op::LogZ => model().log_partition().expect("ln Z"),
        Op::LogZMarginals => {
            let m = model();
            m.log_partition().expect("ln Z") + m.marginals().expect("marginals")[(0, 1)]
        }
        Op::Entropy => model().entropy().expect("entropy"),
        Op::GradEntropy => answered(model().grad_entropy()),
        Op::GradGe => answered(model().grad_ge_objective(&i.features, &i.targets)),
        Op::Kl => {
            let q = Model::new(engine.clone(), &i.q, Rooting::Single).expect("valid graph");
            match model().kl_divergence(&q).expect("KL") {
                spantree_core::Divergence::Finite(x) => x,
                spantree_core::Divergence::Infinite { .. } => f64::INFINITY,
            }
        }
    }
}

/// One entry of a gradient, or `NaN` where a dense engine refused it with a
/// typed error (its derivative check, `Inaccuracy::SmallDerivative`): the
/// call is timed either way, refusal included.
///
/// # Panics
/// On any other error (there is none on valid graphs).
fn answered(gradient: spantree_core::Result<spantree_core::PerLabel<f64>>) -> f64 {
    match gradient {
        Ok(g) => g[0][(0, 1)],
        Err(spantree_core::Error::Numerical(spantree_core::Numerical::Inaccurate { .. })) => {
            f64::NAN
        }
        Err(e) => panic!("gradient: {e}"),
    }
}

/// `e^{θ − c_m}` (one vectorised exponential per arc) and the single-root
/// Laplacian, row-major `n × n`, in one fused pass
/// ([`spantree_core::laplacian::exp_laplacian`]).
fn laplacian_of(scores: &Matrix<f64>) -> Matrix<f64> {
    let n1 = scores.rows();
    let mut c = vec![f64::NEG_INFINITY; n1];
    for row in scores.as_slice().chunks_exact(n1) {
        for (c, &s) in c.iter_mut().zip(row) {
            // A select rather than `f64::max` (which must ignore NaNs): it
            // vectorises; the scores have no NaN.
            *c = if s > *c { s } else { *c };
        }
    }
    let mut l = Matrix::zeros(n1 - 1, n1 - 1);
    spantree_core::laplacian::exp_laplacian(scores, &c, Rooting::Single, None, &mut l);
    l
}

/// The bare kernel of one score matrix (`−∞` off the arcs): exponentials
/// and Laplacian, its LU, and optionally the inverse and two solves with
/// `n` right-hand sides, on `engine`; returns a number so that nothing is
/// optimised away.
///
/// # Panics
/// If the Laplacian is singular (finite scores make it nonsingular).
pub fn kernel_of(scores: &Matrix<f64>, engine: KernelEngine, inverse: bool, solves: bool) -> f64 {
    let l = laplacian_of(scores);
    let n = l.rows();
    match engine {
        KernelEngine::Faer => {
            let a = Mat::from_fn(n, n, |r, c| l[(r, c)]);
            let lu = PartialPivLu::new(a.as_ref());
            let mut out = lu.U()[(0, 0)];
            if inverse {
                let x = lu.inverse();
                out += x[(0, 0)];
                if solves {
                    let mut b = x.clone();
                    lu.solve_in_place_with_conj(Conj::No, b.as_mut());
                    lu.solve_transpose_in_place_with_conj(Conj::No, b.as_mut());
                    out += b[(0, 0)];
                }
            }
            out
        }
        KernelEngine::Spantree => {
            let lu = Lu::new(l);
            let mut out = lu.pivots()[0];
            if inverse {
                let x = lu.inverse().expect("nonsingular");
                out += x[(0, 0)];
                if solves {
                    let mut b = x.clone();
                    lu.solve(&mut b).expect("nonsingular");
                    lu.solve_transpose(&mut b).expect("nonsingular");
                    out += b[(0, 0)];
                }
            }
            out
        }
    }
}

/// Runs the bare `kernel` once on `engine`.
pub fn run_kernel(kernel: Kernel, engine: KernelEngine, i: &Inputs) -> f64 {
    let one = |scores: &Matrix<f64>, inverse: bool, solves: bool| -> f64 {
        kernel_of(scores, engine, inverse, solves)
    };
    match kernel {
        Kernel::ExpLu => one(&i.scores, false, false),
        Kernel::ExpLuInverse => one(&i.scores, true, false),
        Kernel::ExpLuInverseSolves => one(&i.scores, true, true),
        Kernel::TwoExpLuInverse => one(&i.scores, true, false) + one(&i.q_scores, false, false),
    }
}

/// The number of calls of `f` that make a timing group last at least about
/// a millisecond (one untimed call measures it).
fn group_size<T>(f: &mut impl FnMut() -> T) -> usize {
    let start = std::time::Instant::now();
    black_box(f());
    let once = start.elapsed().as_secs_f64().max(1e-8);
    ((1e-3 / once).ceil() as usize).clamp(1, 100_000)
}

/// The time of one call of `f` in seconds, over a group of `calls` calls.
fn group_time<T>(calls: usize, f: &mut impl FnMut() -> T) -> f64 {
    let start = std::time::Instant::now();
    for _ in 0..calls {
        black_box(f());
    }
    start.elapsed().as_secs_f64() / calls as f64
}

/// The median of `xs` (the upper one of an even count; NaN when empty).
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The median time of one call of `f` in seconds: calls are grouped so that
/// a group lasts at least about a millisecond, and the median of `groups`
/// groups is divided by the group size.
pub fn median_time<T>(groups: usize, mut f: impl FnMut() -> T) -> f64 {
    let calls = group_size(&mut f);
    median(
        (0..groups.max(1))
            .map(|_| group_time(calls, &mut f))
            .collect(),
    )
}

/// Two calls timed against each other ([`paired_times`]), seconds per call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// The median time of the first.
    pub first: f64,
    /// The median time of the second.
    pub second: f64,
    /// The median of the groups' ratios first ÷ second.
    pub ratio: f64,
}

/// Times `f` and `g` in alternating groups (a group of `f`, then one of `g`,
/// `groups` times; each group lasts about a millisecond): the median time of
/// each and the median of the ratios of the pairs. On a shared machine whose
/// speed drifts over seconds (±40% here, between runs of the same binary),
/// each ratio compares two times taken about a millisecond apart, where two
/// medians taken one after the other may straddle a drift.
pub fn paired_times<T, U>(
    groups: usize,
    mut f: impl FnMut() -> T,
    mut g: impl FnMut() -> U,
) -> Paired {
    let (calls_f, calls_g) = (group_size(&mut f), group_size(&mut g));
    let pairs: Vec<(f64, f64)> = (0..groups.max(1))
        .map(|_| (group_time(calls_f, &mut f), group_time(calls_g, &mut g)))
        .collect();
    Paired {
        first: median(pairs.iter().map(|p| p.0).collect()),
        second: median(pairs.iter().map(|p| p.1).collect()),
        ratio: median(pairs.iter().map(|p| p.0 / p.1).collect()),
    }
}

/// The engines of the table: the default and the two dense ones.
pub const ENGINES: [&str; 3] = ["accurate", "log", "f64"];

/// One op on each of [`ENGINES`]: seconds per call, and its ratio to its
/// bare kernel (the faster of the two LUs), the op and the kernel timed in
/// alternating groups ([`paired_times`]).
#[derive(Clone, Copy, Debug)]
pub struct OpTimes {
    /// The op.
    pub op: Op,
    /// Median seconds per call, per engine.
    pub seconds: [f64; 3],
    /// Median op ÷ kernel of the paired groups, per engine.
    pub ratios: [f64; 3],
}

/// One bare kernel through faer and through `spantree_faer::Lu`, timed in
/// alternating groups ([`paired_times`]).
#[derive(Clone, Copy, Debug)]
pub struct KernelTimes {
    /// The kernel.
    pub kernel: Kernel,
    /// Median seconds per call through faer.
    pub faer: f64,
    /// Median seconds per call through `spantree_faer::Lu`.
    pub spantree: f64,
    /// Median spantree ÷ faer of the paired groups.
    pub ratio: f64,
}

/// One measured size: every op on every engine, every kernel on both LUs.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The sentence length.
    pub n: usize,
    /// The ops, in [`Op::ALL`] order.
    pub ops: Vec<OpTimes>,
    /// The kernels, in [`Kernel::ALL`] order.
    pub kernels: Vec<KernelTimes>,
}

impl Measured {
    /// The bare kernel's time: the faster of the two LUs.
    pub fn kernel(&self, k: Kernel) -> f64 {
        self.kernels
            .iter()
            .find(|r| r.kernel == k)
            .map_or(f64::NAN, |r| r.faer.min(r.spantree))
    }

    /// The LU that runs `k` faster (spantree's when unmeasured).
    fn faster(&self, k: Kernel) -> KernelEngine {
        match self.kernels.iter().find(|r| r.kernel == k) {
            Some(r) if r.faer < r.spantree => KernelEngine::Faer,
            _ => KernelEngine::Spantree,
        }
    }

    /// Cell by cell, the medians of several runs of one size (`spantree-report
    /// speed --runs`): a run's cells share its drift, the median of runs spread
    /// over minutes does not. `None` when `runs` is empty or mixes sizes or
    /// shapes.
    pub fn median_of(runs: &[Measured]) -> Option<Measured> {
        let first = runs.first()?;
        let same_shape = |r: &Measured| {
            r.n == first.n
                && r.ops.len() == first.ops.len()
                && r.kernels.len() == first.kernels.len()
        };
        if !runs.iter().all(same_shape) {
            return None;
        }
        let cell = |f: &dyn Fn(&Measured) -> f64| median(runs.iter().map(f).collect());
        let ops = (0..first.ops.len())
            .map(|o| OpTimes {
                op: first.ops[o].op,
                seconds: std::array::from_fn(|e| cell(&|r| r.ops[o].seconds[e])),
                ratios: std::array::from_fn(|e| cell(&|r| r.ops[o].ratios[e])),
            })
            .collect();
        let kernels = (0..first.kernels.len())
            .map(|k| KernelTimes {
                kernel: first.kernels[k].kernel,
                faer: cell(&|r| r.kernels[k].faer),
                spantree: cell(&|r| r.kernels[k].spantree),
                ratio: cell(&|r| r.kernels[k].ratio),
            })
            .collect();
        Some(Measured {
            n: first.n,
            ops,
            kernels,
        })
    }
}

/// Times every kernel on both LUs, then every op on every engine, each in
/// alternating groups with its bare kernel on the faster LU ([`paired_times`],
/// `groups` pairs each).
pub fn measure(n: usize, groups: usize, seed: u64) -> Measured {
    use spantree_faer::{Accurate, ShiftedF64, F64};
    let i = Inputs::new(n, seed);
    let kernels = Kernel::ALL
        .iter()
        .map(|&kernel| {
            let p = paired_times(
                groups,
                || run_kernel(kernel, KernelEngine::Spantree, &i),
                || run_kernel(kernel, KernelEngine::Faer, &i),
            );
            KernelTimes {
                kernel,
                faer: p.second,
                spantree: p.first,
                ratio: p.ratio,
            }
        })
        .collect();
    let mut m = Measured {
        n,
        ops: Vec::new(),
        kernels,
    };
    for op in Op::ALL {
        let engine = m.faster(op.kernel());
        let against = |run: &dyn Fn() -> f64| {
            paired_times(groups, run, || run_kernel(op.kernel(), engine, &i))
        };
        let p = [
            against(&|| run_op(&Accurate, op, &i)),
            against(&|| run_op(&ShiftedF64, op, &i)),
            against(&|| run_op(&F64, op, &i)),
        ];
        m.ops.push(OpTimes {
            op,
            seconds: p.map(|p| p.first),
            ratios: p.map(|p| p.ratio),
        });
    }
    m
}

fn micros(s: f64) -> String {
    let us = s * 1e6;
    if us >= 100.0 {
        format!("{us:.0}")
    } else if us >= 10.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.2}")
    }
}

/// The two markdown tables: ops against their kernels, and the kernels
/// through faer and through `spantree_faer::Lu` (µs per sentence, medians;
/// each ratio the median of its paired groups, not the ratio of two
/// columns).
pub fn markdown(rows: &[Measured]) -> String {
    let mut s = String::from(
        "| n | op | accurate µs | log µs | f64 µs | kernel | kernel µs | accurate ÷ kernel | log ÷ kernel | f64 ÷ kernel |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        for t in &r.ops {
            let (secs, q) = (t.seconds, t.ratios);
            s += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} |\n",
                r.n,
                t.op.name(),
                micros(secs[0]),
                micros(secs[1]),
                micros(secs[2]),
                t.op.kernel().name(),
                micros(r.kernel(t.op.kernel())),
                q[0],
                q[1],
                q[2]
            );
        }
    }
    s += "\n| n | kernel | faer µs | spantree `Lu` µs | spantree ÷ faer |\n|---|---|---|---|---|\n";
    for r in rows {
        for k in &r.kernels {
            s += &format!(
                "| {} | {} | {} | {} | {:.2} |\n",
                r.n,
                k.kernel.name(),
                micros(k.faer),
                micros(k.spantree),
                k.ratio
            );
        }
    }
    s
}

/// A rayon pool of `threads` workers for the corpus passes. Build it once
/// and keep it across passes, as the command keeps one for its whole run:
/// a pool per pass would time the threads' start and their allocator's
/// fresh pages (about 110 page faults per pass) with every pass.
///
/// # Panics
/// If the pool cannot start.
pub fn corpus_pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool")
}

/// Entropy and its gradient for every graph, on the workers of `pool`
/// ([`corpus_pool`]; one sentence per task), default engine, single-root;
/// returns the sum of the entropies.
///
/// # Panics
/// If a sentence fails.
pub fn corpus_pass(graphs: &[Graph], pool: &rayon::ThreadPool) -> f64 {
    use rayon::prelude::*;
    pool.install(|| {
        graphs
            .par_iter()
            .map(|g| {
                let m = Model::new(spantree_faer::Accurate, g, Rooting::Single).expect("valid");
                let h = m.entropy().expect("entropy");
                h + m.grad_entropy().expect("gradient")[0][(0, 1)]
            })
            .sum()
    })
}

/// The whole corpus as one ragged batch of the library's batch API
/// ([`spantree_api::batch::compute_ragged`]) with its output buffers (the
/// entropies and the entropy gradients), kept across passes as a caller
/// would keep them.
pub struct CorpusBatch {
    lengths: Vec<usize>,
    scores: Vec<f64>,
    entropy: Vec<f64>,
    gradient: Vec<f64>,
}

impl CorpusBatch {
    /// The batch of `graphs`' score matrices ([`score_matrix_of`]), in order.
    pub fn new(graphs: &[Graph]) -> CorpusBatch {
        let scores: Vec<f64> = graphs
            .iter()
            .flat_map(|g| score_matrix_of(g).into_vec())
            .collect();
        CorpusBatch {
            lengths: graphs.iter().map(Graph::n).collect(),
            entropy: vec![0.0; graphs.len()],
            gradient: vec![0.0; scores.len()],
            scores,
        }
    }

    /// Entropy and its gradient for every sentence in one call of the batch
    /// API, default engine, single-root, on the workers of `pool` (the
    /// validation of the scores and the writing of every output included);
    /// returns the sum of the entropies.
    ///
    /// # Panics
    /// If a sentence fails.
    pub fn pass(&mut self, pool: &rayon::ThreadPool) -> f64 {
        use spantree_api::batch::{compute_ragged, Ragged, RaggedOutputs};
        let batch = Ragged {
            lengths: &self.lengths,
            scores: &self.scores,
        };
        let outputs = RaggedOutputs {
            entropy: Some(&mut self.entropy),
            grad_entropy: Some(&mut self.gradient),
            ..RaggedOutputs::default()
        };
        let failed = pool
            .install(|| compute_ragged(&spantree_faer::Accurate, Rooting::Single, batch, outputs))
            .expect("the buffers fit the batch");
        assert!(failed.iter().all(Option::is_none), "a sentence failed");
        self.entropy.iter().sum()
    }
}

/// The score graphs of the whole corpus: every sentence of every treebank
/// under `dir` (one subdirectory of `.conllu` files each), scored by a fixed
/// random model, `N(0, 1)` noise with gold arcs `+3`, seeded per sentence.
/// Returns the graphs and the number of treebanks.
///
/// # Errors
/// When the treebanks cannot be read.
pub fn corpus_graphs(
    dir: &std::path::Path,
    seed: u64,
) -> Result<(Vec<Graph>, usize), crate::report::ReportError> {
    use crate::report::data::{load_treebanks, sentence_seed, ScoreModel};
    let banks = load_treebanks(dir)?;
    let model = ScoreModel {
        sigma: 1.0,
        bonus: 3.0,
        seed,
    };
    let graphs = banks
        .iter()
        .enumerate()
        .flat_map(|(b, bank)| {
            bank.sentences
                .iter()
                .enumerate()
                .map(move |(k, s)| model.graph(&s.heads(), sentence_seed(seed, b, k)))
        })
        .collect();
    Ok((graphs, banks.len()))
}

/// The bare kernel of every graph (exponentials, LU, inverse and two
/// solves: that of `grad_entropy`) on the workers of `pool`, as
/// [`corpus_pass`] runs the op: the floor of the whole-corpus time. `scores`
/// are the graphs' score matrices ([`score_matrix_of`]).
///
/// # Panics
/// If a Laplacian is singular.
pub fn corpus_kernel_pass(
    scores: &[Matrix<f64>],
    engine: KernelEngine,
    pool: &rayon::ThreadPool,
) -> f64 {
    use rayon::prelude::*;
    pool.install(|| {
        scores
            .par_iter()
            .map(|s| kernel_of(s, engine, true, true))
            .sum()
    })
}

/// The `(n+1) × (n+1)` score matrix of an unlabeled graph of scores, `−∞`
/// off the arcs (the input of the bare kernels).
pub fn score_matrix_of(g: &Graph) -> Matrix<f64> {
    score_matrix(g)
}

/// Which route [`spantree_faer::Accurate`] took for the entropy and its
/// gradient of one single-root graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Route {
    /// `ln det` certified, dense marginals certified entry by entry, dense
    /// vector–Jacobian product.
    Dense,
    /// As [`Route::Dense`], but some columns of marginals passed the
    /// entry-wise test only after their rows of `X` were refined (one step
    /// of iterative refinement, double-double residual).
    Refined,
    /// `ln det` certified, but a dense marginal failed its entry-wise test:
    /// the marginals from the elimination (single-root: every column), the
    /// product dense.
    MarginalsEliminated,
    /// `ln det` certified, but the dense product's own estimate
    /// (`spantree_core::engine::VjpAccuracy`) refused it: the product (and
    /// the marginals, when they failed too) from the elimination.
    ProductEliminated,
    /// The `ln det` test failed: everything from the elimination.
    NotCertified,
}

impl Route {
    /// Every route, in table order.
    pub const ALL: [Route; 5] = [
        Route::Dense,
        Route::Refined,
        Route::MarginalsEliminated,
        Route::ProductEliminated,
        Route::NotCertified,
    ];

    /// The route's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Route::Dense => "dense",
            Route::Refined => "dense, refined",
            Route::MarginalsEliminated => "marginals eliminated",
            Route::ProductEliminated => "product eliminated",
            Route::NotCertified => "ln det not certified",
        }
    }
}

/// The route of one single-root graph on `Accurate`, read off its factors
/// after the entropy gradient (the op the corpus pass times).
///
/// # Panics
/// If the gradient fails (it does not on valid corpus graphs).
pub fn route_of(g: &Graph) -> Route {
    let m = Model::new(spantree_faer::Accurate, g, Rooting::Single).expect("valid");
    m.grad_entropy().expect("gradient");
    let f = m.factors();
    if !f.is_certified() {
        Route::NotCertified
    } else if f.elimination_formed() {
        Route::ProductEliminated
    } else if f.dense_marginals_used() && f.refined_columns() > 0 {
        Route::Refined
    } else if f.dense_marginals_used() {
        Route::Dense
    } else {
        Route::MarginalsEliminated
    }
}

/// The sentence-length buckets of the route table: `(label, least, most)`.
pub const BUCKETS: [(&str, usize, usize); 4] = [
    ("≤ 10", 1, 10),
    ("11–20", 11, 20),
    ("21–40", 21, 40),
    ("> 40", 41, usize::MAX),
];

/// Per length bucket and route: sentences and the single-thread seconds of
/// entropy + gradient on `Accurate` (each sentence timed alone, the median
/// of `repeats` runs), with the bare kernel's seconds of the same
/// sentences; as a markdown table.
///
/// # Panics
/// If a sentence fails.
pub fn route_table(graphs: &[Graph], repeats: usize) -> String {
    let time = |f: &dyn Fn() -> f64| {
        let mut t: Vec<f64> = (0..repeats.max(1))
            .map(|_| {
                let start = std::time::Instant::now();
                black_box(f());
                start.elapsed().as_secs_f64()
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    // [bucket][route] = (sentences, accurate s, kernel s, log s)
    let mut cells = [[(0usize, 0.0f64, 0.0f64, 0.0f64); Route::ALL.len()]; BUCKETS.len()];
    for g in graphs {
        let b = BUCKETS
            .iter()
            .position(|&(_, lo, hi)| (lo..=hi).contains(&g.n()))
            .expect("a bucket");
        let r = Route::ALL
            .iter()
            .position(|&r| r == route_of(g))
            .expect("a route");
        let scores = score_matrix(g);
        let op = |engine: &dyn Fn() -> f64| time(engine);
        let accurate = op(&|| {
            let m = Model::new(spantree_faer::Accurate, g, Rooting::Single).expect("valid");
            m.entropy().expect("entropy") + m.grad_entropy().expect("gradient")[0][(0, 1)]
        });
        let log = op(&|| {
            let m = Model::new(spantree_faer::ShiftedF64, g, Rooting::Single).expect("valid");
            m.entropy().expect("entropy") + answered(m.grad_entropy())
        });
        let kernel = time(&|| kernel_of(&scores, KernelEngine::Spantree, true, true));
        let c = &mut cells[b][r];
        c.0 += 1;
        c.1 += accurate;
        c.2 += kernel;
        c.3 += log;
    }
    let total: f64 = cells.iter().flatten().map(|c| c.1).sum();
    let mut s = String::from(
        "| words | route | sentences | accurate ms | share of accurate | log ms | kernel ms | accurate ÷ kernel |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for (b, row) in cells.iter().enumerate() {
        for (r, c) in row.iter().enumerate() {
            if c.0 == 0 {
                continue;
            }
            s += &format!(
                "| {} | {} | {} | {:.2} | {:.1}% | {:.2} | {:.2} | {:.2} |\n",
                BUCKETS[b].0,
                Route::ALL[r].name(),
                c.0,
                c.1 * 1e3,
                100.0 * c.1 / total,
                c.3 * 1e3,
                c.2 * 1e3,
                c.1 / c.2
            );
        }
    }
    let sum = |k: fn(&(usize, f64, f64, f64)) -> f64| cells.iter().flatten().map(k).sum::<f64>();
    s += &format!(
        "| all | all | {} | {:.2} | 100% | {:.2} | {:.2} | {:.2} |\n",
        graphs.len(),
        total * 1e3,
        sum(|c| c.3) * 1e3,
        sum(|c| c.2) * 1e3,
        total / sum(|c| c.2)
    );
    s
}

/// Inputs that need the elimination: `p`'s root scores shifted by `shift`
/// (`−40`: multi-root, dense LU of `L` is refused and that of its row-sum form
/// answers; single-root, the default takes
/// the dense route after rescaling the root row exactly). Times `ln Z` plus
/// marginals on the default engine there against `ShiftedF64` on the
/// unshifted graph (the dense path), in alternating groups
/// ([`paired_times`]: `first` the default's seconds, `second` the dense
/// path's, `ratio` the median of the pairs).
pub fn elimination_against_dense(
    n: usize,
    shift: f64,
    rooting: Rooting,
    groups: usize,
    seed: u64,
) -> Paired {
    let i = Inputs::new(n, seed);
    let shifted = Inputs::new(n, seed).with_root_shift(shift).p;
    let accurate = || {
        let m = Model::new(spantree_faer::Accurate, &shifted, rooting).expect("valid");
        m.log_partition().expect("ln Z") + m.marginals().expect("marginals")[(0, 1)]
    };
    let dense = || {
        let m = Model::new(spantree_faer::ShiftedF64, &i.p, rooting).expect("valid");
        m.log_partition().expect("ln Z") + m.marginals().expect("marginals")[(0, 1)]
    };
    paired_times(groups, accurate, dense)
}

impl Inputs {
    /// The same inputs with `p`'s root scores (and the score matrix's) moved
    /// by `shift` (`−40`: inputs that need the elimination).
    ///
    /// # Panics
    /// If the shifted scores are invalid (they are not, for a finite shift).
    pub fn with_root_shift(mut self, shift: f64) -> Inputs {
        if shift == 0.0 {
            return self;
        }
        let n = self.n;
        let rows: Vec<Vec<f64>> = (0..=n)
            .map(|h| {
                (0..=n)
                    .map(|m| self.scores[(h, m)] + if h == 0 { shift } else { 0.0 })
                    .collect()
            })
            .collect();
        self.p = Graph::from_scores(&rows).expect("valid scores");
        self.scores = score_matrix(&self.p);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_of_the_sorted_values() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        // An even count takes the upper middle.
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
        assert!(median(Vec::new()).is_nan());
    }

    #[test]
    fn paired_groups_alternate_after_one_call_of_each() {
        let log = std::cell::RefCell::new(String::new());
        let groups = 5;
        let p = paired_times(
            groups,
            || log.borrow_mut().push('f'),
            || log.borrow_mut().push('g'),
        );
        let log = log.into_inner();
        // One untimed call of each sizes the groups; then `groups` runs of
        // `f` each followed by a run of `g`.
        assert!(log.starts_with("fg"));
        let runs: Vec<char> = log[2..].chars().fold(Vec::new(), |mut runs, c| {
            if runs.last() != Some(&c) {
                runs.push(c);
            }
            runs
        });
        assert_eq!(runs, "fg".repeat(groups).chars().collect::<Vec<_>>());
        assert!(p.first > 0.0 && p.second > 0.0 && p.ratio > 0.0);
    }

    #[test]
    fn runs_combine_cell_by_cell() {
        let run = |x: f64| Measured {
            n: 7,
            ops: vec![OpTimes {
                op: Op::LogZ,
                seconds: [x, 2.0 * x, 3.0 * x],
                ratios: [x + 1.0, x + 2.0, x + 3.0],
            }],
            kernels: vec![KernelTimes {
                kernel: Kernel::ExpLu,
                faer: 10.0 * x,
                spantree: x,
                ratio: 0.1 * x,
            }],
        };
        let m = Measured::median_of(&[run(5.0), run(1.0), run(3.0)]).expect("one size");
        assert_eq!(m.n, 7);
        assert_eq!(m.ops[0].seconds, [3.0, 6.0, 9.0]);
        assert_eq!(m.ops[0].ratios, [4.0, 5.0, 6.0]);
        let k = m.kernels[0];
        assert_eq!((k.faer, k.spantree, k.ratio), (30.0, 3.0, 0.1 * 3.0));
        assert_eq!(m.kernel(Kernel::ExpLu), 3.0);
        let mut other = run(1.0);
        other.n = 8;
        assert!(Measured::median_of(&[run(1.0), other]).is_none());
        let mut fewer = run(1.0);
        fewer.ops.clear();
        assert!(Measured::median_of(&[run(1.0), fewer]).is_none());
        assert!(Measured::median_of(&[]).is_none());
    }
}
