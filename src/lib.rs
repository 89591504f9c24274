//! flashlab: what flash storage really is and how it really behaves.
//!
//! The data flow of DESIGN.md is the module layout: [`cli`] parses and
//! validates (no system calls) and dispatches; [`run`] runs each command's
//! [`measure`] tests through one runner over the [`seam`] (real devices,
//! simulated cards from [`sim`], and the preserving target of [`safety`]);
//! [`device`] and [`registers`] identify; [`render`] turns the run document
//! into text or JSON.

#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(clippy::wildcard_enum_match_arm)]

pub mod args;
pub mod cli;
pub mod command;
pub mod console;
pub mod document;
pub mod error;
pub mod files;
pub mod format;
pub mod identify;
pub mod measure;
pub mod random;
pub mod registers;
pub mod runner;
pub mod safety;
pub mod sim;
pub mod store;
pub mod svg;
pub mod target;
pub mod units;
