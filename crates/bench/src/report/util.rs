//! Timing, error measurement and markdown tables shared by the report's parts.

use std::hint::black_box;
use std::time::Instant;

use spantree_core::Scalar;
use spantree_exact::rug::Float;
use spantree_exact::{BigFloat, Rational};

/// The median and the range of repeated measurements, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    /// The median.
    pub median: f64,
    /// The fastest repetition.
    pub min: f64,
    /// The slowest repetition.
    pub max: f64,
    /// How many repetitions.
    pub reps: usize,
}

impl Timing {
    /// Summarises repetitions (seconds each); all zero for none.
    pub fn of(mut samples: Vec<f64>) -> Timing {
        if samples.is_empty() {
            return Timing {
                median: 0.0,
                min: 0.0,
                max: 0.0,
                reps: 0,
            };
        }
        samples.sort_by(f64::total_cmp);
        let k = samples.len();
        let median = if k % 2 == 1 {
            samples[k / 2]
        } else {
            0.5 * (samples[k / 2 - 1] + samples[k / 2])
        };
        Timing {
            median,
            min: samples[0],
            max: samples[k - 1],
            reps: k,
        }
    }

    /// Every figure divided by `k` (a pass over `k` sentences → per sentence).
    pub fn per(self, k: usize) -> Timing {
        let k = k.max(1) as f64;
        Timing {
            median: self.median / k,
            min: self.min / k,
            max: self.max / k,
            reps: self.reps,
        }
    }

    /// The spread `(max − min) / median` in percent.
    pub fn spread_percent(&self) -> f64 {
        if self.median > 0.0 {
            100.0 * (self.max - self.min) / self.median
        } else {
            0.0
        }
    }
}

/// Seconds taken by one call of `f`.
pub fn time_once<T>(f: impl FnOnce() -> T) -> f64 {
    let start = Instant::now();
    black_box(f());
    start.elapsed().as_secs_f64()
}

/// Repeats `f` at least `min_reps` times and until `budget` seconds have
/// passed (at most `max_reps`), and summarises the times of single calls.
pub fn time_adaptive<T>(
    min_reps: usize,
    max_reps: usize,
    budget: f64,
    mut f: impl FnMut() -> T,
) -> Timing {
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < min_reps
        || (samples.len() < max_reps && start.elapsed().as_secs_f64() < budget)
    {
        samples.push(time_once(&mut f));
    }
    Timing::of(samples)
}

/// `1.23 µs`, `45.6 ms`, `2.1 s`: three significant digits.
pub fn fmt_time(seconds: f64) -> String {
    let (v, unit) = if seconds >= 1.0 {
        (seconds, "s")
    } else if seconds >= 1e-3 {
        (seconds * 1e3, "ms")
    } else if seconds >= 1e-6 {
        (seconds * 1e6, "µs")
    } else {
        (seconds * 1e9, "ns")
    };
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// A number in short scientific notation (`3.1e-15`), or `0`.
pub fn fmt_sci(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else if x.is_nan() {
        "NaN".to_string()
    } else {
        format!("{x:.1e}")
    }
}

/// Correct bits of an approximation with relative error `rel`, capped to
/// `[0, cap]`; a non-finite error (NaN, ∞) has none.
pub fn bits_from_relative(rel: f64, cap: f64) -> f64 {
    if !rel.is_finite() || rel.is_nan() {
        return 0.0;
    }
    if rel == 0.0 {
        return cap;
    }
    // `+ 0.0` turns a −0 into 0.
    (-rel.log2()).clamp(0.0, cap) + 0.0
}

/// `|x − e| / |e|` as an `f64` from exact rationals, never overflowing
/// (through `ln_abs`); `∞` when `x` is not finite, `0` when both are zero.
pub fn relative_error_exact(x: f64, e: &Rational) -> f64 {
    if !x.is_finite() {
        return f64::INFINITY;
    }
    let diff = Rational::from_f64(x) - e.clone();
    if diff.is_zero() {
        return 0.0;
    }
    if e.is_zero() {
        return f64::INFINITY;
    }
    (diff.ln_abs() - e.ln_abs()).exp()
}

/// `ln |x − e| − ln |e|` for a float against an exact value: the same as
/// [`relative_error_exact`] but as a logarithm, for norm-wise errors where
/// numerator and denominator come from different entries.
pub fn ln_abs_error(x: f64, e: &Rational) -> f64 {
    if !x.is_finite() {
        return f64::INFINITY;
    }
    (Rational::from_f64(x) - e.clone()).ln_abs()
}

/// Precision of the high-precision reference, in bits.
pub const REFERENCE_BITS: u32 = 256;

/// A value of any backend's scalar as a 256-bit MPFR float, to be compared
/// with the `HighPrecision<256>` reference.
pub trait ToReference {
    /// The value rounded to [`REFERENCE_BITS`] bits.
    fn to_reference(&self) -> Float;
}

impl ToReference for f64 {
    fn to_reference(&self) -> Float {
        Float::with_val(REFERENCE_BITS, *self)
    }
}

impl<const B: u32> ToReference for BigFloat<B> {
    fn to_reference(&self) -> Float {
        Float::with_val(REFERENCE_BITS, &self.0)
    }
}

impl ToReference for Rational {
    fn to_reference(&self) -> Float {
        Float::with_val(REFERENCE_BITS, &self.0)
    }
}

/// Correct bits of `x` against the reference `r` (relative), capped at
/// `cap`; `0` for non-finite `x`.
pub fn bits_against(x: &Float, r: &Float, cap: f64) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    let diff = Float::with_val(REFERENCE_BITS, x - r);
    if diff.is_zero() {
        return cap;
    }
    if r.is_zero() {
        return 0.0;
    }
    let rel = Float::with_val(REFERENCE_BITS, &diff / r).abs();
    let log2 = rel.log2().to_f64();
    (-log2).clamp(0.0, cap) + 0.0
}

/// A markdown table.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (padded or truncated to the header's width).
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells = cells;
        cells.resize(self.header.len(), String::new());
        self.rows.push(cells);
    }

    /// The number of data rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no data row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The markdown text, ending with a newline.
    pub fn markdown(&self) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let mut s = line(&self.header);
        s += &format!("|{}\n", "---|".repeat(self.header.len()));
        for r in &self.rows {
            s += &line(r);
        }
        s
    }
}

/// The least-squares slope of `ln y` against `ln x`.
pub fn log_log_slope(points: &[(f64, f64)]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let k = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / k;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / k;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slopes_medians_and_tables() {
        let pts: Vec<(f64, f64)> = [5.0, 10.0, 40.0]
            .iter()
            .map(|&n: &f64| (n, 2.0 * n.powi(3)))
            .collect();
        assert!((log_log_slope(&pts).unwrap() - 3.0).abs() < 1e-12);
        let t = Timing::of(vec![3.0, 1.0, 2.0, 10.0]);
        assert_eq!((t.median, t.min, t.max, t.reps), (2.5, 1.0, 10.0, 4));
        let mut table = Table::new(&["a", "b"]);
        table.row(vec!["1".into()]);
        assert_eq!(table.markdown(), "| a | b |\n|---|---|\n| 1 |  |\n");
        assert_eq!(fmt_time(1.234e-5), "12.3 µs");
        assert_eq!(bits_from_relative(f64::NAN, 53.0), 0.0);
        assert_eq!(bits_from_relative(2f64.powi(-20), 53.0), 20.0);
        let e = Rational::from_f64(1.0);
        // Through ln and exp: rel 1e-12.
        assert!((relative_error_exact(1.0 + f64::EPSILON, &e) / f64::EPSILON - 1.0).abs() < 1e-12);
    }
}
