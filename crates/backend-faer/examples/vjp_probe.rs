//! Probe (scratch): one calibration case, entry by entry.
use spantree_bruteforce::random::{normal_scores, rows, uniform_scores, SplitMix64};
use spantree_core::elimination::{marginals_jvp, Anchored, Dual};
use spantree_core::{Eliminated, Factors, Graph, Matrix, Model, Rooting, Scalar};
use spantree_exact::HighPrecision;
use spantree_faer::{Accurate, Lu};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let rooting = if a[1] == "single" {
        Rooting::Single
    } else {
        Rooting::Multi
    };
    let n: usize = a[2].parse().unwrap();
    let family: u64 = a[3].parse().unwrap();
    let shift: f64 = a[4].parse().unwrap();
    let g: u64 = a[5].parse().unwrap();
    let what = a[6].as_str();
    let mut rng = SplitMix64::new(g * 1000 + n as u64 * 17 + family);
    let mut s = match family {
        0 => normal_scores(&mut rng, n, 1.0, 0.0),
        1 => normal_scores(&mut rng, n, 2.0, 0.0),
        2 => normal_scores(&mut rng, n, 4.0, 0.0),
        3 => uniform_scores(&mut rng, n, 5.0),
        4 => uniform_scores(&mut rng, n, 10.0),
        5 => uniform_scores(&mut rng, n, 20.0),
        _ => uniform_scores(&mut rng, n, 50.0),
    };
    for m in 1..=n {
        s[(0, m)] += shift;
    }
    let graph = Graph::from_scores(&rows(&s)).expect("valid");
    let n1 = n + 1;
    let allowed = |h: usize, m: usize| h != m && m != 0;
    let entropy = Matrix::from_fn(n1, n1, |h, m| if allowed(h, m) { -s[(h, m)] } else { 0.0 });
    let random = Matrix::from_fn(
        n1,
        n1,
        |h, m| if allowed(h, m) { rng.normal() } else { 0.0 },
    );
    let heads: Vec<usize> = (1..=n)
        .map(|m| if m == 1 { 0 } else { rng.below(m - 1) + 1 })
        .collect();
    let tree = Matrix::from_fn(
        n1,
        n1,
        |h, m| {
            if m > 0 && heads[m - 1] == h {
                1.0
            } else {
                0.0
            }
        },
    );
    let seed = match what {
        "entropy" => entropy,
        "random" => random,
        _ => tree,
    };
    let hp = |graph: &Graph| -> (Vec<f64>, Vec<f64>) {
        let m = Model::new(HighPrecision::<512>, graph, rooting).unwrap();
        let v = m
            .marginals_vjp(&seed.map(|&x| Scalar::from_f64(x)))
            .unwrap();
        let mu = m.marginals().unwrap();
        (
            v.as_slice().iter().map(Scalar::to_f64).collect(),
            mu.as_slice().iter().map(Scalar::to_f64).collect(),
        )
    };
    let (truth, mu) = hp(&graph);
    let model = Model::new(Accurate, &graph, rooting).unwrap();
    let w = model.factors().weights().clone();
    let wrows: Vec<Vec<f64>> = (0..n1)
        .map(|h| (0..n1).map(|m| w[(h, m)]).collect())
        .collect();
    let (floor, _) = hp(&Graph::from_weights(&wrows).unwrap());
    let acc = model.marginals_vjp(&seed).unwrap_or_else(|e| {
        println!("accurate: {e}");
        Matrix::zeros(n1, n1)
    });
    let el = Eliminated::<f64, Lu>::new(w.clone(), rooting, Lu::new);
    let (raw, est) = el.estimated_vjp(&seed).unwrap();
    println!("estimate {est:.1}");
    let (dual, _) = marginals_jvp::<Dual>(&w, &seed, rooting).unwrap();
    let (anch, _) = marginals_jvp::<Anchored>(&w, &seed, rooting).unwrap();
    let z = Matrix::zeros(n1, n1);
    let (wide, [wsize, _], wtiny) = spantree_core::elimination::marginals_jvp_sized::<
        spantree_core::elimination::WideDual,
    >(&w, &seed, [&z, &z], rooting)
    .unwrap();
    println!(
        "wide: tiny {wtiny} bits {:.1}",
        spantree_bruteforce::bits::normwise_bits(wide.as_slice(), &truth)
    );
    for m in 1..n1 {
        for h in (0..n1).filter(|&h| h != m && w[(h, m)] != 0.0) {
            let i = h * n1 + m;
            println!(
                "wide {h} {m}: {:+.6e} truth {:+.6e} size {:.2e}",
                wide.as_slice()[i],
                truth[i],
                wsize[(h, m)]
            );
        }
    }
    {
        use spantree_bruteforce::{Distribution, LabeledWeights};
        use spantree_exact::Rational;
        let wr = w.map(|&x| Rational::try_from(x).unwrap());
        let d = Distribution::new(&LabeledWeights::new(vec![wr]), rooting).unwrap();
        let sr = seed.map(|&x| Rational::try_from(x).unwrap());
        let cov = d.covariance_with_arcs(|t| {
            t.arcs()
                .fold(Rational::from(0), |a, (h, m, _)| a + sr[(h, m)].clone())
        });
        let exact: Vec<f64> = cov[0].as_slice().iter().map(|x| x.to_f64()).collect();
        println!(
            "brute force vs truth: {:.1} bits",
            spantree_bruteforce::bits::normwise_bits(&exact, &truth)
        );
        // Per-arc contributions to entry (2,1)-like: every f, Cov(1_e, 1_f) for e = argmax error
    }
    for h in 0..n1 {
        println!(
            "w[{h}] = {:?}",
            (0..n1).map(|m| w[(h, m)]).collect::<Vec<_>>()
        );
    }
    println!(
        "certified {} elim {}",
        model.factors().is_certified(),
        model.factors().elimination_formed()
    );
    let nb = |x: &[f64]| spantree_bruteforce::bits::normwise_bits(x, &truth);
    println!(
        "normwise bits: accurate {:.1} floor {:.1} raw-elim {:.1} dual {:.1} anchored {:.1}",
        nb(acc.as_slice()),
        nb(&floor),
        nb(raw.as_slice()),
        nb(dual.as_slice()),
        nb(anch.as_slice())
    );
    {
        // The engine's own centred seed is internal: sizes of the raw seed here.
        let (_, [size, _], _) = spantree_core::elimination::marginals_jvp_sized::<Dual>(
            &w,
            &seed,
            [&Matrix::zeros(n1, n1), &Matrix::zeros(n1, n1)],
            rooting,
        )
        .unwrap();
        for m in 1..n1 {
            for h in (0..n1).filter(|&h| h != m && w[(h, m)] != 0.0) {
                let i = h * n1 + m;
                let err = (raw.as_slice()[i] - truth[i]).abs();
                println!("{h} {m}: raw err {:.2e} ({:.1} bits rel) dual size {:.2e} err/(eps size) {:.2e}", err, -(err / truth[i].abs()).log2(), size[(h, m)], err / (f64::EPSILON * size[(h, m)]));
            }
        }
    }
    println!("h m | mu | seed | truth | floor | accurate | raw | dual | anchored");
    for m in 1..n1 {
        for h in (0..n1).filter(|&h| h != m) {
            let i = h * n1 + m;
            if w[(h, m)] == 0.0 {
                continue;
            }
            println!(
                "{h} {m} | {:.3e} | {} | {:+.6e} | {:+.6e} | {:+.6e} | {:+.6e} | {:+.6e} | {:+.6e}",
                mu[i],
                seed[(h, m)],
                truth[i],
                floor[i],
                acc.as_slice()[i],
                raw.as_slice()[i],
                dual.as_slice()[i],
                anch.as_slice()[i]
            );
        }
    }
}
