//! CSV: a test's points where it has them (`scatter --csv`), and a
//! batch's rows (`batch --format csv`), one device a line, for a
//! spreadsheet.

use super::{Format, FormatError};
use crate::document::RunDocument;

pub struct Csv;

impl Format for Csv {
    fn render(&self, runs: &[(String, RunDocument)]) -> Result<String, FormatError> {
        let Some((_, doc)) = runs.first() else {
            return Ok(String::new());
        };
        if let crate::document::Body::Batch(b) = &doc.body {
            return Ok(batch(&b.batch));
        }
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

/// A batch's rows: RFC 4180, every field quoted where it must be.
fn batch(b: &crate::document::batch::Batch) -> String {
    let field = |s: &str| {
        if s.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let num = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.2}"));
    let mut out = String::from(
        "batch,slot,device,label,identity,bus,announced_bytes,usable_bytes,fake_kind,read_mb_s,write_mb_s,\
         classes,verdict,why,run_id\n",
    );
    for r in &b.rows {
        let cells = [
            b.id.clone(),
            r.slot.clone(),
            r.device.clone(),
            r.label.clone().unwrap_or_default(),
            r.identity.key.clone(),
            r.bus.clone(),
            r.announced_bytes.to_string(),
            r.usable_bytes.map_or(String::new(), |u| u.to_string()),
            r.fake_kind.map_or("", |k| k.as_str()).to_string(),
            num(r.read_mb_s),
            num(r.write_mb_s),
            r.classes.join(" "),
            r.verdict.as_str().to_string(),
            r.why.clone(),
            r.run_id.map_or(String::new(), |i| i.to_string()),
        ];
        let line: Vec<String> = cells.iter().map(|c| field(c)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}
