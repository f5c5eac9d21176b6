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
//! * [`demo`]: the built-in example sentence and its report;
//! * [`train`], [`parse`], [`evaluate`]: the dependency parser of
//!   `spantree-parser` on CoNLL-U files.

pub mod args;
pub mod demo;
pub mod evaluate;
pub mod infer;
pub mod parse;
pub mod train;
