//! The backends a front end offers, chosen at run time by name
//! ([`BackendKind`]), and what the front end needs of each beyond the
//! library's backend trait ([`Backend`]): reading a weight written as a
//! string, printing a value exactly where the number type is exact, and the
//! quantities that need logarithms where the number type has them.

use std::fmt;
use std::str::FromStr;

use spantree_core::{Engine, Error, Graph, Model, Numerical, Rooting, Scalar, Transcendental};

use crate::error::UsageError;
use crate::record::{eval_logarithmic, LogEval};
use crate::typed::Information;

/// A backend by its name on the command line (`--backend`) and in the
/// output's `"backend"` field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// `accurate`: [`spantree_faer::Accurate`].
    #[default]
    Accurate,
    /// `f64`: [`spantree_faer::F64`].
    F64,
    /// `log`: [`spantree_faer::ShiftedF64`].
    Log,
    /// `exact`: `spantree_exact::Exact` (with the `exact` feature, on by
    /// default; without it, GMP is not built and the name is refused).
    #[cfg(feature = "exact")]
    Exact,
    /// `high`: [`HighFloat`], MPFR floats of 256 bits (with the `exact`
    /// feature, which builds MPFR).
    #[cfg(feature = "exact")]
    High,
}

/// The high-precision backend of [`BackendKind::High`]: 256-bit binary
/// floats (about 77 significant digits).
#[cfg(feature = "exact")]
pub type HighFloat = spantree_exact::HighPrecision<256>;

/// One row per backend: the kind, its name, one line of help, whether its
/// numbers have `ln`/`exp` ([`Transcendental`]).
const BACKENDS: &[(BackendKind, &str, &str, bool)] = &[
    (
        BackendKind::Accurate,
        "accurate",
        "Cancellation-free elimination of the Laplacian in f64, falling back to log space \
         outside f64's safe range: accurate whatever the scales of the scores \
         (spantree_faer::Accurate)",
        true,
    ),
    (
        BackendKind::F64,
        "f64",
        "f64 LU on the weights as given (spantree_faer::F64)",
        true,
    ),
    (
        BackendKind::Log,
        "log",
        "f64 LU on column-shifted weights: ln Z never overflows (spantree_faer::ShiftedF64)",
        true,
    ),
    #[cfg(feature = "exact")]
    (
        BackendKind::Exact,
        "exact",
        "Exact rationals (spantree_exact::Exact); slow beyond a few dozen words",
        false,
    ),
    #[cfg(feature = "exact")]
    (
        BackendKind::High,
        "high",
        "256-bit MPFR floats, about 77 significant digits, logarithms included \
         (spantree_exact::HighPrecision<256>): a reference value for every quantity; \
         slow beyond a few dozen words",
        true,
    ),
];

impl BackendKind {
    /// Every backend of this build, in the order of the help.
    pub const ALL: [BackendKind; 3 + 2 * cfg!(feature = "exact") as usize] = [
        BackendKind::Accurate,
        BackendKind::F64,
        BackendKind::Log,
        #[cfg(feature = "exact")]
        BackendKind::Exact,
        #[cfg(feature = "exact")]
        BackendKind::High,
    ];

    fn row(self) -> &'static (BackendKind, &'static str, &'static str, bool) {
        // `BACKENDS` lists every kind in declaration order.
        let row = &BACKENDS[self as usize];
        debug_assert_eq!(row.0, self, "BACKENDS is in declaration order");
        row
    }

    /// The name: `"accurate"`, `"f64"`, `"log"`, `"exact"`, `"high"`.
    pub fn name(self) -> &'static str {
        self.row().1
    }

    /// One line of help.
    pub fn help(self) -> &'static str {
        self.row().2
    }

    /// Whether its numbers have `ln` and `exp`, which the entropy-type
    /// quantities need ([`crate::quantity::Needs::Logarithms`]).
    pub fn has_logarithms(self) -> bool {
        self.row().3
    }

    /// Whether its numbers are exact: then results carry `z` as a rational
    /// string and exact output is possible.
    pub fn is_exact(self) -> bool {
        #[cfg(feature = "exact")]
        return self == BackendKind::Exact;
        #[cfg(not(feature = "exact"))]
        false
    }

    /// The names, for messages: `accurate, f64, log, exact, high`.
    pub fn known() -> String {
        BACKENDS.iter().map(|b| b.1).collect::<Vec<_>>().join(", ")
    }

    /// Runs `task` on the backend of this kind: the one place where a name
    /// chosen at run time becomes a type.
    pub fn dispatch<T: WithBackend>(self, task: T) -> T::Output {
        match self {
            BackendKind::Accurate => task.run(&spantree_faer::Accurate),
            BackendKind::F64 => task.run(&spantree_faer::F64),
            BackendKind::Log => task.run(&spantree_faer::ShiftedF64),
            #[cfg(feature = "exact")]
            BackendKind::Exact => task.run(&spantree_exact::Exact),
            #[cfg(feature = "exact")]
            BackendKind::High => task.run(&HighFloat::default()),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackendKind {
    type Err = UsageError;

    /// # Errors
    /// [`UsageError::UnknownBackend`].
    fn from_str(s: &str) -> Result<Self, UsageError> {
        Self::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| UsageError::UnknownBackend { name: s.to_owned() })
    }
}

#[cfg(feature = "clap")]
impl clap::ValueEnum for BackendKind {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.help()))
    }
}

/// A computation generic over the backend, run by [`BackendKind::dispatch`].
pub trait WithBackend {
    /// What it returns.
    type Output;
    /// Runs on `backend`.
    fn run<B: Backend>(self, backend: &B) -> Self::Output;
}

/// What a front end needs of a backend beyond the library's.
///
/// Generic code in this crate is written against `B: Backend` only, so that
/// a change of the library's backend trait is a change of this one bound.
pub trait Backend: Engine {
    /// Whether the scalar is exact: then the output carries `z` as a rational
    /// string and exact output is meaningful.
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

    /// The decimal text of a value at the backend's full precision, on
    /// backends more precise than `f64` (the high-precision one: about 77
    /// significant digits); `None` elsewhere.
    fn precise_text(_x: &Self::Scalar) -> Option<String> {
        None
    }

    /// The evaluation of the quantities that need `ln` and `exp` of the
    /// scalar, or `None` when it has neither (exact rationals): generic code
    /// cannot name the bound `Scalar: Transcendental` for every backend, so
    /// each backend says here.
    fn logarithms() -> Option<LogEval<Self>> {
        None
    }

    /// The typed information-theoretic quantities ([`Information`]), or
    /// `None` when the scalar has no logarithms (exact rationals): the same
    /// capability as [`Backend::logarithms`], for front ends that want
    /// numbers rather than JSON.
    fn information() -> Option<Information<Self>> {
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

/// The evaluation of the logarithmic quantities on a backend whose scalar
/// has them.
fn logarithmic<B: Backend>() -> Option<LogEval<B>>
where
    B::Scalar: Transcendental,
{
    Some(eval_logarithmic::<B>)
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
macro_rules! float_backend {
    ($($backend:ty),*) => {$(
        impl Backend for $backend {
            const EXACT: bool = false;
            fn weight_from_str(text: &str) -> Result<f64, String> {
                float_weight_from_str(text)
            }
            fn exact_text(_: &f64) -> Option<String> {
                None
            }
            fn logarithms() -> Option<LogEval<Self>> {
                logarithmic::<Self>()
            }
            fn information() -> Option<Information<Self>> {
                Some(Information::new())
            }
            fn weights_model(&self, graph: &Graph<f64>, rooting: Rooting) -> Result<Model<Self>, Error> {
                Model::new(*self, graph, rooting)
            }
        }
    )*};
}

float_backend!(
    spantree_faer::F64,
    spantree_faer::ShiftedF64,
    spantree_faer::Accurate
);

#[cfg(feature = "exact")]
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

#[cfg(feature = "exact")]
impl Backend for HighFloat {
    const EXACT: bool = false;
    /// A rational string (`"3/7"`, `"0.1"`), rounded once to 256 bits.
    fn weight_from_str(text: &str) -> Result<Self::Scalar, String> {
        <spantree_exact::Exact as Backend>::weight_from_str(text).map(|r| (&r).into())
    }
    fn exact_text(_: &Self::Scalar) -> Option<String> {
        None
    }
    fn precise_text(x: &Self::Scalar) -> Option<String> {
        Some(x.to_string())
    }
    fn logarithms() -> Option<LogEval<Self>> {
        logarithmic::<Self>()
    }
    fn information() -> Option<Information<Self>> {
        Some(Information::new())
    }
    /// Through [`Model::new`] when every weight is an `f64` (JSON numbers
    /// are), which keeps the `f64` graph that Rényi entropies, norms and
    /// decoders need; weights read from rational strings stay at 256 bits.
    fn weights_model(
        &self,
        graph: &Graph<Self::Scalar>,
        rooting: Rooting,
    ) -> Result<Model<Self>, Error> {
        let n1 = graph.n() + 1;
        let exact_f64 = |x: &Self::Scalar| {
            let f = x.to_f64();
            (Self::Scalar::from_f64(f) == *x).then_some(f)
        };
        let cells: Option<Vec<Vec<Vec<f64>>>> = (0..n1)
            .map(|h| {
                (0..n1)
                    .map(|m| graph.values(h, m).iter().map(exact_f64).collect())
                    .collect()
            })
            .collect();
        match cells {
            Some(rows) if graph.is_labeled() => {
                Model::new(*self, &Graph::from_labeled_weights(&rows)?, rooting)
            }
            Some(rows) => {
                let rows: Vec<Vec<f64>> = rows
                    .into_iter()
                    .map(|r| r.into_iter().map(|c| c[0]).collect())
                    .collect();
                Model::new(*self, &Graph::from_weights(&rows)?, rooting)
            }
            None => Model::from_scalar_graph(*self, graph, rooting),
        }
    }
}

/// Parses a rooting by its name, `"single"` or `"multi"`.
///
/// # Errors
/// [`UsageError::UnknownRooting`].
pub fn parse_rooting(s: &str) -> Result<Rooting, UsageError> {
    Rooting::ALL
        .into_iter()
        .find(|r| r.name() == s)
        .ok_or_else(|| UsageError::UnknownRooting { name: s.to_owned() })
}

/// One line of help per rooting, in the order of [`Rooting::ALL`].
pub fn rooting_help(rooting: Rooting) -> &'static str {
    match rooting {
        Rooting::Single => "Exactly one word attaches to the root",
        Rooting::Multi => "Any non-zero number of words attach to the root",
    }
}

/// A clap value parser for a [`Rooting`]: its names and help as possible
/// values (the library's `Rooting` is not this crate's, so it cannot derive
/// `ValueEnum`).
#[cfg(feature = "clap")]
pub fn rooting_parser() -> impl clap::builder::TypedValueParser<Value = Rooting> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        Rooting::ALL.map(|r| PossibleValue::new(r.name()).help(rooting_help(r))),
    )
    // The parser above admits only the names of `Rooting::ALL`.
    .map(|name| parse_rooting(&name).unwrap_or(Rooting::Single))
}

/// A clap value parser for a [`spantree_core::Layout`]: its names and help
/// as possible values.
#[cfg(feature = "clap")]
pub fn layout_parser() -> impl clap::builder::TypedValueParser<Value = spantree_core::Layout> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    use spantree_core::Layout;
    PossibleValuesParser::new(Layout::ALL.map(|l| PossibleValue::new(l.name()).help(l.help())))
        // The parser above admits only the names of `Layout::ALL`.
        .map(|name| name.parse().unwrap_or_default())
}
