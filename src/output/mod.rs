//! Everything that leaves flashlab for a person or a script: the JSON envelope of
//! DESIGN.md's contract and the one table renderer for terminals.

pub mod json;
pub mod stdio;
pub mod table;
