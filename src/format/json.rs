//! JSON: the run document as docs/DESIGN.md's JSON contract, exactly one
//! document on stdout.

use super::{Format, FormatError};
use crate::document::RunDocument;

pub struct Json;

impl Format for Json {
    fn render(&self, runs: &[(String, RunDocument)]) -> Result<String, FormatError> {
        let Some((_, doc)) = runs.first() else {
            return Ok("{}\n".into());
        };
        // A run document is plain data with string keys; it always serialises.
        let mut s = serde_json::to_string_pretty(doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        Ok(s)
    }
}
