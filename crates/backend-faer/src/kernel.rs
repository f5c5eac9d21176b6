//! The one SIMD kernel of the plain LU, its inverse and its solves: a row
//! updated by a linear combination of other rows,
//! `dst ← dst + s · Σ_r c_r · src_r` (`s = ±1`), with the destination held
//! in registers across all source rows (register blocking), and the
//! instruction set chosen at run time by [`pulp`] (AVX-512 or AVX2 where the CPU has
//! it, scalar code otherwise). Safe code: `pulp` owns the dispatch.
//!
//! Each term is one fused multiply-add, `acc ← fma(s c_r, src_r, acc)`:
//! one rounding per term instead of two, and half the floating-point
//! instructions of a multiply then an add. A fused multiply-add is
//! correctly rounded on every instruction set `pulp` offers (the
//! AVX-512 and AVX2 `vfmadd`, and `f64::mul_add` on the scalar fallback),
//! so every element still sees the same roundings in the same order
//! everywhere: the factors, inverses and solves stay bit for bit the same
//! on every instruction set (and as the unblocked `getf2` loop written
//! with `mul_add`), and the accuracy bars measured on them hold everywhere.
//!
//! Every factorisation step is one call per row, so the loads and stores of
//! a row are paid once per block of sources rather than once per source, as
//! in a rank-1 `axpy` loop. The plain LU pads its rows to a multiple of
//! [`PAD`] columns so that its updates are whole vectors ([`update`] then
//! needs no masked load, which `pulp` implements as a call).

use pulp::{Arch, Simd};

/// How many SIMD vectors of the destination stay in registers at once:
/// 4 accumulators + 4 source loads + 1 broadcast fit the 16 AVX2 registers
/// (AVX-512 has 32, but a wider tile leaves `n ≤ 64` rows mostly in tails).
const TILE: usize = 4;

/// Rows of the plain LU's buffers are padded with zeros to a multiple of
/// this many columns, the widest vector (AVX-512, 8 lanes): every update of
/// the factorisation and the inverse then covers whole vectors.
pub(crate) const PAD: usize = 8;

/// The sources of an update: row `r` is `rows[r·stride + offset ..]`,
/// read over the destination's width.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    pub(crate) rows: &'a [f64],
    pub(crate) stride: usize,
    pub(crate) offset: usize,
}

impl<'a> Rows<'a> {
    /// The first `count` rows, each cut to `width` (one bounds check here
    /// rather than one per row and tile). Inlined: as a call (once per
    /// tile), the tile's accumulators went through the stack around it.
    #[inline(always)]
    fn iter(&self, count: usize, width: usize) -> impl Iterator<Item = &'a [f64]> + 'a {
        let len = if count == 0 {
            0
        } else {
            (count - 1) * self.stride + width
        };
        let block = &self.rows[self.offset..self.offset + len];
        // By index rather than `chunks(stride)`, whose length (asked for by
        // `zip`) is an integer division per call.
        let stride = self.stride;
        (0..count).map(move |r| &block[r * stride..r * stride + width])
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

/// How many destination rows [`update_rows`] updates at once.
pub(crate) const ROWS: usize = 4;

/// [`update`] for many destination rows of one width with the same
/// sources, each with its own coefficients (`dst_q ← dst_q ∓ Σ_r c_{q,r}
/// src_r`): rows whose coefficients are all zero are skipped, the others
/// go through the kernel [`ROWS`] at a time, so that each source vector
/// loaded serves four rows and the four rows' multiply-adds are
/// independent (one row alone waits on the latency of its own chain of
/// multiply-adds when it is only a vector or two wide). Every element still
/// sees its terms in source order, so the results are those of [`update`]
/// row by row, bit for bit. Rows whose width is not a whole number of
/// vectors (unpadded) go through [`update`] one by one; `O(|coefs| · |dst|)`
/// per row.
#[inline(always)]
pub(crate) fn update_rows<'a, S: Simd>(
    simd: S,
    items: impl Iterator<Item = (&'a mut [f64], &'a [f64])>,
    src: Rows<'_>,
    negate: bool,
) {
    let mut group: [Option<(&mut [f64], &[f64])>; ROWS] = Default::default();
    let mut len = 0;
    for (dst, coefs) in items {
        if coefs.iter().all(|&c| c == 0.0) || dst.is_empty() {
            continue;
        }
        group[len] = Some((dst, coefs));
        len += 1;
        if len == ROWS {
            // Destructured rather than `array::map` (a closure, called out
            // of line).
            let [Some(a), Some(b), Some(c), Some(d)] = std::mem::take(&mut group) else {
                unreachable!("a full group of ROWS rows");
            };
            if a.0.len() % S::F64_LANES == 0 {
                tiles(
                    simd,
                    [a.0, b.0, c.0, d.0],
                    [a.1, b.1, c.1, d.1],
                    src,
                    negate,
                );
            } else {
                for (dst, coefs) in [a, b, c, d] {
                    update(simd, dst, coefs, src, negate);
                }
            }
            len = 0;
        }
    }
    for (dst, coefs) in group.into_iter().flatten() {
        update(simd, dst, coefs, src, negate);
    }
}

/// [`ROWS`] rows of one width (whole vectors) and their
/// coefficients (one per source) through the multi-row tiles.
#[inline(always)]
fn tiles<S: Simd>(
    simd: S,
    dst: [&mut [f64]; ROWS],
    coefs: [&[f64]; ROWS],
    src: Rows<'_>,
    negate: bool,
) {
    let lanes = S::F64_LANES;
    let width = dst[0].len();
    let count = coefs[0].len();
    debug_assert!(width % lanes == 0);
    debug_assert!(dst.iter().all(|d| d.len() == width));
    debug_assert!(coefs.iter().all(|c| c.len() == count));
    let mut dst = dst;
    // Passes of at most `max` vectors, as even as possible: `4 · 6`
    // accumulators, 4 broadcast coefficients and a source vector fill 29 of
    // AVX-512's 32 registers (AVX2 has 16 in all: two vectors there). Fewer,
    // wider passes load and broadcast each coefficient fewer times.
    let max = if lanes >= 8 { 6 } else { 2 };
    let vectors = width / lanes;
    let passes = vectors.div_ceil(max);
    let mut start = 0;
    for pass in 0..passes {
        // No integer division in the common single pass (`n ≤ 48`).
        let left = vectors - start / lanes;
        let v = if pass + 1 == passes {
            left
        } else {
            left / (passes - pass)
        };
        match v {
            1 => row_tile::<S, 1>(simd, &mut dst, coefs, src, count, start, negate),
            2 => row_tile::<S, 2>(simd, &mut dst, coefs, src, count, start, negate),
            3 => row_tile::<S, 3>(simd, &mut dst, coefs, src, count, start, negate),
            4 => row_tile::<S, 4>(simd, &mut dst, coefs, src, count, start, negate),
            5 => row_tile::<S, 5>(simd, &mut dst, coefs, src, count, start, negate),
            _ => row_tile::<S, 6>(simd, &mut dst, coefs, src, count, start, negate),
        }
        start += v * lanes;
    }
}

/// `V` whole vectors from `start` of [`ROWS`] rows, in `ROWS · V`
/// registers across every source row.
#[inline(always)]
fn row_tile<S: Simd, const V: usize>(
    simd: S,
    dst: &mut [&mut [f64]; ROWS],
    coefs: [&[f64]; ROWS],
    src: Rows<'_>,
    count: usize,
    start: usize,
    negate: bool,
) {
    let lanes = S::F64_LANES;
    let end = start + V * lanes;
    let sign = if negate { -1.0 } else { 1.0 };
    let mut acc = [[simd.splat_f64s(0.0); V]; ROWS];
    for (acc, d) in acc.iter_mut().zip(dst.iter()) {
        let (d, _) = S::as_simd_f64s(&d[start..end]);
        acc.copy_from_slice(d);
    }
    // Written out rather than `array::map` (a closure behind `try_map`,
    // called out of line once per tile in `perf` of the `lu` phase).
    let coefs = [
        &coefs[0][..count],
        &coefs[1][..count],
        &coefs[2][..count],
        &coefs[3][..count],
    ];
    const { assert!(ROWS == 4) };
    for (r, row) in src.iter(count, end).enumerate() {
        let (s, _) = S::as_simd_f64s(&row[start..end]);
        let s: &[S::f64s; V] = s.try_into().expect("V whole vectors");
        for (acc, c) in acc.iter_mut().zip(coefs) {
            let c = simd.splat_f64s(sign * c[r]);
            for v in 0..V {
                acc[v] = simd.mul_add_f64s(c, s[v], acc[v]);
            }
        }
    }
    for (acc, d) in acc.iter().zip(dst.iter_mut()) {
        let (d, _) = S::as_mut_simd_f64s(&mut d[start..end]);
        d.copy_from_slice(acc);
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
    for (row, &c) in src.iter(coefs.len(), width).zip(coefs) {
        let row = &row[start..end];
        let (s, _) = S::as_simd_f64s(&row[..V * lanes]);
        let s: &[S::f64s; V] = s.try_into().expect("V whole vectors");
        let c = simd.splat_f64s(sign * c);
        for v in 0..V {
            acc[v] = simd.mul_add_f64s(c, s[v], acc[v]);
        }
        if PARTIAL {
            let x = simd.partial_load_f64s(&row[V * lanes..]);
            last = simd.mul_add_f64s(c, x, last);
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

    struct UpdateRows<'a> {
        dst: &'a mut [f64],
        width: usize,
        coefs: &'a [f64],
        count: usize,
        src: Rows<'a>,
    }

    impl WithSimd for UpdateRows<'_> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: Simd>(self, simd: S) {
            let items = self
                .dst
                .chunks_exact_mut(self.width.max(1))
                .zip(self.coefs.chunks_exact(self.count.max(1)))
                .map(|(d, c)| (&mut d[..self.width], &c[..self.count]));
            update_rows(simd, items, self.src, true);
        }
    }

    /// The multi-row kernel: 0..=9 destination rows (full groups of
    /// [`ROWS`] and every remainder), some with all-zero coefficients
    /// (skipped), every width 0..=40 (whole vectors and masked tails),
    /// 0..=6 sources, on the detected and the scalar instruction set,
    /// against the plain loop of `mul_add`s per row: bit for bit.
    #[test]
    fn update_rows_matches_the_plain_loop() {
        for width in 0..=40 {
            for sources in 0..=6 {
                for count in 0..=9 {
                    let seed = (width * 100 + sources * 10 + count) as u64;
                    let stride = width + 5;
                    let src = values(sources * stride + 1, seed);
                    let mut coefs = values(count * sources, seed + 1);
                    // Every third row has only zero coefficients.
                    for (q, c) in coefs.chunks_exact_mut(sources.max(1)).enumerate() {
                        if q % 3 == 1 {
                            c.iter_mut().for_each(|x| *x = 0.0);
                        }
                    }
                    let dst = values(count * width, seed + 2);
                    let mut expected = dst.clone();
                    for q in 0..count {
                        if (0..sources).all(|r| coefs[q * sources + r] == 0.0) {
                            continue;
                        }
                        for r in 0..sources {
                            let c = -coefs[q * sources + r];
                            for j in 0..width {
                                let e = &mut expected[q * width + j];
                                *e = c.mul_add(src[r * stride + 1 + j], *e);
                            }
                        }
                    }
                    let rows = Rows {
                        rows: &src,
                        stride,
                        offset: 1,
                    };
                    for arch in [arch(), Arch::Scalar] {
                        let mut got = dst.clone();
                        arch.dispatch(UpdateRows {
                            dst: &mut got,
                            width,
                            coefs: &coefs,
                            count: sources,
                            src: rows,
                        });
                        assert_eq!(
                            got, expected,
                            "width {width}, {sources} sources, {count} rows"
                        );
                    }
                }
            }
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
    /// scalar fallback, against the plain loop of `mul_add`s: the same
    /// correctly rounded operations in the same order, so bit for bit.
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
                            expected[j] = (sign * c).mul_add(src[r * stride + 2 + j], expected[j]);
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
