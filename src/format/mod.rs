//! Everything that leaves flashlab for a person or a script, one format a
//! file behind one trait (hyperfine's `export/`): terminal text, JSON, CSV
//! (scatter's points), TOML (a simulated card's parameters) and the HTML
//! report. Each reads run documents and nothing else; the CLI picks one
//! and writes what it returns (stdout, or a file for the report).

pub mod csv;
pub mod html;
pub mod json;
pub mod text;
pub mod toml;

use crate::document::RunDocument;

/// A run document this format has nothing to say about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct FormatError {
    pub why: String,
    pub fix: String,
}

/// One output format.
pub trait Format {
    /// The documents (with the names they go by: a run id, a file) as this
    /// format's text. Every format takes one; the report takes several (a
    /// comparison).
    fn render(&self, runs: &[(String, RunDocument)]) -> Result<String, FormatError>;
}

/// A document as the only run of a format's input.
pub fn one(doc: &RunDocument) -> [(String, RunDocument); 1] {
    let id = doc.target.as_ref().map_or(String::new(), |t| t.spec.clone());
    [(id, doc.clone())]
}

/// The one-screen summary of a run: the device, then each test's lines
/// (is it genuine, how fast, then its geometry). probe's text and the HTML
/// report both print it first.
pub fn summary(doc: &RunDocument) -> Vec<(crate::measure::summary::Topic, String)> {
    let mut out = vec![(
        crate::measure::summary::Topic::Device,
        crate::document::device::of(doc).name,
    )];
    out.extend(doc.results.summary());
    out
}
