//! What the command needs of a backend beyond [`spantree_core::Engine`]: reading a
//! weight written as a string, printing a value as JSON, exactly where the
//! number type is exact, and the quantities that need logarithms where the
//! number type has them.

use spantree_core::{
    baseline, Divergence, Engine, Error, GradientPair, Graph, Model, Numerical, PerLabel, Rooting,
    Scalar, Transcendental,
};

/// A backend the command can run on.
pub trait Backend: Engine {
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

    /// The quantities that need `ln` and `exp` of the scalar, or `None` when
    /// it has neither (exact rationals): the command cannot name the bound
    /// `Scalar: Transcendental` generically, so each backend says here.
    fn logarithms() -> Option<Logarithms<Self>> {
        None
    }

    /// The model of a graph given by weights in the backend's scalar.
    ///
    /// # Errors
    /// As [`Model::from_scalar_graph`].
    fn weights_model(
        &self,
        graph: &Graph<Self::Scalar>,
        rooting: Rooting,
    ) -> Result<Model<Self>, Error> {
        Model::from_scalar_graph(self.clone(), graph, rooting)
    }

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

/// A quantity of one model.
pub type OfModel<B, T> = fn(&Model<B>) -> Result<T, Error>;
/// A quantity of one model and a parameter.
pub type OfModelAnd<B, T> = fn(&Model<B>, f64) -> Result<T, Error>;
/// A quantity of two models `p` and `q`.
pub type OfTwo<B, T> = fn(&Model<B>, &Model<B>) -> Result<T, Error>;
/// One matrix per label.
pub type Gradient<B> = PerLabel<<B as Engine>::Scalar>;

/// The quantities of [`spantree_core::information`] that need
/// [`Transcendental`], as plain functions of one backend's models.
pub struct Logarithms<B: Engine> {
    /// [`Model::entropy`].
    pub entropy: OfModel<B, B::Scalar>,
    /// [`baseline::entropy_by_columns`] (Smith & Eisner 2007).
    pub entropy_by_columns: OfModel<B, B::Scalar>,
    /// [`Model::grad_entropy`].
    pub grad_entropy: OfModel<B, Gradient<B>>,
    /// [`Model::cross_entropy`].
    pub cross_entropy: OfTwo<B, Divergence<B::Scalar>>,
    /// [`Model::grad_cross_entropy`].
    pub grad_cross_entropy: OfTwo<B, GradientPair<B::Scalar>>,
    /// [`Model::kl_divergence`].
    pub kl: OfTwo<B, Divergence<B::Scalar>>,
    /// [`Model::grad_kl_divergence`].
    pub grad_kl: OfTwo<B, GradientPair<B::Scalar>>,
    /// [`Model::renyi_entropy`].
    pub renyi: OfModelAnd<B, B::Scalar>,
    /// [`Model::lp_norm`].
    pub lp_norm: OfModelAnd<B, B::Scalar>,
}

impl<B: Engine> Logarithms<B>
where
    B::Scalar: Transcendental,
{
    /// The library's methods.
    pub fn of_library() -> Self {
        Logarithms {
            entropy: Model::entropy,
            entropy_by_columns: baseline::entropy_by_columns,
            grad_entropy: Model::grad_entropy,
            cross_entropy: Model::cross_entropy,
            grad_cross_entropy: Model::grad_cross_entropy,
            kl: Model::kl_divergence,
            grad_kl: Model::grad_kl_divergence,
            renyi: Model::renyi_entropy,
            lp_norm: Model::lp_norm,
        }
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

/// The `f64` backends: no rational strings, no exact text, logarithms, and
/// `Model::new` for weights, which keeps the f64 graph that Rényi entropies
/// and norms need.
macro_rules! float_engine {
    ($($backend:ty),*) => {$(
        impl Backend for $backend {
            const EXACT: bool = false;
            fn weight_from_str(text: &str) -> Result<f64, String> {
                float_weight_from_str(text)
            }
            fn exact_text(_: &f64) -> Option<String> {
                None
            }
            fn logarithms() -> Option<Logarithms<Self>> {
                Some(Logarithms::of_library())
            }
            fn weights_model(&self, graph: &Graph<f64>, rooting: Rooting) -> Result<Model<Self>, Error> {
                Model::new(*self, graph, rooting)
            }
        }
    )*};
}

float_engine!(
    spantree_faer::F64,
    spantree_faer::ShiftedF64,
    spantree_faer::Accurate
);

impl Backend for spantree_exact::Exact {
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
