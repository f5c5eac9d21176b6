//! # spantree-api
//!
//! The front end of spantree, shared by the `spantree` command and the
//! Python bindings: everything between "a user named a backend and some
//! quantities and handed over records" and the library's `Model`.
//!
//! * [`backend`]: the backend chosen at run time by name ([`BackendKind`]:
//!   `accurate`, `f64`, `log`, `exact`, `high`; `FromStr`, `Display`, and
//!   `clap::ValueEnum` with the `clap` feature), and the [`Backend`] trait,
//!   what the front end needs of a backend beyond the library's;
//! * [`quantity`]: the quantity registry, one table ([`quantity::REGISTRY`])
//!   with each quantity's name, parameter, help, capability ([`quantity::Needs`])
//!   and the record fields it reads;
//! * [`algorithm`]: the algorithm choices of the quantities that have several;
//! * [`arrays`]: padded score arrays (the Python bindings' input): shape
//!   checks and one sentence's graph;
//! * [`check`]: the properties the fuzz targets check on any input bytes;
//! * [`input`]: one JSON record to a validated `Graph` and typed fields;
//! * [`record`]: a checked [`Request`], and one record to one result or
//!   error record;
//! * [`typed`]: the information-theoretic quantities as numbers rather
//!   than JSON, for the Python bindings ([`typed::Information`]);
//! * [`batch`]: chunked, parallel (rayon), order-keeping execution of a stream
//!   of records;
//! * [`error`]: [`UsageError`] (a request that cannot run) and [`LineError`]
//!   (one record without result; its `kind` is [`spantree_core::Error::kind`]
//!   for the library's errors).
//!
//! ```
//! use spantree_api::{BackendKind, Outcome, Quantity, Request};
//! use spantree_core::Rooting;
//!
//! let quantities = ["log_z", "entropy"].map(|q| q.parse::<Quantity>()).map(Result::unwrap);
//! let request = Request::new(BackendKind::Accurate, Rooting::Multi, &quantities, &[], false)?;
//! let mut out = Vec::new();
//! // Multi-root trees {0→1, 0→2}, {0→1, 1→2}, {0→2, 2→1}: Z = 1·2 + 1·3 + 2·4 = 13.
//! let outcome = request.process_line(1, br#"{"id":7,"weights":[[0,1,2],[0,0,3],[0,4,0]]}"#, &mut out);
//! assert_eq!(outcome, Outcome::Done);
//! let record: serde_json::Value = serde_json::from_slice(&out).unwrap();
//! assert!((record["log_z"].as_f64().unwrap() - 13f64.ln()).abs() < 1e-14);
//! # Ok::<(), spantree_api::UsageError>(())
//! ```

pub mod algorithm;
pub mod arrays;
pub mod backend;
pub mod batch;
pub mod check;
pub mod error;
pub mod input;
pub mod quantity;
pub mod record;
pub mod typed;

pub use algorithm::{AlgorithmChoice, Algorithms};
pub use backend::{parse_rooting, Backend, BackendKind, WithBackend};
pub use batch::{BatchError, Summary, Tick};
pub use error::{LineError, UsageError};
pub use quantity::{Needs, Quantity, QuantityInfo, Structure, REGISTRY};
pub use record::{Outcome, Request};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
