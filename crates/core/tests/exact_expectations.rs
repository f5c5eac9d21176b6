//! Quantities without logarithms are rational functions of the weights: on
//! the exact backend they must equal the brute-force sums exactly.

use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_bruteforce::trees;
use spantree_core::{ArcFeatures, ArcRef, Graph, Matrix, Model, Rooting, Scalar};
use spantree_exact::{Exact, Rational};

fn weights(rng: &mut SplitMix64, n: usize) -> Matrix<f64> {
    // N(0,1) scores with a fifth of the arcs forbidden, exponentiated in f64;
    // the exact backend reads each f64 weight exactly.
    loop {
        let w = normal_scores(rng, n, 1.0, 0.2).map(|&s| s.exp());
        if Rooting::ALL
            .iter()
            .all(|&r| spantree_bruteforce::count_trees(&w, r) > 0)
        {
            return w;
        }
    }
}

fn q(x: f64) -> Rational {
    Rational::from_f64(x)
}

#[test]
fn attachment_ge_and_gradients_are_exact() {
    let mut rng = SplitMix64::new(2024);
    for n in 1..=6 {
        for rooting in Rooting::ALL {
            let w = weights(&mut rng, n);
            let wq = w.map(|&x| q(x));
            let rows: Vec<Vec<f64>> = (0..=n).map(|h| w.row(h).to_vec()).collect();
            let model = Model::new(Exact, &Graph::from_weights(&rows).unwrap(), rooting).unwrap();

            // The oracle: every tree with its exact probability.
            let all: Vec<_> = trees(&wq, rooting).collect();
            let z = all
                .iter()
                .fold(Rational::zero(), |acc, t| acc + t.weight(&wq));
            let p: Vec<Rational> = all.iter().map(|t| t.weight(&wq) / z.clone()).collect();
            let expect = |f: &dyn Fn(&spantree_bruteforce::Tree) -> Rational| {
                all.iter()
                    .zip(&p)
                    .fold(Rational::zero(), |acc, (t, pt)| acc + pt.clone() * f(t))
            };
            // ∂E[f]/∂θ_e = E[f 1_e] − E[f] μ_e, exactly.
            let gradient = |f: &dyn Fn(&spantree_bruteforce::Tree) -> Rational| {
                let mean = expect(f);
                let mut g = Matrix::zeros(n + 1, n + 1);
                for (t, pt) in all.iter().zip(&p) {
                    let centred = pt.clone() * (f(t) - mean.clone());
                    for (h, m) in t.arcs() {
                        g[(h, m)] += &centred;
                    }
                }
                g
            };

            let gold = all.last().unwrap().clone();
            let heads: Vec<usize> = (1..=n).map(|m| gold.head(m)).collect();
            let uas = |t: &spantree_bruteforce::Tree| {
                let hits = (1..=n).filter(|&m| t.head(m) == gold.head(m)).count();
                Rational::new(hits as i64, n as i64)
            };
            assert_eq!(
                model.expected_attachment(&heads, None).unwrap(),
                expect(&uas)
            );
            assert_eq!(
                model.grad_expected_attachment(&heads, None).unwrap(),
                vec![gradient(&uas)]
            );

            // Features: root attachments, and 1/2 per rightward arc.
            let mut f = ArcFeatures::new(2);
            for h in 0..=n {
                for m in (1..=n).filter(|&m| m != h) {
                    let mut v = Vec::new();
                    if h == 0 {
                        v.push((0, q(1.0)));
                    }
                    if h < m {
                        v.push((1, q(0.5)));
                    }
                    if !v.is_empty() {
                        f.push(
                            ArcRef {
                                head: h,
                                dependent: m,
                                label: None,
                            },
                            v,
                        )
                        .unwrap();
                    }
                }
            }
            let feat = |t: &spantree_bruteforce::Tree, i: usize| {
                let mut r = Rational::zero();
                for (h, m) in t.arcs() {
                    if i == 0 && h == 0 {
                        r += q(1.0);
                    }
                    if i == 1 && h < m {
                        r += q(0.5);
                    }
                }
                r
            };
            let e: Vec<Rational> = (0..2).map(|i| expect(&|t| feat(t, i))).collect();
            assert_eq!(model.expect_additive(&f).unwrap(), e);
            let totals: Vec<Rational> = e.iter().map(|x| x.clone() * z.clone()).collect();
            assert_eq!(model.total_additive(&f).unwrap(), totals);

            let targets = [q(1.0), q(0.75)];
            let residual: Vec<Rational> =
                (0..2).map(|i| e[i].clone() - targets[i].clone()).collect();
            let objective = residual
                .iter()
                .fold(Rational::zero(), |acc, r| acc + r.clone() * r.clone());
            assert_eq!(model.ge_objective(&f, &targets).unwrap(), objective);
            let a: Vec<Rational> = residual.iter().map(|r| r.clone() * q(2.0)).collect();
            let g = gradient(&|t| a[0].clone() * feat(t, 0) + a[1].clone() * feat(t, 1));
            assert_eq!(model.grad_ge_objective(&f, &targets).unwrap(), vec![g]);
        }
    }
}
