//! Exact equalities only, every expected number from an independent oracle:
//! Cayley's formula, a hand-counted example, cofactor expansion, IEEE
//! division (correctly rounded by the standard), bit-level decoding of
//! `f64`, and the multilinearity of `Z` in the arc weights.

use rug::ops::Pow;
use rug::Integer;
use spantree_core::{Engine, Factorization, Graph, Matrix, Model, Rooting, Scalar, Sign};
use spantree_exact::{Exact, ParseRationalError, Rational, MAX_DECIMAL_EXPONENT};

/// SplitMix64 (Steele, Lea & Flood 2014): tiny, seeded, reproducible.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }

    /// Uniform in `[0, 1)`, 53 bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn q(x: i64) -> Rational {
    Rational::from(x)
}

fn complete_graph(n: usize) -> Graph {
    let w: Vec<Vec<f64>> = (0..=n)
        .map(|h| {
            (0..=n)
                .map(|m| if m != 0 && h != m { 1.0 } else { 0.0 })
                .collect()
        })
        .collect();
    Graph::from_weights(&w).unwrap()
}

fn int_pow(base: u32, exp: u32) -> Rational {
    Rational::from(Integer::from(base).pow(exp))
}

#[test]
fn cayley_counts_up_to_n_12() {
    for n in 1..=12u32 {
        let g = complete_graph(n as usize);
        let multi = Model::new(Exact, &g, Rooting::Multi).unwrap();
        let single = Model::new(Exact, &g, Rooting::Single).unwrap();
        assert_eq!(
            multi.partition().unwrap(),
            int_pow(n + 1, n - 1),
            "multi n={n}"
        );
        assert_eq!(
            single.partition().unwrap(),
            int_pow(n, n - 1),
            "single n={n}"
        );
    }
}

#[test]
fn cayley_counts_at_n_30_are_31_pow_29_and_30_pow_29() {
    let g = complete_graph(30);
    let multi = Model::new(Exact, &g, Rooting::Multi).unwrap();
    let single = Model::new(Exact, &g, Rooting::Single).unwrap();
    let z_multi = multi.partition().unwrap();
    let z_single = single.partition().unwrap();
    assert_eq!(z_multi, Rational::from(Integer::from(31).pow(29)));
    assert_eq!(z_single, Rational::from(Integer::from(30).pow(29)));
    // ln Z from the exact determinant; rel 1e-14: two roundings of a value near 100.
    let ln_multi = multi.log_partition().unwrap();
    assert!((ln_multi - 29.0 * 31f64.ln()).abs() <= 1e-14 * ln_multi);
    let ln_single = single.log_partition().unwrap();
    assert!((ln_single - 29.0 * 30f64.ln()).abs() <= 1e-14 * ln_single);
}

#[test]
fn complete_graph_marginals_are_exact() {
    // Uniform spanning trees of K_{n+1}: every edge is in a tree with
    // probability 2/(n+1); a word–word edge is directed either way with
    // equal probability. Single-root: symmetry over the n words.
    for n in 2..=9i64 {
        let g = complete_graph(n as usize);
        let multi = Model::new(Exact, &g, Rooting::Multi)
            .unwrap()
            .marginals()
            .unwrap();
        let single = Model::new(Exact, &g, Rooting::Single)
            .unwrap()
            .marginals()
            .unwrap();
        for m in 1..=n as usize {
            assert_eq!(multi[(0, m)], Rational::new(2, n + 1));
            assert_eq!(single[(0, m)], Rational::new(1, n));
            for h in 1..=n as usize {
                let (em, es) = if h == m {
                    (q(0), q(0))
                } else {
                    (Rational::new(1, n + 1), Rational::new(1, n))
                };
                assert_eq!(multi[(h, m)], em);
                assert_eq!(single[(h, m)], es);
            }
        }
    }
}

#[test]
fn two_word_hand_example() {
    let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]]).unwrap();
    let multi = Model::new(Exact, &g, Rooting::Multi).unwrap();
    // {0→1, 0→2} = 2, {0→1, 1→2} = 3, {0→2, 2→1} = 8.
    assert_eq!(multi.partition().unwrap(), q(13));
    let mu = multi.marginals().unwrap();
    assert_eq!(mu[(2, 1)], Rational::new(8, 13));
    assert_eq!(mu[(1, 2)], Rational::new(3, 13));
    assert_eq!(mu[(0, 1)], Rational::new(5, 13));
    assert_eq!(mu[(0, 2)], Rational::new(10, 13));
    // Single-root: {0→1, 1→2} = 3, {0→2, 2→1} = 8.
    let single = Model::new(Exact, &g, Rooting::Single).unwrap();
    assert_eq!(single.partition().unwrap(), q(11));
    assert_eq!(single.marginals().unwrap()[(2, 1)], Rational::new(8, 11));
}

// ---------------------------------------------------------------- oracles

/// `det` by cofactor expansion along the first row: exponential, independent.
fn det_by_expansion(a: &Matrix<Rational>) -> Rational {
    let n = a.rows();
    if n == 0 {
        return q(1);
    }
    let mut total = q(0);
    for j in 0..n {
        if a[(0, j)].is_zero() {
            continue;
        }
        let term = &a[(0, j)] * &det_by_expansion(&minor(a, 0, j));
        if j % 2 == 0 {
            total += term;
        } else {
            total -= term;
        }
    }
    total
}

/// `A` without row `r` and column `c`.
fn minor(a: &Matrix<Rational>, r: usize, c: usize) -> Matrix<Rational> {
    let n = a.rows();
    Matrix::from_fn(n - 1, n - 1, |i, j| {
        a[(i + usize::from(i >= r), j + usize::from(j >= c))].clone()
    })
}

/// `adj(A)[i][j] = (−1)^{i+j} det(A without row j and column i)`: the definition.
fn adjugate_by_cofactors(a: &Matrix<Rational>) -> Matrix<Rational> {
    let n = a.rows();
    Matrix::from_fn(n, n, |i, j| {
        if n == 1 {
            return q(1);
        }
        let d = det_by_expansion(&minor(a, j, i));
        if (i + j) % 2 == 0 {
            d
        } else {
            -d
        }
    })
}

fn matmul(a: &Matrix<Rational>, b: &Matrix<Rational>) -> Matrix<Rational> {
    Matrix::from_fn(a.rows(), b.cols(), |i, j| {
        (0..a.cols()).map(|k| &a[(i, k)] * &b[(k, j)]).sum()
    })
}

fn scaled_identity(n: usize, s: &Rational) -> Matrix<Rational> {
    Matrix::from_fn(n, n, |i, j| if i == j { s.clone() } else { q(0) })
}

/// A random `n × n` integer matrix of rank `min(rank, n)`: random rows,
/// then the last `n − rank` rows replaced by combinations of the others.
fn random_matrix(rng: &mut SplitMix64, n: usize, rank: usize, span: i64) -> Matrix<Rational> {
    let mut rows: Vec<Vec<Rational>> = (0..n)
        .map(|_| (0..n).map(|_| q(rng.int(-span, span))).collect())
        .collect();
    for r in rank.min(n)..n {
        let mut combo = vec![q(0); n];
        for source in rows.iter().take(rank) {
            let c = q(rng.int(-2, 2));
            for (x, y) in combo.iter_mut().zip(source) {
                *x += &c * y;
            }
        }
        rows[r] = combo;
    }
    // Shuffle the rows so the dependent ones are not always last.
    for i in (1..n).rev() {
        let j = rng.int(0, i as i64) as usize;
        rows.swap(i, j);
    }
    Matrix::from_fn(n, n, |i, j| rows[i][j].clone())
}

/// Random dyadic entries with exponents spread over `±spread`.
fn random_f64_matrix(rng: &mut SplitMix64, n: usize, spread: i32) -> Matrix<Rational> {
    Matrix::from_fn(n, n, |_, _| {
        let sign = if rng.next() & 1 == 0 { 1.0 } else { -1.0 };
        let e = rng.int(-(spread as i64), spread as i64) as i32;
        Rational::from_f64(sign * (0.5 + rng.unit()) * 2f64.powi(e))
    })
}

// ------------------------------------------------------- factorisation

#[test]
fn det_and_adjugate_match_the_definitions_for_n_up_to_5() {
    let mut rng = SplitMix64(0x5eed_0001);
    let mut ranks_seen = [0usize; 6];
    for trial in 0..400 {
        let n = 1 + trial % 5;
        let rank = if trial % 3 == 0 {
            n
        } else {
            rng.int(0, n as i64) as usize
        };
        let a = if trial % 7 == 0 {
            random_f64_matrix(&mut rng, n, 40)
        } else {
            random_matrix(&mut rng, n, rank, 3)
        };
        let lu = Exact.lu(a.clone());
        ranks_seen[n - lu.rank()] += 1;
        let det = det_by_expansion(&a);
        assert_eq!(lu.det(), det, "det, trial {trial}");
        assert_eq!(lu.zero_pivot().is_some(), det.is_zero(), "trial {trial}");
        assert_eq!(
            lu.adjugate(),
            adjugate_by_cofactors(&a),
            "adjugate, trial {trial}: {a:?}"
        );
    }
    // Non-singular, rank n−1 and rank ≤ n−2 all exercised.
    assert!(
        ranks_seen[0] > 50 && ranks_seen[1] > 50 && ranks_seen[2] > 20,
        "{ranks_seen:?}"
    );
}

#[test]
fn a_times_adjugate_is_det_times_identity() {
    let mut rng = SplitMix64(0x5eed_0002);
    for trial in 0..60 {
        let n: usize = 1 + trial % 12;
        let rank = match trial % 4 {
            0 | 1 => n,
            2 => n - 1,
            _ => n.saturating_sub(2),
        };
        let a = if trial % 5 == 4 {
            random_f64_matrix(&mut rng, n, 300)
        } else {
            random_matrix(&mut rng, n, rank, 1000)
        };
        let lu = Exact.lu(a.clone());
        let adj = lu.adjugate();
        let d = scaled_identity(n, &lu.det());
        assert_eq!(matmul(&a, &adj), d, "A adj A, trial {trial}");
        assert_eq!(matmul(&adj, &a), d, "adj A A, trial {trial}");
        if lu.rank() + 1 == n {
            assert!(
                adj.as_slice().iter().any(|x| !x.is_zero()),
                "rank n−1 has adj ≠ 0"
            );
        }
        if lu.rank() + 2 <= n {
            assert!(adj.as_slice().iter().all(Scalar::is_zero));
        }
    }
}

#[test]
fn solves_and_inverse_are_exact() {
    let mut rng = SplitMix64(0x5eed_0003);
    for trial in 0..40 {
        let n = 1 + trial % 9;
        let a = if trial % 2 == 0 {
            random_f64_matrix(&mut rng, n, 60)
        } else {
            random_matrix(&mut rng, n, n, 50)
        };
        let lu = Exact.lu(a.clone());
        if lu.zero_pivot().is_some() {
            continue;
        }
        let inv = lu.inverse().unwrap();
        assert_eq!(matmul(&a, &inv), Matrix::identity(n));
        // Rational right-hand sides with unrelated denominators.
        let b = Matrix::from_fn(n, 3, |_, _| Rational::new(rng.int(-9, 9), rng.int(1, 7)));
        let mut x = b.clone();
        lu.solve(&mut x).unwrap();
        assert_eq!(matmul(&a, &x), b);
        let mut y = b.clone();
        lu.solve_transpose(&mut y).unwrap();
        assert_eq!(matmul(&a.transpose(), &y), b);
        // ln|det| from the exact determinant; 1e-12 absolute: ln of a normal f64.
        let (sign, ln) = lu.ln_abs_det();
        assert_eq!(sign, lu.det().sign());
        assert!((ln - lu.det().to_f64().abs().ln()).abs() < 1e-12);
    }
}

#[test]
fn singular_matrices_report_singular() {
    let a = Matrix::from_fn(3, 3, |i, j| q(((i + 1) * (j + 1)) as i64));
    let lu = Exact.lu(a);
    assert_eq!(lu.det(), q(0));
    assert_eq!(lu.ln_abs_det(), (Sign::Zero, f64::NEG_INFINITY));
    assert_eq!(lu.zero_pivot(), Some(1));
    let err = spantree_core::Numerical::Singular { pivot: 1 };
    assert_eq!(lu.inverse(), Err(err));
    let mut b = Matrix::identity(3);
    assert_eq!(lu.solve(&mut b), Err(err));
    assert_eq!(lu.solve_transpose(&mut b), Err(err));
    assert_eq!(lu.adjugate(), Matrix::zeros(3, 3));
}

#[test]
fn gradient_of_z_is_exact_even_without_trees() {
    // Z is affine in each single arc weight (a tree uses an arc at most
    // once), so ∂Z/∂w_e = Z(w_e = 1) − Z(w_e = 0) exactly: an oracle that
    // never touches the adjugate.
    let mut rng = SplitMix64(0x5eed_0004);
    for trial in 0..30 {
        let n = 1 + trial % 5;
        let mut w: Vec<Vec<f64>> = (0..=n)
            .map(|h| {
                (0..=n)
                    .map(|m| {
                        let allowed = m != 0 && h != m && rng.next() % 3 != 0;
                        if allowed {
                            rng.int(1, 5) as f64 * 0.25
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        if trial % 4 == 0 {
            // No tree at all: no arc enters word n.
            for row in w.iter_mut() {
                row[n] = 0.0;
            }
        }
        for rooting in Rooting::ALL {
            let g = Graph::from_weights(&w).unwrap();
            let grad = Model::new(Exact, &g, rooting)
                .unwrap()
                .grad_partition()
                .unwrap();
            for h in 0..=n {
                for m in 1..=n {
                    if h == m {
                        continue;
                    }
                    let z_at = |x: f64| {
                        let mut v = w.clone();
                        v[h][m] = x;
                        let g = Graph::from_weights(&v).unwrap();
                        Model::new(Exact, &g, rooting).unwrap().partition().unwrap()
                    };
                    assert_eq!(grad[(h, m)], z_at(1.0) - z_at(0.0), "trial {trial} {h}→{m}");
                }
            }
        }
    }
}

#[test]
fn exact_weights_from_strings_give_exact_z() {
    let w: Vec<Vec<Rational>> = [["0", "1/3", "2/7"], ["0", "0", "5/11"], ["0", "0.1", "0"]]
        .iter()
        .map(|r| r.iter().map(|s| s.parse().unwrap()).collect())
        .collect();
    let g = Graph::from_weights(&w).unwrap();
    let z = Model::from_scalar_graph(Exact, &g, Rooting::Multi)
        .unwrap()
        .partition()
        .unwrap();
    // 1/3·2/7 + 1/3·5/11 + 2/7·1/10.
    let expected = Rational::new(2, 21) + Rational::new(5, 33) + Rational::new(2, 70);
    assert_eq!(z, expected);
}

// ------------------------------------------------------------- scalar

/// The value of a finite `f64` from its bits: `(−1)^s · m · 2^e`.
fn decode(x: f64) -> Rational {
    let bits = x.to_bits();
    let sign = if bits >> 63 == 1 { -1 } else { 1 };
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1 << 52) - 1);
    let (m, e) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), biased - 1075)
    };
    let m = Rational::from(sign * m as i64);
    let p = Integer::from(2).pow(e.unsigned_abs() as u32);
    if e >= 0 {
        m * Rational::from(p)
    } else {
        m / Rational::from(p)
    }
}

#[test]
fn from_f64_is_exact_and_round_trips() {
    let special = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        1.0 / 3.0,
        f64::EPSILON,
        f64::MIN_POSITIVE,
        f64::MIN_POSITIVE / 2.0,
        f64::from_bits(1),
        f64::from_bits(0x000f_ffff_ffff_ffff),
        -f64::from_bits(3),
        1e-300,
        1e300,
        1e-310,
        f64::MAX,
        -f64::MAX,
        2f64.powi(53) + 2.0,
        123_456_789.0,
    ];
    let mut rng = SplitMix64(0x5eed_0005);
    let random = (0..20_000)
        .map(|_| f64::from_bits(rng.next()))
        .filter(|x| x.is_finite());
    for x in special.into_iter().chain(random) {
        let r = Rational::from_f64(x);
        assert_eq!(r, decode(x), "{x:e}");
        assert_eq!(r.to_f64().to_bits(), (x + 0.0).to_bits(), "{x:e}"); // −0 → +0
        assert_eq!(r.sign(), Sign::of_f64(x).unwrap());
    }
    assert_eq!(Rational::from_f64(1e300).to_string().len(), 301);
    assert!(Rational::try_from(f64::NAN).is_err());
    assert!(Rational::try_from(f64::INFINITY).is_err());
}

#[test]
fn to_f64_rounds_to_nearest_like_ieee_division() {
    // IEEE 754 division is correctly rounded, subnormal results included.
    let mut rng = SplitMix64(0x5eed_0006);
    for _ in 0..20_000 {
        let a = (rng.unit() + 0.5) * 2f64.powi(rng.int(-600, 600) as i32);
        let b = (rng.unit() + 0.5) * 2f64.powi(rng.int(-600, 600) as i32);
        let exact = Rational::from_f64(a) / Rational::from_f64(b);
        assert_eq!(exact.to_f64().to_bits(), (a / b).to_bits(), "{a:e} / {b:e}");
        let negated = -exact;
        assert_eq!(negated.to_f64(), -(a / b));
    }
    for _ in 0..5_000 {
        let p = rng.int(1, 1 << 52);
        let d = rng.int(1, 1 << 52);
        assert_eq!(Rational::new(p, d).to_f64(), p as f64 / d as f64);
    }
}

#[test]
fn to_f64_ties_go_to_even() {
    let two53 = Integer::from(1) << 53u32;
    let r = |i: Integer| Rational::from(i);
    assert_eq!(r(two53.clone() + 1).to_f64(), 2f64.powi(53));
    assert_eq!(r(two53.clone() + 3).to_f64(), 2f64.powi(53) + 4.0);
    // Just above a tie rounds up.
    let above = Rational::from(two53.clone() + 1) + Rational::new(1, 1i64 << 40);
    assert_eq!(above.to_f64(), 2f64.powi(53) + 2.0);
    // The smallest subnormal: 2^-1075 is a tie with 0 (even), anything above is 2^-1074.
    let tiny = Rational::from_f64(f64::from_bits(1));
    let half = tiny.clone() / q(2);
    assert_eq!(half.to_f64().to_bits(), 0);
    let above_half = half.clone() + half.clone() / Rational::from(Integer::from(1) << 200u32);
    assert_eq!(above_half.to_f64(), f64::from_bits(1));
    assert_eq!(
        (tiny.clone() * Rational::new(3, 2)).to_f64(),
        f64::from_bits(2)
    ); // tie → even
    assert_eq!((tiny * Rational::new(5, 2)).to_f64(), f64::from_bits(2)); // tie → even
                                                                          // f64::MAX + half an ulp ties to even, which is the overflow.
    let ulp = Rational::from(Integer::from(1) << 971u32);
    let max = Rational::from_f64(f64::MAX);
    assert_eq!((max.clone() + ulp.clone() / q(2)).to_f64(), f64::INFINITY);
    assert_eq!((max.clone() + ulp.clone() / q(3)).to_f64(), f64::MAX);
    assert_eq!((-(max + ulp)).to_f64(), f64::NEG_INFINITY);
    assert_eq!(
        Rational::from(Integer::from(10).pow(400)).to_f64(),
        f64::INFINITY
    );
    let inv = Rational::new(1, Integer::from(10).pow(400));
    assert_eq!(inv.to_f64(), 0.0);
}

#[test]
fn ln_abs_never_overflows() {
    let ln10 = std::f64::consts::LN_10;
    let big = Rational::from(Integer::from(10).pow(5000));
    let small = Rational::new(1, Integer::from(10).pow(5000));
    // rel 1e-14: ln of a 53-bit mantissa plus exponent · ln 2, each rounded once.
    let expected = 5000.0 * ln10;
    assert!(
        (big.ln_abs() - expected).abs() <= 1e-14 * expected,
        "{}",
        big.ln_abs()
    );
    assert!((small.ln_abs() + expected).abs() <= 1e-14 * expected);
    assert!(((-big.clone()).ln_abs() - expected).abs() <= 1e-14 * expected);
    // 3^7000 / 2^9000: numerator and denominator both beyond f64.
    let ratio =
        Rational::from(Integer::from(3).pow(7000)) / Rational::from(Integer::from(2).pow(9000));
    let expected = 7000.0 * 3f64.ln() - 9000.0 * std::f64::consts::LN_2;
    assert!((ratio.ln_abs() - expected).abs() <= 1e-14 * expected.abs());
    // Close to 1, with huge numerator and denominator: ln(1 + 10^-20) = 10^-20 ≈ 0 in f64.
    let near_one =
        Rational::from(Integer::from(10).pow(20) + 1) / Rational::from(Integer::from(10).pow(20));
    assert_eq!(near_one.ln_abs(), 0.0);
    assert_eq!(q(0).ln_abs(), f64::NEG_INFINITY);
    assert_eq!(q(-2).ln_abs(), std::f64::consts::LN_2);
    assert_eq!(q(1).ln_abs(), 0.0);
    assert!(big.is_finite() && small.is_finite());
}

#[test]
fn display_and_parse() {
    assert_eq!(Rational::new(3, 7).to_string(), "3/7");
    assert_eq!(q(-2).to_string(), "-2");
    assert_eq!(q(0).to_string(), "0");
    let ok = [
        ("3/7", Rational::new(3, 7)),
        ("-6/4", Rational::new(-3, 2)),
        ("+5", q(5)),
        ("-2", q(-2)),
        ("007", q(7)),
        ("-0", q(0)),
        ("0.25", Rational::new(1, 4)),
        ("-.5", Rational::new(-1, 2)),
        ("5.", q(5)),
        ("1e-3", Rational::new(1, 1000)),
        ("1.5E+2", q(150)),
        ("2.50e1", q(25)),
        ("1e0000000000000000003", q(1000)),
    ];
    for (s, expected) in ok {
        assert_eq!(s.parse::<Rational>(), Ok(expected), "{s}");
    }
    // Decimal parsing is exact, not via f64.
    assert_eq!(
        "1e-400".parse::<Rational>().unwrap(),
        Rational::new(1, Integer::from(10).pow(400))
    );
    // Display round-trips.
    for x in [Rational::new(-22, 7), Rational::from_f64(1e-300)] {
        assert_eq!(x.to_string().parse::<Rational>().unwrap(), x);
    }
}

#[test]
fn parse_errors_are_typed() {
    use ParseRationalError::*;
    let cases = [
        ("", Empty),
        ("-", Empty),
        ("+", Empty),
        ("1/0", ZeroDenominator),
        ("-4/000", ZeroDenominator),
        ("abc", InvalidCharacter { position: 0 }),
        (" 1", InvalidCharacter { position: 0 }),
        ("1 ", InvalidCharacter { position: 1 }),
        ("1/", InvalidCharacter { position: 2 }),
        ("/2", InvalidCharacter { position: 0 }),
        ("1/-2", InvalidCharacter { position: 2 }),
        ("1/2/3", InvalidCharacter { position: 3 }),
        ("1.5/2", InvalidCharacter { position: 3 }),
        ("1.2.3", InvalidCharacter { position: 3 }),
        (".", InvalidCharacter { position: 1 }),
        ("1e", InvalidCharacter { position: 2 }),
        ("1e+", InvalidCharacter { position: 3 }),
        ("0x10", InvalidCharacter { position: 1 }),
        ("inf", InvalidCharacter { position: 0 }),
        ("NaN", InvalidCharacter { position: 0 }),
        ("1_000", InvalidCharacter { position: 1 }),
        ("1e99999999999999999", ExponentOutOfRange),
        ("1e-1000001", ExponentOutOfRange),
    ];
    for (s, e) in cases {
        assert_eq!(s.parse::<Rational>(), Err(e), "{s:?}");
        assert!(!e.to_string().is_empty());
    }
    assert!(format!("1e{MAX_DECIMAL_EXPONENT}")
        .parse::<Rational>()
        .is_ok());
}

#[test]
fn n_zero_and_n_one_matrices() {
    let empty = Exact.lu(Matrix::<Rational>::zeros(0, 0));
    assert_eq!(empty.det(), q(1));
    assert_eq!(empty.inverse().unwrap(), Matrix::zeros(0, 0));
    let one = Exact.lu(Matrix::from_row_major(1, 1, vec![Rational::new(-2, 3)]));
    assert_eq!(one.det(), Rational::new(-2, 3));
    assert_eq!(one.inverse().unwrap()[(0, 0)], Rational::new(-3, 2));
    assert_eq!(one.adjugate()[(0, 0)], q(1));
    let zero = Exact.lu(Matrix::from_row_major(1, 1, vec![q(0)]));
    assert_eq!(zero.adjugate()[(0, 0)], q(1)); // adj of any 1×1 matrix is [1]
    assert_eq!(zero.zero_pivot(), Some(0));
}

/// Every head assignment of `n` words, kept when it is a tree: `(Z, μ)` by
/// enumeration, in exact rationals.
/// Also the log-weights `Σ ln w` of the trees, in `f64`.
fn enumerate_trees(w: &[Vec<f64>], rooting: Rooting) -> (Rational, Vec<Vec<Rational>>, Vec<f64>) {
    let n = w.len() - 1;
    let mut z = q(0);
    let mut mass = vec![vec![q(0); n + 1]; n + 1];
    let mut logs = Vec::new();
    let mut heads = vec![0usize; n + 1];
    let total = (n + 1).pow(n as u32);
    for code in 0..total {
        let mut c = code;
        for head in heads.iter_mut().skip(1) {
            *head = c % (n + 1);
            c /= n + 1;
        }
        let is_tree = (1..=n).all(|m| {
            let (mut v, mut steps) = (m, 0);
            while v != 0 && steps <= n {
                v = heads[v];
                steps += 1;
            }
            v == 0 && heads[m] != m
        });
        let root_children = (1..=n).filter(|&m| heads[m] == 0).count();
        if !is_tree || (rooting == Rooting::Single && root_children != 1) {
            continue;
        }
        let weight: Rational = (1..=n)
            .map(|m| Rational::from_f64(w[heads[m]][m]))
            .product();
        if weight.is_zero() {
            continue;
        }
        for m in 1..=n {
            mass[heads[m]][m] += &weight;
        }
        z += weight;
        logs.push((1..=n).map(|m| w[heads[m]][m].ln()).sum());
    }
    (z, mass, logs)
}

#[test]
fn z_and_marginals_match_enumeration_with_extreme_weights() {
    let mut rng = SplitMix64(0x5eed_0007);
    let extremes = [
        1e-300,
        1e300,
        f64::MIN_POSITIVE,
        5e-324,
        1.0,
        0.1,
        3.0,
        f64::MAX,
    ];
    for trial in 0..40 {
        let n = 1 + trial % 5;
        let w: Vec<Vec<f64>> = (0..=n)
            .map(|h| {
                (0..=n)
                    .map(|m| match rng.next() % 4 {
                        _ if m == 0 || h == m => 0.0,
                        0 => 0.0,
                        1 => extremes[(rng.next() % extremes.len() as u64) as usize],
                        _ => rng.unit() * 2f64.powi(rng.int(-60, 60) as i32),
                    })
                    .collect()
            })
            .collect();
        let g = Graph::from_weights(&w).unwrap();
        for rooting in Rooting::ALL {
            let (z, mass, logs) = enumerate_trees(&w, rooting);
            let model = Model::new(Exact, &g, rooting).unwrap();
            assert_eq!(model.partition().unwrap(), z, "trial {trial} {rooting:?}");
            if z.is_zero() {
                assert_eq!(model.log_partition().unwrap(), f64::NEG_INFINITY);
                continue;
            }
            // ln Z is finite even when Z is far beyond f64 (f64::MAX^n); the
            // oracle is a log-sum-exp of the trees' log-weights in f64.
            // 1e-12 relative (at least absolute): ≤ 5 rounded logs per tree,
            // no cancellation.
            let ln_z = model.log_partition().unwrap();
            let expected = spantree_core::log_sum_exp(logs.iter().copied());
            assert!(
                (ln_z - expected).abs() <= 1e-12 * expected.abs().max(1.0),
                "{ln_z} {expected}"
            );
            let mu = model.marginals().unwrap();
            for h in 0..=n {
                for m in 0..=n {
                    assert_eq!(mu[(h, m)], &mass[h][m] / &z, "trial {trial} {h}→{m}");
                }
            }
        }
    }
}
