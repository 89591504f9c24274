//! The JSON renderer: the run document as DESIGN.md's JSON contract, exactly
//! one document on stdout.

use super::Renderer;
use crate::document::RunDocument;

pub struct Json;

impl Renderer for Json {
    fn render(&self, doc: &RunDocument) -> String {
        // A run document is plain data with string keys; it always serialises.
        let mut s = serde_json::to_string_pretty(doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }
}
