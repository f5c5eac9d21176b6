//! The one SIMD kernel of the plain LU, its inverse and its solves: a row
//! updated by a linear combination of other rows,
//! `dst ← dst + s · Σ_r c_r · src_r` (`s = ±1`), with the destination held
//! in registers across all source rows (register blocking), and the
//! instruction set chosen at run time by [`pulp`] (AVX-512 or AVX2 where the CPU has
//! it, scalar code otherwise). Safe code: `pulp` owns the dispatch.
//!
//! Multiply, then add, not a fused multiply-add: every element sees the
//! same two roundings in the same order as the scalar loop, so the factors,
//! inverses and solves are bit for bit the same on every instruction set
//! (and as the unblocked `getf2` loop), and the accuracy bars measured on
//! them hold everywhere. Zen 4 issues the multiplies and the adds on
//! separate pipes, so this costs little throughput (measured in the
//! report).
//!
//! Every factorisation step is one call per row, so the loads and stores of
//! a row are paid once per block of sources rather than once per source, as
//! in a rank-1 `axpy` loop.

use pulp::{Arch, Simd};

/// How many SIMD vectors of the destination stay in registers at once:
/// 4 accumulators + 4 source loads + 1 broadcast fit the 16 AVX2 registers
/// (AVX-512 has 32, but a wider tile leaves `n ≤ 64` rows mostly in tails).
const TILE: usize = 4;

/// The sources of an update: row `r` is `rows[r·stride + offset ..]`,
/// read over the destination's width.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    pub(crate) rows: &'a [f64],
    pub(crate) stride: usize,
    pub(crate) offset: usize,
}

impl Rows<'_> {
    fn row(&self, r: usize, width: usize) -> &[f64] {
        let start = r * self.stride + self.offset;
        &self.rows[start..start + width]
    }
}

/// The instruction set, detected once per factorisation (`pulp` caches
/// the CPU query; this is a cheap copy).
pub(crate) fn arch() -> Arch {
    Arch::new()
}

/// `dst[j] ← dst[j] ∓ Σ_r coefs[r] · src_r[j]` (minus when `negate`), for
/// a known instruction set, to be inlined into a caller that was itself
/// dispatched once (a whole factorisation or solve).
/// `O(|coefs| · |dst|)`; nothing happens when every coefficient is zero
/// (sparse Laplacians).
#[inline(always)]
pub(crate) fn update<S: Simd>(
    simd: S,
    dst: &mut [f64],
    coefs: &[f64],
    src: Rows<'_>,
    negate: bool,
) {
    if coefs.iter().all(|&c| c == 0.0) || dst.is_empty() {
        return;
    }
    let lanes = S::F64_LANES;
    let width = dst.len();
    let mut start = 0;
    // Full tiles: four whole vectors per source row, all in registers.
    while start + TILE * lanes <= width {
        tile::<S, 4, false>(simd, dst, coefs, src, start, negate);
        start += TILE * lanes;
    }
    // The rest: whole vectors, and a masked one for the last lanes.
    let full = (width - start) / lanes;
    let partial = (width - start) % lanes != 0;
    match (full, partial) {
        (0, false) => {}
        (0, true) => tile::<S, 0, true>(simd, dst, coefs, src, start, negate),
        (1, false) => tile::<S, 1, false>(simd, dst, coefs, src, start, negate),
        (1, true) => tile::<S, 1, true>(simd, dst, coefs, src, start, negate),
        (2, false) => tile::<S, 2, false>(simd, dst, coefs, src, start, negate),
        (2, true) => tile::<S, 2, true>(simd, dst, coefs, src, start, negate),
        (3, false) => tile::<S, 3, false>(simd, dst, coefs, src, start, negate),
        _ => tile::<S, 3, true>(simd, dst, coefs, src, start, negate),
    }
}

/// `V` whole vectors from `start`, and with `PARTIAL` the remaining lanes
/// up to the end of `dst`, accumulated in registers over every source row.
#[inline(always)]
fn tile<S: Simd, const V: usize, const PARTIAL: bool>(
    simd: S,
    dst: &mut [f64],
    coefs: &[f64],
    src: Rows<'_>,
    start: usize,
    negate: bool,
) {
    let lanes = S::F64_LANES;
    let width = dst.len();
    let whole = start + V * lanes;
    let end = if PARTIAL { width } else { whole };
    let sign = if negate { -1.0 } else { 1.0 };
    let dst = &mut dst[start..end];
    let (d, _) = S::as_mut_simd_f64s(&mut dst[..V * lanes]);
    let d: &mut [S::f64s; V] = d.try_into().expect("V whole vectors");
    let mut acc: [S::f64s; V] = *d;
    let mut last = if PARTIAL {
        simd.partial_load_f64s(&dst[V * lanes..])
    } else {
        simd.splat_f64s(0.0)
    };
    for (r, &c) in coefs.iter().enumerate() {
        let row = &src.row(r, width)[start..end];
        let (s, _) = S::as_simd_f64s(&row[..V * lanes]);
        let s: &[S::f64s; V] = s.try_into().expect("V whole vectors");
        let c = simd.splat_f64s(sign * c);
        for v in 0..V {
            acc[v] = simd.add_f64s(acc[v], simd.mul_f64s(c, s[v]));
        }
        if PARTIAL {
            let x = simd.partial_load_f64s(&row[V * lanes..]);
            last = simd.add_f64s(last, simd.mul_f64s(c, x));
        }
    }
    let (d, _) = S::as_mut_simd_f64s(&mut dst[..V * lanes]);
    d.copy_from_slice(&acc);
    if PARTIAL {
        simd.partial_store_f64s(&mut dst[V * lanes..], last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulp::WithSimd;

    struct Update<'a> {
        dst: &'a mut [f64],
        coefs: &'a [f64],
        src: Rows<'a>,
        negate: bool,
    }

    impl WithSimd for Update<'_> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: Simd>(self, simd: S) {
            update(simd, self.dst, self.coefs, self.src, self.negate);
        }
    }

    /// xorshift64*: seeded values in `[−1, 1)`.
    fn values(len: usize, seed: u64) -> Vec<f64> {
        let mut s = seed | 1;
        (0..len)
            .map(|_| {
                s ^= s >> 12;
                s ^= s << 25;
                s ^= s >> 27;
                (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    /// Every width 0..=70 (every remainder of every vector size), every
    /// source count 0..=5, on the detected instruction set and on the
    /// scalar fallback, against the plain loop: the same roundings in the
    /// same order, so bit for bit.
    #[test]
    fn update_matches_the_plain_loop_on_every_width() {
        for width in 0..=70 {
            for sources in 0..=5 {
                let stride = width + 3;
                let src = values(sources * stride + 2, width as u64 * 31 + sources as u64);
                let coefs = values(sources, 7 + width as u64);
                let dst = values(width, 99 + sources as u64);
                let rows = Rows {
                    rows: &src,
                    stride,
                    offset: 2,
                };
                for negate in [true, false] {
                    let sign = if negate { -1.0 } else { 1.0 };
                    let mut expected = dst.clone();
                    for (r, &c) in coefs.iter().enumerate() {
                        for j in 0..width {
                            expected[j] += (sign * c) * src[r * stride + 2 + j];
                        }
                    }
                    let check = |got: &[f64]| {
                        assert_eq!(got, &expected[..], "width {width}, {sources} sources");
                    };
                    let mut got = dst.clone();
                    arch().dispatch(Update {
                        dst: &mut got,
                        coefs: &coefs,
                        src: rows,
                        negate,
                    });
                    check(&got);
                    let mut got = dst.clone();
                    pulp::Scalar::new().vectorize(Update {
                        dst: &mut got,
                        coefs: &coefs,
                        src: rows,
                        negate,
                    });
                    check(&got);
                }
            }
        }
    }
}
