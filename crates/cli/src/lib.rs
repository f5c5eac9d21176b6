//! # spantree-cli
//!
//! The `spantree` command: batch inference over spanning-tree distributions.
//! `main.rs` only parses the command line and dispatches; everything else
//! lives here so that examples and tests can reach the phases separately.
//!
//! * [`args`]: the command line (clap);
//! * [`engine`]: the backends the command offers, and what the command needs
//!   of each beyond [`spantree_core::spantree_core::Engine`] (reading rational strings,
//!   printing exact values);
//! * [`input`]: one JSON line to a validated [`spantree_core::Graph`];
//! * [`record`]: one graph to one JSON output line (or an error record);
//! * [`infer`]: the streaming, parallel, order-keeping `infer` loop;
//! * [`demo`]: the built-in example sentence and its report.

pub mod args;
pub mod demo;
pub mod engine;
pub mod infer;
pub mod input;
pub mod record;
