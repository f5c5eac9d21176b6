//! # spantree-cli
//!
//! The `spantree` command: batch inference over spanning-tree distributions.
//! Everything a front end shares with the Python bindings (backend choice,
//! quantity registry, JSON records, batch execution) is in `spantree-api`;
//! this crate is argument parsing, I/O, the progress bar and exit statuses.
//! `main.rs` only dispatches.
//!
//! * [`args`]: the command line (clap derive);
//! * [`infer`]: opening the streams of `infer` and running the batch;
//! * [`demo`]: the built-in example sentence and its report.

pub mod args;
pub mod demo;
pub mod infer;
