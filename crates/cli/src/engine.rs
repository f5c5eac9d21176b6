//! What the command needs of a backend beyond [`MatrixBackend`]: reading a
//! weight written as a string, and printing a value as JSON, exactly where
//! the number type is exact.

use spantree_core::{MatrixBackend, Numerical, Scalar};

/// A backend the command can run on.
pub trait Engine: MatrixBackend {
    /// Whether the scalar is exact: then the output carries `z` as a rational
    /// string and `--exact-output` is meaningful.
    const EXACT: bool;

    /// Reads a weight given as a JSON string (`"3/7"`).
    ///
    /// # Errors
    /// A sentence fragment saying why the text is not a weight on this
    /// backend; the caller prefixes the arc.
    fn weight_from_str(text: &str) -> Result<Self::Scalar, String>;

    /// The exact text of a value (`"p/q"`, or `"p"` for integers), on exact
    /// backends; `None` on floating-point ones.
    fn exact_text(x: &Self::Scalar) -> Option<String>;

    /// Appends `x` as a JSON value: a number (the nearest `f64`), or with
    /// `exact` on an exact backend a rational string.
    ///
    /// # Errors
    /// [`Numerical::NotFinite`] instead of printing NaN or an infinity.
    fn write_json(x: &Self::Scalar, exact: bool, out: &mut Vec<u8>) -> Result<(), Numerical> {
        if exact {
            if let Some(text) = Self::exact_text(x) {
                write_string(&text, out);
                return Ok(());
            }
        }
        write_f64(x.to_f64(), out)
    }
}

/// Appends a finite `f64` as a JSON number (shortest round-trip form).
///
/// # Errors
/// [`Numerical::NotFinite`] for NaN and infinities, which JSON cannot hold.
pub fn write_f64(x: f64, out: &mut Vec<u8>) -> Result<(), Numerical> {
    if !x.is_finite() {
        return Err(Numerical::NotFinite);
    }
    // Writing to a Vec cannot fail, and a finite f64 always serialises.
    serde_json::to_writer(out, &x).map_err(|_| Numerical::NotFinite)
}

/// Appends `s` as a JSON string, escaped.
pub fn write_string(s: &str, out: &mut Vec<u8>) {
    // Serialising a str into a Vec cannot fail.
    let _ = serde_json::to_writer(out, s);
}

fn float_weight_from_str(text: &str) -> Result<f64, String> {
    Err(format!(
        "is a string ({text:?}); rational strings need --backend exact"
    ))
}

impl Engine for spantree_faer::F64 {
    const EXACT: bool = false;
    fn weight_from_str(text: &str) -> Result<f64, String> {
        float_weight_from_str(text)
    }
    fn exact_text(_: &f64) -> Option<String> {
        None
    }
}

impl Engine for spantree_faer::LogF64 {
    const EXACT: bool = false;
    fn weight_from_str(text: &str) -> Result<f64, String> {
        float_weight_from_str(text)
    }
    fn exact_text(_: &f64) -> Option<String> {
        None
    }
}

impl Engine for spantree_exact::Exact {
    const EXACT: bool = true;
    fn weight_from_str(text: &str) -> Result<Self::Scalar, String> {
        text.trim()
            .parse()
            .map_err(|e| format!("cannot be read exactly from {text:?}: {e}"))
    }
    fn exact_text(x: &Self::Scalar) -> Option<String> {
        Some(x.to_string())
    }
}
