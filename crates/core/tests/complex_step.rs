//! Every hand-written gradient against complex-step differentiation:
//! `∂F/∂θ_e = Im F(θ + i h e_e) / h` with `h = 1e-30`, exact to first order
//! and free of cancellation, computed by the same generic code on the
//! complex backend. Perturbing `θ_e` by `i h` multiplies `w_e` by
//! `e^{ih} = 1 + i h` (exactly, in `f64`, for `h = 1e-30`).

use num_complex::Complex64;
use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_core::{ArcFeatures, ArcRef, Graph, Matrix, Model, Rooting, Scalar};
use spantree_faer::{Complex, ShiftedF64};

const H: f64 = 1e-30;

/// Relative 1e-10 against the largest entry of the gradient: reverse mode
/// does two triangular solves more than the forward pass, each losing at most
/// a factor of the condition number (< 1e3 here) times machine epsilon;
/// complex step is accurate to machine precision.
const REL: f64 = 1e-10;

struct Case {
    scores: Vec<Matrix<f64>>,
    rooting: Rooting,
}

impl Case {
    fn n(&self) -> usize {
        self.scores[0].rows() - 1
    }

    fn labels(&self) -> usize {
        self.scores.len()
    }

    fn graph(&self) -> Graph {
        let n1 = self.n() + 1;
        if self.labels() == 1 {
            let rows: Vec<Vec<f64>> = (0..n1).map(|h| self.scores[0].row(h).to_vec()).collect();
            return Graph::from_scores(&rows).unwrap();
        }
        let rows: Vec<Vec<Vec<f64>>> = (0..n1)
            .map(|h| {
                (0..n1)
                    .map(|m| self.scores.iter().map(|s| s[(h, m)]).collect())
                    .collect()
            })
            .collect();
        Graph::from_labeled_scores(&rows).unwrap()
    }

    /// The complex model with score `(h, m, ℓ)` perturbed by `i H`.
    fn perturbed(&self, arc: Option<(usize, usize, usize)>) -> Model<Complex> {
        let n1 = self.n() + 1;
        let weight = |h: usize, m: usize, l: usize| {
            let s = self.scores[l][(h, m)];
            if s == f64::NEG_INFINITY {
                return Complex64::new(0.0, 0.0);
            }
            let w = s.exp();
            if arc == Some((h, m, l)) {
                Complex64::new(w, w * H)
            } else {
                Complex64::new(w, 0.0)
            }
        };
        let graph = if self.labels() == 1 {
            let rows: Vec<Vec<Complex64>> = (0..n1)
                .map(|h| (0..n1).map(|m| weight(h, m, 0)).collect())
                .collect();
            Graph::from_weights(&rows).unwrap()
        } else {
            let rows: Vec<Vec<Vec<Complex64>>> = (0..n1)
                .map(|h| {
                    (0..n1)
                        .map(|m| (0..self.labels()).map(|l| weight(h, m, l)).collect())
                        .collect()
                })
                .collect();
            Graph::from_labeled_weights(&rows).unwrap()
        };
        Model::from_scalar_graph(Complex, &graph, self.rooting).unwrap()
    }

    /// The arcs to perturb: every allowed one for small graphs, a seeded sample otherwise.
    fn arcs(&self, rng: &mut SplitMix64) -> Vec<(usize, usize, usize)> {
        let n = self.n();
        let mut all = Vec::new();
        for l in 0..self.labels() {
            for h in 0..=n {
                for m in 1..=n {
                    if h != m && self.scores[l][(h, m)].is_finite() {
                        all.push((h, m, l));
                    }
                }
            }
        }
        if all.len() <= 40 {
            return all;
        }
        (0..12).map(|_| all[rng.below(all.len())]).collect()
    }

    /// Checks `grad` (per label) against complex steps of `f` on `arcs`.
    fn check(
        &self,
        what: &str,
        grad: &[Matrix<f64>],
        arcs: &[(usize, usize, usize)],
        f: impl Fn(&Model<Complex>) -> Complex64,
    ) {
        let scale = grad
            .iter()
            .flat_map(|g| g.as_slice().iter())
            .fold(0.0_f64, |a, x| a.max(x.abs()))
            // A gradient that vanishes identically (n = 1) leaves complex-step
            // noise of order ε; every other case here has entries above 1e-5.
            .max(1e-5);
        for &(h, m, l) in arcs {
            let step = f(&self.perturbed(Some((h, m, l)))).im / H;
            let got = grad[l][(h, m)];
            assert!(
                (got - step).abs() <= REL * scale,
                "{what} n={} {:?} arc {h}→{m} label {l}: reverse mode {got}, complex step {step}",
                self.n(),
                self.rooting
            );
        }
    }
}

fn cases() -> Vec<Case> {
    let mut rng = SplitMix64::new(31);
    let mut out = Vec::new();
    for (n, labels) in [
        (1, 1),
        (2, 1),
        (3, 2),
        (5, 1),
        (6, 3),
        (12, 1),
        (25, 2),
        (60, 1),
    ] {
        for rooting in Rooting::ALL {
            let forbid = if n < 6 { 0.0 } else { 0.1 };
            let scores = (0..labels)
                .map(|_| normal_scores(&mut rng, n, 1.0, forbid))
                .collect();
            out.push(Case { scores, rooting });
        }
    }
    out
}

#[test]
fn log_partition_gradient_is_the_marginals() {
    let mut rng = SplitMix64::new(1);
    for case in cases() {
        let model = Model::new(ShiftedF64, &case.graph(), case.rooting).unwrap();
        let arcs = case.arcs(&mut rng);
        case.check(
            "∂ln Z/∂θ",
            &model.label_marginals().unwrap(),
            &arcs,
            |m| m.log_partition_scalar().unwrap(),
        );
    }
}

#[test]
fn entropy_cross_entropy_and_kl_gradients() {
    let mut rng = SplitMix64::new(2);
    for case in cases() {
        let p = Model::new(ShiftedF64, &case.graph(), case.rooting).unwrap();
        let q_case = Case {
            scores: case
                .scores
                .iter()
                .map(|s| s.map(|&x| x * 0.5 - 0.25))
                .collect(),
            rooting: case.rooting,
        };
        let q = Model::new(ShiftedF64, &q_case.graph(), case.rooting).unwrap();
        let qc = q_case.perturbed(None);
        let pc = case.perturbed(None);
        let arcs = case.arcs(&mut rng);
        case.check("∂H/∂θ", &p.grad_entropy().unwrap(), &arcs, |m| {
            m.entropy().unwrap()
        });
        let ce = p.grad_cross_entropy(&q).unwrap();
        case.check("∂H(p,q)/∂θp", &ce.wrt_p, &arcs, |m| {
            m.cross_entropy(&qc).unwrap().finite().unwrap()
        });
        q_case.check("∂H(p,q)/∂θq", &ce.wrt_q, &arcs, |m| {
            pc.cross_entropy(m).unwrap().finite().unwrap()
        });
        let kl = p.grad_kl_divergence(&q).unwrap();
        case.check("∂KL/∂θp", &kl.wrt_p, &arcs, |m| {
            m.kl_divergence(&qc).unwrap().finite().unwrap()
        });
        q_case.check("∂KL/∂θq", &kl.wrt_q, &arcs, |m| {
            pc.kl_divergence(m).unwrap().finite().unwrap()
        });
    }
}

#[test]
fn attachment_and_ge_gradients() {
    let mut rng = SplitMix64::new(3);
    for case in cases() {
        let n = case.n();
        let model = Model::new(ShiftedF64, &case.graph(), case.rooting).unwrap();
        // Reference: a chain 0 → 1 → 2 → … (allowed: no arc was forbidden for n < 6;
        // otherwise fall back to the best-scoring head of each word).
        let heads: Vec<usize> = (1..=n)
            .map(|m| {
                (0..=n)
                    .filter(|&h| h != m && case.scores[0][(h, m)].is_finite())
                    .max_by(|&a, &b| case.scores[0][(a, m)].total_cmp(&case.scores[0][(b, m)]))
                    .unwrap()
            })
            .collect();
        let labels: Vec<usize> = (0..n).map(|i| i % case.labels()).collect();
        let arcs = case.arcs(&mut rng);
        let label_ref = (case.labels() > 1).then_some(labels.as_slice());
        let g = model.grad_expected_attachment(&heads, label_ref).unwrap();
        case.check("∂E[attachment]/∂θ", &g, &arcs, |m| {
            m.expected_attachment(&heads, label_ref).unwrap()
        });

        // Five sparse features: each arc gets one or two of them, some label-specific.
        let mut f = ArcFeatures::new(5);
        for h in 0..=n {
            for m in (1..=n).filter(|&m| m != h) {
                let k = (h * 7 + m * 3) % 5;
                let label = (case.labels() > 1 && k % 2 == 0).then_some(k % case.labels());
                f.push(
                    ArcRef {
                        head: h,
                        dependent: m,
                        label,
                    },
                    vec![(k, rng.normal()), ((k + 2) % 5, 1.0)],
                )
                .unwrap();
            }
        }
        let targets = [0.3, 1.0, -0.5, 2.0, 0.0];
        let g = model.grad_ge_objective(&f, &targets).unwrap();
        let fc = f.map(|&x| Complex64::from_f64(x));
        let tc: Vec<Complex64> = targets.iter().map(|&t| Complex64::from_f64(t)).collect();
        case.check("∂GE/∂θ", &g, &arcs, |m| {
            m.ge_objective(&fc, &tc).unwrap()
        });
    }
}
