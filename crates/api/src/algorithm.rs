//! The algorithm of each quantity that has more than one: the fast one by
//! default, and the literature's slower routes, kept as baselines for timing
//! and accuracy studies. One table ([`ALGORITHMS`]) holds their names and
//! help.

use std::str::FromStr;

use spantree_core::SecondOrder;

use crate::error::UsageError;

/// The algorithm of `log_z`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LogZBy {
    /// One factorisation of the Laplacian (LU, or the backend's
    /// elimination): `O(n³)`.
    #[default]
    Lu,
    /// Single-root `Z = Σ_r ρ_r det L⁰_(r)`, `n` minors (Koo et al. 2007):
    /// `O(n⁴)` ([`spantree_core::baseline::partition_by_minors`]).
    Minors,
}

/// The algorithm of `marginals`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MarginalsBy {
    /// From `X = L⁻¹` (Koo et al. 2007): `O(n³)`.
    #[default]
    Inverse,
    /// `Z` with every competing arc zeroed, per arc (McDonald & Satta 2007):
    /// `O(n⁵)` ([`spantree_core::baseline::marginals_by_zeroing`]).
    McDonaldSatta,
}

/// The algorithm of `entropy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EntropyBy {
    /// `ln Z − Σ_e μ_e ln w_e` from the marginals: `O(n³)`.
    #[default]
    Expectation,
    /// `n` column-replaced determinants (Smith & Eisner 2007): `O(n⁴)`
    /// ([`spantree_core::baseline::entropy_by_columns`]).
    SmithEisner,
}

/// The algorithm of `grad_ge`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GradGeBy {
    /// One reverse-mode pass through the marginals: `O(n³)`.
    #[default]
    ReverseMode,
    /// Through the covariance of arc indicators with the features (Druck &
    /// Smith 2009): `O(n⁴)` ([`spantree_core::baseline::grad_ge_by_covariance`]).
    Covariance,
}

/// One `QUANTITY=NAME` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlgorithmChoice {
    /// `log_z=…`.
    LogZ(LogZBy),
    /// `marginals=…`.
    Marginals(MarginalsBy),
    /// `entropy=…`.
    Entropy(EntropyBy),
    /// `grad_ge=…`.
    GradGe(GradGeBy),
    /// `covariance=…`.
    Covariance(SecondOrder),
}

impl AlgorithmChoice {
    fn info(self) -> &'static AlgorithmName {
        // Every choice has its row: `ALGORITHMS` lists all eleven.
        ALGORITHMS
            .iter()
            .find(|a| a.choice == self)
            .unwrap_or(&ALGORITHMS[0])
    }

    /// The quantity it is the algorithm of.
    pub fn quantity(self) -> &'static str {
        self.info().quantity
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.info().name
    }
}

/// A row of [`ALGORITHMS`].
#[derive(Clone, Copy, Debug)]
pub struct AlgorithmName {
    /// The quantity's name.
    pub quantity: &'static str,
    /// The algorithm's name.
    pub name: &'static str,
    /// What it stands for.
    pub choice: AlgorithmChoice,
    /// Whether it is the default for its quantity.
    pub default: bool,
    /// Its cost and what it does, in plain text.
    pub help: &'static str,
}

const fn algorithm(
    quantity: &'static str,
    name: &'static str,
    choice: AlgorithmChoice,
    default: bool,
    help: &'static str,
) -> AlgorithmName {
    AlgorithmName {
        quantity,
        name,
        choice,
        default,
        help,
    }
}

/// Every `QUANTITY=NAME`, defaults first within a quantity.
#[rustfmt::skip]
pub const ALGORITHMS: &[AlgorithmName] = &[
    algorithm("log_z", "lu", AlgorithmChoice::LogZ(LogZBy::Lu), true,
        "one factorisation, O(n^3)"),
    algorithm("log_z", "minors", AlgorithmChoice::LogZ(LogZBy::Minors), false,
        "single-root Z by n minors (Koo et al. 2007), O(n^4); minors with --rooting multi \
         is a usage error"),
    algorithm("marginals", "inverse", AlgorithmChoice::Marginals(MarginalsBy::Inverse), true,
        "from L^-1, O(n^3)"),
    algorithm("marginals", "mcdonald-satta",
        AlgorithmChoice::Marginals(MarginalsBy::McDonaldSatta), false,
        "Z per arc with the competing arcs zeroed (McDonald & Satta 2007), O(n^5); \
         label_marginals keep the fast route"),
    algorithm("entropy", "expectation", AlgorithmChoice::Entropy(EntropyBy::Expectation), true,
        "from the marginals, O(n^3)"),
    algorithm("entropy", "smith-eisner", AlgorithmChoice::Entropy(EntropyBy::SmithEisner), false,
        "n column-replaced determinants (Smith & Eisner 2007), O(n^4)"),
    algorithm("grad_ge", "reverse-mode", AlgorithmChoice::GradGe(GradGeBy::ReverseMode), true,
        "reverse mode, O(n^3)"),
    algorithm("grad_ge", "covariance", AlgorithmChoice::GradGe(GradGeBy::Covariance), false,
        "through arc-pair covariances (Druck & Smith 2009), O(n^4)"),
    algorithm("covariance", "auto", AlgorithmChoice::Covariance(SecondOrder::Auto), true,
        "the cheaper by operation count"),
    algorithm("covariance", "jacobian-vector",
        AlgorithmChoice::Covariance(SecondOrder::JacobianVector), false,
        "R reverse passes, O(R n^3 + R S' n^2)"),
    algorithm("covariance", "hessian", AlgorithmChoice::Covariance(SecondOrder::Hessian), false,
        "arc-pair marginals from L^-1 for every pair of feature entries, O(n^4), no \
         n^2 x n^2 matrix stored"),
];

/// The choices for messages: `log_z=lu|minors, marginals=…`, defaults first.
pub fn known_algorithms() -> String {
    let mut out: Vec<String> = Vec::new();
    for a in ALGORITHMS {
        match out.last_mut() {
            Some(last) if last.starts_with(&format!("{}=", a.quantity)) => {
                last.push('|');
                last.push_str(a.name);
            }
            _ => out.push(format!("{}={}", a.quantity, a.name)),
        }
    }
    out.join(", ")
}

impl FromStr for AlgorithmChoice {
    type Err = UsageError;

    /// Parses `QUANTITY=NAME`; spaces around either are ignored.
    ///
    /// # Errors
    /// [`UsageError`]: no `=`, a quantity without a choice of algorithm, or
    /// an unknown name; each message lists the valid choices.
    fn from_str(text: &str) -> Result<Self, UsageError> {
        let Some((quantity, name)) = text.trim().split_once('=') else {
            return Err(UsageError::AlgorithmSyntax {
                text: text.to_owned(),
            });
        };
        let (quantity, name) = (quantity.trim(), name.trim());
        let of_quantity: Vec<&AlgorithmName> = ALGORITHMS
            .iter()
            .filter(|a| a.quantity == quantity)
            .collect();
        let Some(first) = of_quantity.first() else {
            return Err(UsageError::NoChoiceOfAlgorithm {
                quantity: quantity.to_owned(),
            });
        };
        of_quantity
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.choice)
            .ok_or_else(|| {
                let known: Vec<String> = of_quantity
                    .iter()
                    .map(|a| {
                        if a.default {
                            format!("{} (default)", a.name)
                        } else {
                            a.name.to_owned()
                        }
                    })
                    .collect();
                UsageError::UnknownAlgorithm {
                    quantity: first.quantity,
                    name: name.to_owned(),
                    known: known.join(", "),
                }
            })
    }
}

/// The algorithm of every quantity that has a choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Algorithms {
    /// `log_z`.
    pub log_z: LogZBy,
    /// `marginals`.
    pub marginals: MarginalsBy,
    /// `entropy`.
    pub entropy: EntropyBy,
    /// `grad_ge`.
    pub grad_ge: GradGeBy,
    /// `covariance`.
    pub covariance: SecondOrder,
}

impl Algorithms {
    /// The defaults with `choices` applied in order.
    ///
    /// # Errors
    /// [`UsageError::TwoAlgorithms`] when one quantity is given two
    /// different algorithms.
    pub fn from_choices(choices: &[AlgorithmChoice]) -> Result<Self, UsageError> {
        let mut out = Algorithms::default();
        for (i, a) in choices.iter().enumerate() {
            if let Some(b) = choices[..i]
                .iter()
                .find(|b| b.quantity() == a.quantity() && *b != a)
            {
                return Err(UsageError::TwoAlgorithms {
                    quantity: a.quantity(),
                    first: b.name(),
                    second: a.name(),
                });
            }
            match *a {
                AlgorithmChoice::LogZ(x) => out.log_z = x,
                AlgorithmChoice::Marginals(x) => out.marginals = x,
                AlgorithmChoice::Entropy(x) => out.entropy = x,
                AlgorithmChoice::GradGe(x) => out.grad_ge = x,
                AlgorithmChoice::Covariance(x) => out.covariance = x,
            }
        }
        Ok(out)
    }
}
