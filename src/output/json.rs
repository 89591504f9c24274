//! The JSON envelope every `--json` document shares (DESIGN.md "JSON contract").

use serde::Serialize;

use crate::seam::TargetDescription;

/// Bumped when a field changes meaning or disappears; adding fields keeps it.
pub const SCHEMA_VERSION: u32 = 1;

/// `{schema_version, command, target, device_time_s, <result key>: ...}`.
#[derive(Debug, Serialize)]
pub struct Envelope<'a, T: Serialize> {
    pub schema_version: u32,
    pub command: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<&'a TargetDescription>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_time_s: Option<f64>,
    #[serde(flatten)]
    pub body: T,
}

/// Print exactly one JSON document on stdout.
pub fn print<T: Serialize>(envelope: &Envelope<'_, T>) {
    let text = serde_json::to_string_pretty(envelope).expect("result types serialise");
    crate::outln!("{text}");
}
