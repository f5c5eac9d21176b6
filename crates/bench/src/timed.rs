//! The algorithms of the speed-up tables: every fast algorithm and the
//! literature's baseline for the same quantity, as one table ([`TIMED`])
//! shared by the `baselines` bench and the `slopes` example.

use spantree_core::baseline::{
    entropy_by_columns, grad_ge_by_covariance, log_partition_by_minors, marginals_by_zeroing,
};
use spantree_core::{ArcFeatures, Graph, Model, Rooting, SecondOrder};
use spantree_faer::ShiftedF64;

use crate::{normal_graph, sparse_features};

/// The sentence lengths of the speed-up tables.
pub const SIZES: [usize; 5] = [10, 20, 36, 50, 80];

/// What one timed run reads: a graph with `N(0, 1)` scores, 20 sparse binary
/// features and targets for the GE objective, 4 features for covariances.
pub struct Inputs {
    /// The graph.
    pub graph: Graph,
    /// GE features (`F = 20`).
    pub features: ArcFeatures<f64>,
    /// GE targets.
    pub targets: Vec<f64>,
    /// Covariance features (`R = S = 4`).
    pub small: ArcFeatures<f64>,
}

impl Inputs {
    /// Seeded inputs for `n` words.
    pub fn new(n: usize, seed: u64) -> Self {
        Inputs {
            graph: normal_graph(n, 1.0, seed),
            features: sparse_features(n, 20, seed + 1),
            targets: vec![0.5; 20],
            small: sparse_features(n, 4, seed + 2),
        }
    }

    fn model(&self) -> Model<ShiftedF64> {
        Model::new(ShiftedF64, &self.graph, Rooting::Single).expect("generated graphs are valid")
    }
}

/// One algorithm to time: a name, the quantity it computes, whether it is a
/// literature baseline, the exponent `k` of its `O(nᵏ)` cost, and the run
/// itself (single-root, `ShiftedF64`, the model built inside: each route pays
/// its own factorisation). The run returns a number so that nothing is
/// optimised away.
pub struct Timed {
    /// `quantity/algorithm`, as the CLI's `--algorithm` names them.
    pub name: &'static str,
    /// The quantity: fast and baseline rows of one quantity are compared.
    pub quantity: &'static str,
    /// A literature baseline (slow on purpose).
    pub baseline: bool,
    /// Theory: the cost is `O(n^exponent)`.
    pub exponent: u32,
    /// One run.
    pub run: fn(&Inputs) -> f64,
}

/// Every timed algorithm, fast before baseline within a quantity.
pub const TIMED: &[Timed] = &[
    Timed {
        name: "log_z/lu",
        quantity: "log_z",
        baseline: false,
        exponent: 3,
        run: |i| i.model().log_partition().expect("a tree exists"),
    },
    Timed {
        name: "log_z/minors",
        quantity: "log_z",
        baseline: true,
        exponent: 4,
        run: |i| log_partition_by_minors(&i.model()).expect("single-root"),
    },
    Timed {
        name: "marginals/inverse",
        quantity: "marginals",
        baseline: false,
        exponent: 3,
        run: |i| i.model().marginals().expect("a tree exists")[(0, 1)],
    },
    Timed {
        name: "marginals/mcdonald-satta",
        quantity: "marginals",
        baseline: true,
        exponent: 5,
        run: |i| marginals_by_zeroing(&i.model()).expect("a tree exists")[(0, 1)],
    },
    Timed {
        name: "entropy/expectation",
        quantity: "entropy",
        baseline: false,
        exponent: 3,
        run: |i| i.model().entropy().expect("a tree exists"),
    },
    Timed {
        name: "entropy/smith-eisner",
        quantity: "entropy",
        baseline: true,
        exponent: 4,
        run: |i| entropy_by_columns(&i.model()).expect("a tree exists"),
    },
    Timed {
        name: "grad_ge/reverse-mode",
        quantity: "grad_ge",
        baseline: false,
        exponent: 3,
        run: |i| {
            i.model()
                .grad_ge_objective(&i.features, &i.targets)
                .expect("a tree exists")[0][(0, 1)]
        },
    },
    Timed {
        name: "grad_ge/covariance",
        quantity: "grad_ge",
        baseline: true,
        exponent: 4,
        run: |i| {
            grad_ge_by_covariance(&i.model(), &i.features, &i.targets).expect("a tree exists")[0]
                [(0, 1)]
        },
    },
    Timed {
        name: "covariance/jacobian-vector (R=S=4)",
        quantity: "covariance",
        baseline: false,
        exponent: 3,
        run: |i| {
            i.model()
                .covariance(&i.small, &i.small, SecondOrder::JacobianVector)
                .expect("a tree exists")[(0, 0)]
        },
    },
    Timed {
        name: "covariance/hessian (R=S=4)",
        quantity: "covariance",
        baseline: true,
        exponent: 4,
        run: |i| {
            i.model()
                .covariance(&i.small, &i.small, SecondOrder::Hessian)
                .expect("a tree exists")[(0, 0)]
        },
    },
];

/// The least-squares slope of `ln y` against `ln x` (`NaN` for fewer than two
/// distinct points).
pub fn log_log_slope(points: &[(f64, f64)]) -> f64 {
    let logs: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.ln(), y.ln())).collect();
    let k = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / k;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / k;
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    sxy / sxx
}
