//! flashlab: what flash storage really is and how it really behaves.
//!
//! The data flow of docs/DESIGN.md is the module layout, bottom layer
//! first: [`units`], [`random`], [`files`], [`console`], [`svg`],
//! [`registers`]; [`identify`] (what a device is and what its bytes rest
//! on); [`targets`] (the seam: real devices), [`sim`] (simulated cards) and
//! [`safety`] (the preserving target and its journal); [`emulate`] (a
//! simulated card served as a block device); [`args`] (the shared
//! arguments, parsed); [`measure`] (the tests, one folder each, listed in
//! its registry); [`document`] (the typed run document); [`store`];
//! [`error`]; [`runner`]; [`command`] (each command's sequence); [`format`]
//! (one file per output format); [`cli`].

#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(clippy::wildcard_enum_match_arm)]

pub mod args;
pub mod cli;
pub mod command;
pub mod console;
pub mod document;
pub mod emulate;
pub mod error;
pub mod files;
pub mod format;
pub mod identify;
pub mod import;
pub mod measure;
pub mod places;
pub mod random;
pub mod registers;
pub mod runner;
pub mod safety;
pub mod sim;
pub mod store;
pub mod svg;
pub mod targets;
pub mod units;
