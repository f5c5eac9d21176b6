//! Correct bits of a float against a reference: how the accuracy tests and
//! reports score an answer.

/// Correct bits of `found` against `exact`, relative:
/// `−log₂(|found − exact| / |exact|)`, clamped to `0..=53`; `53` when they
/// are equal (also when both are zero).
///
/// ```
/// use spantree_bruteforce::bits::correct_bits;
/// assert_eq!(correct_bits(1.0, 1.0), 53.0);
/// assert_eq!(correct_bits(1.0 + 2f64.powi(-20), 1.0), 20.0);
/// assert_eq!(correct_bits(2.0, 1.0), 0.0);
/// ```
pub fn correct_bits(found: f64, exact: f64) -> f64 {
    if found == exact {
        return 53.0;
    }
    (-((found - exact).abs() / exact.abs()).log2()).clamp(0.0, 53.0)
}

/// Norm-wise correct bits of `found` against `exact`:
/// `−log₂(‖found − exact‖₂ / ‖exact‖₂)`; `53` when they are equal.
///
/// ```
/// use spantree_bruteforce::bits::normwise_bits;
/// assert_eq!(normwise_bits(&[3.0, 4.0], &[3.0, 4.0]), 53.0);
/// assert_eq!(normwise_bits(&[3.0, 4.0 + 5.0 * 2f64.powi(-30)], &[3.0, 4.0]), 30.0);
/// ```
pub fn normwise_bits(found: &[f64], exact: &[f64]) -> f64 {
    let diff: f64 = found
        .iter()
        .zip(exact)
        .map(|(x, y)| (x - y) * (x - y))
        .sum();
    let norm: f64 = exact.iter().map(|y| y * y).sum();
    if diff == 0.0 {
        53.0
    } else {
        -0.5 * (diff / norm).log2()
    }
}

/// The fewest [`correct_bits`] over the entries whose reference is at least
/// `1e-300` (smaller ones are below what `f64` marginals promise); `53`
/// when there is none.
///
/// ```
/// use spantree_bruteforce::bits::fewest_bits;
/// let exact = [1.0, 0.5, 0.0];
/// assert_eq!(fewest_bits(&[1.0, 0.5 + 2f64.powi(-31), 7.0], &exact), 30.0);
/// ```
pub fn fewest_bits(found: &[f64], exact: &[f64]) -> f64 {
    exact
        .iter()
        .zip(found)
        .filter(|(e, _)| **e >= 1e-300)
        .map(|(e, a)| correct_bits(*a, *e))
        .fold(53.0, f64::min)
}

/// The fewest [`correct_bits`] over the entries of magnitude at least
/// `1e-8` of the largest reference entry (the entry-wise bar of the
/// gradients: smaller entries are judged norm-wise only); a NaN answer keeps
/// `0` bits; `53` when no entry counts.
///
/// ```
/// use spantree_bruteforce::bits::entrywise_bits;
/// let exact = [1.0, 0.5, 1e-9];
/// assert_eq!(entrywise_bits(&[1.0, 0.5 + 2f64.powi(-31), 7.0], &exact), 30.0);
/// assert_eq!(entrywise_bits(&[f64::NAN, 0.5, 1e-9], &exact), 0.0);
/// ```
pub fn entrywise_bits(found: &[f64], exact: &[f64]) -> f64 {
    let largest = exact.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    exact
        .iter()
        .zip(found)
        .filter(|(e, _)| **e != 0.0 && e.abs() >= 1e-8 * largest)
        .map(|(e, a)| {
            if a.is_nan() {
                0.0
            } else {
                correct_bits(*a, *e)
            }
        })
        .fold(53.0, f64::min)
}

/// `(norm-wise, entry-wise)` correct bits, as the accuracy tables score an
/// answer: [`normwise_bits`] clamped to `0..=53` (a NaN answer keeps `0`)
/// and [`entrywise_bits`].
///
/// ```
/// use spantree_bruteforce::bits::normwise_and_entrywise_bits;
/// let exact = [1.0, 0.5, 1e-9];
/// assert_eq!(normwise_and_entrywise_bits(&exact, &exact), (53.0, 53.0));
/// assert_eq!(normwise_and_entrywise_bits(&[f64::NAN, 0.5, 1e-9], &exact), (0.0, 0.0));
/// ```
pub fn normwise_and_entrywise_bits(found: &[f64], exact: &[f64]) -> (f64, f64) {
    let norm = normwise_bits(found, exact);
    let norm = if norm.is_nan() {
        0.0
    } else {
        norm.clamp(0.0, 53.0)
    };
    (norm, entrywise_bits(found, exact))
}
