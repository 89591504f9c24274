//! Between the CLI and the tests (DESIGN.md "Tests, the runner, the run
//! document"): the [`runner::Runner`] every test runs through, the
//! [`document::RunDocument`] every renderer reads, the writing session behind
//! the preserving target, and each command's sequence of tests.

pub mod document;
pub mod jobs;
pub mod offline;
pub mod open;
pub mod pattern;
pub mod progress;
pub mod restore;
pub mod results;
pub mod runner;
pub mod session;
