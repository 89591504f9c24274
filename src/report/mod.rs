//! What is made of stored runs: their comparable figures (`metrics`), the
//! one-screen summary (`summary`), and the self-contained HTML report with
//! inline SVG plots (`html`, `svg`).

pub mod html;
pub mod metrics;
pub mod summary;
pub mod svg;

use std::path::Path;

use crate::error::{CliError, CliResult};
use crate::run::document::RunDocument;

/// Refuse a report path that cannot be written, before any work: a
/// directory, or a file in a directory that does not exist or refuses a
/// new file.
pub fn check_writable(path: &Path) -> CliResult<()> {
    let shown = path.display();
    if path.is_dir() {
        return Err(CliError::usage(format!("{shown} is a directory")).hint("give a file name, as in -o report.html"));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let probe = dir.join(format!(".flashlab-check.{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| {
        CliError::usage(format!("cannot write the report in {}: {e}", dir.display()))
            .hint("choose a directory that exists and that you may write to")
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Write the report of `runs` to `path`: to a temporary file beside it,
/// then renamed, so a failed write never leaves half a report.
pub fn write(path: &Path, runs: &[(String, RunDocument)]) -> CliResult<()> {
    let text = html::report(runs);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| CliError::usage(format!("{} names no file", path.display())).hint("give -o report.html"))?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    let fail = |e: std::io::Error| {
        CliError::usage(format!("cannot write {}: {e}", path.display()))
            .hint("check the directory exists and is writable")
    };
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}
