//! `e^{a − b}` over whole rows, vectorised: the one transcendental per arc
//! of the preparation of the weights.

use pulp::{Arch, Simd, WithSimd};

/// `out[i] = e^{a[i] − b[i]}` for every `i`, to a few ulps (relative), with
/// the low bits of `a − b` kept (Knuth's two-sum, as in the scalar
/// [`exp_difference`]); `0` for `a[i] = −∞`.
///
/// Vectorised with run-time dispatch ([`pulp`]: AVX-512 or AVX2 + FMA where the CPU
/// has them, scalar code otherwise): range reduction `x = k ln 2 + r`,
/// `|r| ≤ ln 2 / 2` (Cody–Waite, `ln 2` in two parts), a degree-13
/// Taylor polynomial for `e^r` (truncation below `2⁻⁵⁶`), and `2^k` built
/// in the exponent bits. Lanes whose `a − b` is outside `[−708, 709]`
/// (where `2^k` leaves the normal range), infinite or NaN are recomputed by
/// the scalar [`exp_difference`], so subnormal and zero results are the
/// same as `f64::exp`'s. `O(len)`.
///
/// # Panics
/// If the three slices differ in length (a programming error).
///
/// ```
/// use spantree_core::linalg::{exp_difference, exp_differences};
///
/// let a = [0.5, -3.0, f64::NEG_INFINITY, -800.0];
/// let b = [0.0, 1.0, 0.0, 0.0];
/// let mut out = [0.0; 4];
/// exp_differences(&a, &b, &mut out);
/// for i in 0..4 {
///     let e = exp_difference(a[i], b[i]);
///     assert!((out[i] - e).abs() <= 4.0 * f64::EPSILON * e);
/// }
/// assert_eq!(out[2], 0.0);
/// ```
pub fn exp_differences(a: &[f64], b: &[f64], out: &mut [f64]) {
    assert!(a.len() == out.len() && b.len() == out.len());
    Arch::new().dispatch(ExpDifferences { a, b, out });
}

/// `e^{a − b}` with a relative error of a few ulps however large `a` and
/// `b`: `a − b = d + δ` exactly (Knuth's two-sum), and
/// `e^{d + δ} = e^d (1 + δ)` to `δ²`. (Rounding `a − b` first would cost a
/// relative error `|a − b| ε` in the weight: `2⁻⁴⁵` for scores `300` below
/// their column's best.) `0` for `a = −∞`. `O(1)`.
///
/// ```
/// use spantree_core::linalg::exp_difference;
/// assert_eq!(exp_difference(1.0, 1.0), 1.0);
/// assert_eq!(exp_difference(f64::NEG_INFINITY, 1.0), 0.0);
/// ```
pub fn exp_difference(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return 0.0;
    }
    let d = a - b;
    let bb = d - a;
    let delta = (a - (d - bb)) + (-b - bb);
    let e = d.exp();
    if delta.is_finite() {
        e + e * delta
    } else {
        e
    }
}

/// The range where `2^k`, `k = round((a − b) / ln 2)`, is a normal `f64`
/// and the vector path applies.
const LOW: f64 = -708.0;
const HIGH: f64 = 709.0;

struct ExpDifferences<'a> {
    a: &'a [f64],
    b: &'a [f64],
    out: &'a mut [f64],
}

impl WithSimd for ExpDifferences<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        exp_row(simd, self.a, Some(self.b), self.out);
    }
}

/// `out[i] = e^{a[i] − b[i]}` for a known instruction set, to be inlined
/// into a caller dispatched once (a whole matrix): the vector path on every
/// lane, `0` where `a = −∞`, and the scalar [`exp_difference`] only for
/// the lanes outside `[LOW, HIGH]` (or NaN), which a vector mask finds, so
/// rows without them pay no scalar pass. `b = None` is `b = 0` (the
/// weights as given, `e^a`): the same bits without the two-sum, whose
/// correction is then exactly `0`. Returns whether some lane took the
/// scalar path: a lane it did not take holds a normal, finite `f64`
/// (`e^{−708} > 2⁻¹⁰²²`, `e^{709} < f64::MAX`) or `0` for `a = −∞`, so
/// `false` means no weight underflowed or overflowed. `O(len)`.
#[inline(always)]
pub(crate) fn exp_row<S: Simd>(simd: S, a: &[f64], b: Option<&[f64]>, out: &mut [f64]) -> bool {
    let (a_v, a_t) = S::as_simd_f64s(a);
    let (o_v, o_t) = S::as_mut_simd_f64s(out);
    let mut bad = no_lane(simd);
    match b {
        Some(b) => {
            let (b_v, b_t) = S::as_simd_f64s(b);
            for ((&a, &b), o) in a_v.iter().zip(b_v).zip(o_v.iter_mut()) {
                *o = exp_vector::<S, true>(simd, a, b, &mut bad);
            }
            if !o_t.is_empty() {
                let e = exp_vector::<S, true>(
                    simd,
                    simd.partial_load_f64s(a_t),
                    simd.partial_load_f64s(b_t),
                    &mut bad,
                );
                simd.partial_store_f64s(o_t, e);
            }
        }
        None => {
            let zero = simd.splat_f64s(0.0);
            for (&a, o) in a_v.iter().zip(o_v.iter_mut()) {
                *o = exp_vector::<S, false>(simd, a, zero, &mut bad);
            }
            if !o_t.is_empty() {
                let e = exp_vector::<S, false>(simd, simd.partial_load_f64s(a_t), zero, &mut bad);
                simd.partial_store_f64s(o_t, e);
            }
        }
    }
    if any_lane(simd, bad) {
        redo_out_of_range(a, b, out);
        return true;
    }
    false
}

/// `out[i] = e^{a[i] − b[i mod b.len()]}` over a row-major matrix `a`
/// whose rows have `b.len()` entries (the shifted weights of a whole score
/// matrix, `b` the column shifts): [`exp_row`] on every row, bit for bit,
/// but in one run over the matrix, so that a row's last partial vector is
/// not paid for row by row (`n + 1 = 37` entries are 4.6 vectors of 8,
/// 185 vectors row by row against 172 in one run). The shift vectors are
/// read from a copy of `b` repeated over `b.len()` plus one vector (in
/// this thread's [`Scratch`](crate::matrix::Scratch), filled by copies of
/// `b`), sweep by sweep: a sweep is
/// the run of vectors whose column offsets `o, o + lanes, …` stay below
/// `b.len()`, whose shift vectors are then consecutive in the copy, so the
/// loop over a sweep has no offset arithmetic and no bounds check (about
/// `n / lanes` vectors per sweep, `n + 1` sweeps). Returns whether some
/// lane took the scalar path. `O(len)`.
///
/// # Panics
/// If `a` and `out` differ in length or `b` is empty while `a` is not (a
/// programming error).
#[inline(always)]
pub(crate) fn exp_rows<S: Simd>(simd: S, a: &[f64], b: &[f64], out: &mut [f64]) -> bool {
    assert_eq!(a.len(), out.len());
    if a.is_empty() {
        return false;
    }
    let cols = b.len();
    let lanes = core::mem::size_of::<S::f64s>() / core::mem::size_of::<f64>();
    let mut repeated = crate::matrix::Scratch::take();
    repeated.reserve(cols + lanes);
    while repeated.len() < cols + lanes {
        let take = (cols + lanes - repeated.len()).min(cols);
        repeated.extend_from_slice(&b[..take]);
    }
    let (a_v, a_t) = S::as_simd_f64s(a);
    let (o_v, o_t) = S::as_mut_simd_f64s(out);
    let mut bad = no_lane(simd);
    let mut pairs = a_v.iter().zip(o_v.iter_mut());
    // The column offset of the next vector's first entry.
    let mut offset = 0;
    while pairs.len() > 0 {
        let count = (cols - offset).div_ceil(lanes);
        // Whole vectors (plain loads, not masked ones), consecutive.
        let shifts = S::as_simd_f64s(&repeated[offset..offset + count * lanes]).0;
        // The shifts first: the zip stops on them without taking a pair.
        for (&b, (&a, o)) in shifts.iter().zip(pairs.by_ref()) {
            *o = exp_vector::<S, true>(simd, a, b, &mut bad);
        }
        offset = offset + count * lanes - cols;
        // Rows shorter than a vector wrap more than once.
        while offset >= cols {
            offset -= cols;
        }
    }
    if !o_t.is_empty() {
        let offset = (a.len() - o_t.len()) % cols;
        let b = simd.partial_load_f64s(&repeated[offset..offset + o_t.len()]);
        let e = exp_vector::<S, true>(simd, simd.partial_load_f64s(a_t), b, &mut bad);
        simd.partial_store_f64s(o_t, e);
    }
    if any_lane(simd, bad) {
        for (a, o) in a.chunks(cols).zip(out.chunks_mut(cols)) {
            redo_out_of_range(a, Some(&b[..a.len()]), o);
        }
        return true;
    }
    false
}

/// The mask with no lane set: the start of the `bad` accumulator of
/// [`exp_vector`].
#[inline(always)]
pub(crate) fn no_lane<S: Simd>(simd: S) -> S::m64s {
    let zero = simd.splat_f64s(0.0);
    simd.less_than_f64s(zero, zero)
}

/// Whether some lane of `mask` is set. `O(lanes)`, once per row.
#[inline(always)]
pub(crate) fn any_lane<S: Simd>(simd: S, mask: S::m64s) -> bool {
    let flags = simd.select_f64s(mask, simd.splat_f64s(1.0), simd.splat_f64s(0.0));
    simd.reduce_max_f64s(flags) > 0.0
}

/// The scalar path of [`exp_row`]: `out[i] = exp_difference(a[i], b[i])`
/// (`b = None` is `0`) for the lanes whose `a − b` is outside
/// `[LOW, HIGH]` (or NaN) with `a ≠ −∞`, the others left as the vector
/// path wrote them. `O(len)`.
fn redo_out_of_range(a: &[f64], b: Option<&[f64]>, out: &mut [f64]) {
    for (i, (&a, o)) in a.iter().zip(out.iter_mut()).enumerate() {
        let b = b.map_or(0.0, |b| b[i]);
        if !(LOW..=HIGH).contains(&(a - b)) && a != f64::NEG_INFINITY {
            *o = exp_difference(a, b);
        }
    }
}

/// `e^{a − b}` lane by lane, valid where `a − b ∈ [LOW, HIGH]` and `0`
/// where `a = −∞`; sets in `bad` the lanes the scalar path must redo
/// (`a − b` outside the range or NaN, `a ≠ −∞`) and leaves the others as
/// they were. Without `SHIFTED`, `b` is taken to be `0` and the two-sum
/// skipped: `a − 0 = a` exactly, and the correction `e δ` with `δ = 0`
/// leaves `e` as it was.
///
/// Per vector: 17 fused multiply-adds (one for `k`, two for `r`, thirteen
/// for the polynomial, one for the correction), three compares, the rest
/// additions and integer or mask operations; on Zen 4 the multiply-add pipes
/// bound it (`2^k` is applied by an integer addition to the exponent bits
/// rather than a multiplication, and the flags are or-ed as masks rather
/// than as a `max` of vectors, to keep two operations per vector off them).
#[inline(always)]
pub(crate) fn exp_vector<S: Simd, const SHIFTED: bool>(
    simd: S,
    a: S::f64s,
    b: S::f64s,
    bad: &mut S::m64s,
) -> S::f64s {
    // Two-sum: a − b = d + delta exactly. Knuth's `(−b) − bb` is taken as
    // `−(b + bb)` and subtracted: the same value up to the sign of a zero
    // (rounding to nearest is symmetric), one negation fewer, and a zero
    // `delta` of either sign leaves `e + e · delta = e` below.
    let (d, delta) = if SHIFTED {
        let d = simd.sub_f64s(a, b);
        let bb = simd.sub_f64s(d, a);
        let delta = simd.sub_f64s(simd.sub_f64s(a, simd.sub_f64s(d, bb)), simd.add_f64s(b, bb));
        (d, delta)
    } else {
        (a, b)
    };
    // k = round(d / ln 2) by the 1.5·2⁵² trick: the sum rounds to an
    // integer, whose bits sit at the bottom of the mantissa.
    let magic = simd.splat_f64s(6_755_399_441_055_744.0);
    let t = simd.mul_add_e_f64s(d, simd.splat_f64s(std::f64::consts::LOG2_E), magic);
    let k = simd.sub_f64s(t, magic);
    // r = d − k ln 2, ln 2 in two parts (the first with 21 trailing zero
    // bits, so k · LN2_HI is exact for |k| < 2²¹).
    let r = simd.mul_add_e_f64s(simd.neg_f64s(k), simd.splat_f64s(LN2_HI), d);
    let r = simd.mul_add_e_f64s(simd.neg_f64s(k), simd.splat_f64s(LN2_LO), r);
    // e^r = Σ r^j / j!, j ≤ 13, Horner. (Estrin's scheme halves the
    // dependency chain, but its different last-bit roundings of the
    // weights cost 2 bits in an entry of the GE gradient of
    // `crates/core/tests/honest.rs`, 0.3 bits from its bar: Horner keeps
    // the weights bit for bit as they were measured. The chain's latency
    // does not bound the rows: evaluating two or four vectors interleaved
    // measured slower, not faster.)
    let mut p = simd.splat_f64s(INV_FACTORIAL[13]);
    for &c in INV_FACTORIAL[..13].iter().rev() {
        p = simd.mul_add_e_f64s(p, r, simd.splat_f64s(c));
    }
    // p · 2^k, exactly, by adding k to the exponent field of p: k is the
    // integer difference of the bits of t and of the magic constant, whose
    // low 12 bits are zero, so k · 2⁵² is t's bits times 2⁵² (mod 2⁶⁴).
    // Where d ∈ [LOW, HIGH], p ∈ [0.7, 1.5] and k ∈ [−1021, 1023], p · 2^k
    // is a normal f64 and the sum of the bits is its bits: the product
    // by the scale (k + 1023) · 2⁵² the earlier code formed, bit for bit.
    // Other lanes are redone or zeroed below.
    let shifted_k = simd.mul_u64s(simd.transmute_u64s_f64s(t), simd.splat_u64s(1 << 52));
    let e = simd.transmute_f64s_u64s(simd.add_u64s(simd.transmute_u64s_f64s(p), shifted_k));
    // e^{d + delta} = e^d (1 + delta).
    let e = if SHIFTED {
        simd.mul_add_e_f64s(e, delta, e)
    } else {
        e
    };
    let absent = simd.equal_f64s(a, simd.splat_f64s(f64::NEG_INFINITY));
    let inside = simd.and_m64s(
        simd.greater_than_or_equal_f64s(d, simd.splat_f64s(LOW)),
        simd.less_than_or_equal_f64s(d, simd.splat_f64s(HIGH)),
    );
    *bad = simd.or_m64s(*bad, simd.not_m64s(simd.or_m64s(absent, inside)));
    simd.select_f64s(absent, simd.splat_f64s(0.0), e)
}

/// `ln 2` rounded to 32 significant bits (21 trailing zero bits), and the rest.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// `1 / j!` for `j = 0..=13`, each correctly rounded.
const INV_FACTORIAL: [f64; 14] = [
    1.0,
    1.0,
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
    1.0 / 6_227_020_800.0,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The oracle is the platform's `f64::exp` (< 1 ulp), through the
    /// scalar [`exp_difference`]: an implementation independent of the
    /// polynomial under test.
    fn check(a: &[f64], b: &[f64], out: &[f64]) {
        for i in 0..a.len() {
            let e = exp_difference(a[i], b[i]);
            // rel 6 ε: the polynomial and the range reduction (≤ 3 ulps),
            // libm's exp (< 1 ulp), the correction (1 ulp each).
            let tol = 6.0 * f64::EPSILON * e;
            assert!(
                (out[i] - e).abs() <= tol || (out[i] == e),
                "a = {}, b = {}: {} against {}",
                a[i],
                b[i],
                out[i],
                e
            );
        }
    }

    fn inputs(len: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut s = seed | 1;
        let mut next = || {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
        };
        let a: Vec<f64> = (0..len)
            .map(|i| match i % 11 {
                0 => f64::NEG_INFINITY,
                1 => -750.0 + 60.0 * next(),
                2 => 300.0 * next(),
                _ => 1500.0 * next() - 1200.0,
            })
            .collect();
        let b: Vec<f64> = (0..len).map(|_| 20.0 * next() - 10.0).collect();
        (a, b)
    }

    /// Every length 0..=70 (every vector remainder), values from `−∞`
    /// through the subnormal range to `e^{300}`, on the detected
    /// instruction set and on the scalar fallback.
    #[test]
    fn matches_the_scalar_exp_difference() {
        for len in 0..=70 {
            let (a, b) = inputs(len, 17 + len as u64);
            let mut out = vec![f64::NAN; len];
            exp_differences(&a, &b, &mut out);
            check(&a, &b, &out);
            let mut out = vec![f64::NAN; len];
            pulp::Scalar::new().vectorize(ExpDifferences {
                a: &a,
                b: &b,
                out: &mut out,
            });
            check(&a, &b, &out);
        }
    }

    struct Rows<'a> {
        a: &'a [f64],
        b: &'a [f64],
        out: &'a mut [f64],
    }

    impl WithSimd for Rows<'_> {
        type Output = bool;

        fn with_simd<S: Simd>(self, simd: S) -> bool {
            exp_rows(simd, self.a, self.b, self.out)
        }
    }

    /// The one run over a matrix against `f64::exp` (through
    /// [`exp_difference`]) entry by entry, and bit for bit against
    /// [`exp_row`] row by row (the path it replaces), for every row length
    /// 1..=19 and 0..=6 rows (every offset of the shift in a vector and
    /// every remainder of the run), with `−∞` and out-of-range lanes, on
    /// the detected instruction set and on the scalar fallback.
    #[test]
    fn exp_rows_is_exp_row_on_every_row() {
        for cols in 1..=19 {
            for rows in 0..=6 {
                let (a, _) = inputs(rows * cols, 5 + (cols * 7 + rows) as u64);
                let (_, b) = inputs(cols, 3 + cols as u64);
                let tiled: Vec<f64> = (0..rows * cols).map(|i| b[i % cols]).collect();
                let mut by_row = vec![f64::NAN; rows * cols];
                for (a, o) in a.chunks(cols).zip(by_row.chunks_mut(cols)) {
                    exp_differences(a, &b, o);
                }
                check(&a, &tiled, &by_row);
                let mut out = vec![f64::NAN; rows * cols];
                let odd = Arch::new().dispatch(Rows {
                    a: &a,
                    b: &b,
                    out: &mut out,
                });
                check(&a, &tiled, &out);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&out), bits(&by_row), "{rows} × {cols}");
                // The inputs put a lane outside the vector range in most
                // matrices; the flag says so exactly when one is.
                let outside = a
                    .iter()
                    .zip(&tiled)
                    .any(|(&a, &b)| a != f64::NEG_INFINITY && !(LOW..=HIGH).contains(&(a - b)));
                assert_eq!(odd, outside);
                let mut out = vec![f64::NAN; rows * cols];
                pulp::Scalar::new().vectorize(Rows {
                    a: &a,
                    b: &b,
                    out: &mut out,
                });
                check(&a, &tiled, &out);
            }
        }
    }

    /// [`exp_rows`] and [`exp_row`] row by row, under one instruction set.
    #[derive(Clone, Copy)]
    struct BothWays<'a> {
        a: &'a [f64],
        b: &'a [f64],
    }

    impl WithSimd for BothWays<'_> {
        type Output = (Vec<f64>, Vec<f64>, bool);

        fn with_simd<S: Simd>(self, simd: S) -> (Vec<f64>, Vec<f64>, bool) {
            let mut one_run = vec![f64::NAN; self.a.len()];
            let odd = exp_rows(simd, self.a, self.b, &mut one_run);
            let mut by_row = vec![f64::NAN; self.a.len()];
            for (a, o) in self
                .a
                .chunks(self.b.len())
                .zip(by_row.chunks_mut(self.b.len()))
            {
                exp_row(simd, a, Some(self.b), o);
            }
            (one_run, by_row, odd)
        }
    }

    /// The sweeps of [`exp_rows`] under every instruction set
    /// (`crate::testing::by_lanes`: scalar, 4 and 8 lanes): bit for bit
    /// [`exp_row`] row by row under the same set, and within the bar of
    /// [`check`] of `f64::exp` (through [`exp_difference`]), for row lengths
    /// 1–41 (shorter and longer than a vector, every offset and sweep
    /// length) and 0–9 rows.
    #[test]
    fn exp_rows_sweeps_on_every_instruction_set() {
        for cols in 1..=41 {
            for rows in [0, 1, 2, 3, 5, 9] {
                let (a, _) = inputs(rows * cols, 11 + (cols * 13 + rows) as u64);
                let (_, b) = inputs(cols, 7 + cols as u64);
                let tiled: Vec<f64> = (0..rows * cols).map(|i| b[i % cols]).collect();
                let outside = a
                    .iter()
                    .zip(&tiled)
                    .any(|(&a, &b)| a != f64::NEG_INFINITY && !(LOW..=HIGH).contains(&(a - b)));
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                for (one_run, by_row, odd) in crate::testing::by_lanes(BothWays { a: &a, b: &b }) {
                    check(&a, &tiled, &one_run);
                    assert_eq!(bits(&one_run), bits(&by_row), "{rows} × {cols}");
                    assert_eq!(odd, outside && rows > 0);
                }
            }
        }
    }

    #[test]
    fn edges_of_the_vector_range() {
        let a = [
            LOW,
            HIGH,
            LOW - 1e-9,
            HIGH + 1e-9,
            0.0,
            -1e-300,
            1e-300,
            -0.5 * std::f64::consts::LN_2,
        ];
        let b = [0.0; 8];
        let mut out = [0.0; 8];
        exp_differences(&a, &b, &mut out);
        check(&a, &b, &out);
        assert_eq!(out[4], 1.0);
    }

    #[test]
    fn exp_difference_keeps_the_low_bits() {
        // a − b = −300 − 1e-14 is not an f64; the two-sum keeps the 1e-14.
        let (a, b): (f64, f64) = (-300.0, 1e-14);
        let naive = f64::exp(a - b);
        let exact = (-300f64).exp() * (1.0f64 - 1e-14 + 5e-29);
        // rel 4e-16: two roundings of e^d and one of the correction.
        assert!(((exp_difference(a, b) - exact) / exact).abs() < 4e-16);
        // Rounding a − b first loses the 1e-14.
        assert!(((naive - exact) / exact).abs() > 5e-15);
        let mut out = [0.0];
        exp_differences(&[a], &[b], &mut out);
        // rel 1e-15: the vector path keeps them too, to a few ulps.
        assert!(((out[0] - exact) / exact).abs() < 1e-15);
        assert_eq!(exp_difference(f64::NEG_INFINITY, 1.0), 0.0);
    }

    /// A million seeded differences over the whole vector range against
    /// `f64::exp` (< 1 ulp): the largest error, in units of the result's
    /// `ε`, stays within the 6 ε bar of [`check`] (rel 6 ε: the polynomial,
    /// the reduction and the oracle's own rounding).
    #[test]
    fn a_million_points_within_the_bar() {
        let len = 1 << 20;
        let mut s = 0x9e37_79b9_7f4a_7c15_u64;
        let a: Vec<f64> = (0..len)
            .map(|i| {
                s ^= s >> 12;
                s ^= s << 25;
                s ^= s >> 27;
                let u = (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
                // Half the points in [−1, 1], where the polynomial does all the work.
                if i % 2 == 0 {
                    2.0 * u - 1.0
                } else {
                    (HIGH - LOW) * u + LOW
                }
            })
            .collect();
        let b = vec![0.0; len];
        let mut out = vec![0.0; len];
        exp_differences(&a, &b, &mut out);
        check(&a, &b, &out);
    }
}
