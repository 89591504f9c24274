//! flashlab: what flash storage really is and how it really behaves.
//!
//! The data flow of DESIGN.md is the module layout: [`cli`] parses and validates,
//! [`seam`] is the one seam to devices (real or simulated), [`device`] and
//! [`registers`] identify, [`output`] renders results.

pub mod cli;
pub mod device;
pub mod error;
pub mod measure;
pub mod output;
pub mod registers;
pub mod safety;
pub mod seam;
pub mod sim;
pub mod units;
