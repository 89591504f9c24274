//! TOML: a simulated card's parameters, as `sim:FILE.toml` reads them back
//! (`sim show --toml`).

use super::{Format, FormatError};
use crate::document::{Body, RunDocument};

pub struct Toml;

impl Format for Toml {
    fn render(&self, runs: &[(String, RunDocument)]) -> Result<String, FormatError> {
        match runs.first().map(|(_, d)| &d.body) {
            Some(Body::SimShow(s)) => Ok(s.toml.clone()),
            _ => Err(FormatError {
                why: "only a simulated card's parameters are written as TOML".into(),
                fix: "use `flashlab sim show PROFILE --toml`".into(),
            }),
        }
    }
}
