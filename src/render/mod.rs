//! Everything that leaves flashlab for a person or a script. Each output
//! format is one [`Renderer`] reading the run document: terminal text and
//! JSON (the results store and the HTML report are each one more file).
//! [`stdio`] is the one way to write stdout and stderr; [`table`] the one
//! table layout.

pub mod json;
pub mod text;

use crate::document::RunDocument;

/// One output format.
pub trait Renderer {
    /// The document as this format's text, ending in a newline.
    fn render(&self, doc: &RunDocument) -> String;
}

/// Print `doc` on stdout: one JSON document with `--json`, text otherwise.
pub fn print(doc: &RunDocument, as_json: bool) {
    let text = if as_json {
        json::Json.render(doc)
    } else {
        text::Text.render(doc)
    };
    crate::out!("{text}");
}
