//! CSV: a test's points where it has them (`scatter --csv`).

use super::{Format, FormatError};
use crate::document::RunDocument;

pub struct Csv;

impl Format for Csv {
    fn render(&self, runs: &[(String, RunDocument)]) -> Result<String, FormatError> {
        let Some((_, doc)) = runs.first() else {
            return Ok(String::new());
        };
        let test = if let crate::document::CommandName::Test(t) = &doc.command {
            Some(*t)
        } else {
            None
        };
        test.and_then(|t| doc.results.csv(t)).ok_or_else(|| FormatError {
            why: format!("{} has no points to write as CSV", doc.command),
            fix: "use --json for the whole result".into(),
        })
    }
}
