//! Where the HTML report goes: a path checked before any work, and written
//! whole or not at all, never over anything but a regular file.

use std::path::Path;

use crate::document::RunDocument;
use crate::error::{CliError, CliResult};

/// Refuse, before any work, a report path that cannot be written, that is
/// not a regular file (a device node, a FIFO, a symbolic link: the report is
/// renamed over the path, which would replace it), or that holds the bytes
/// of one of the `targets` measured (`probe v.img --html v.img`, or the file
/// behind a loop device).
pub fn check_report_path(path: &Path, targets: &[&str]) -> CliResult<()> {
    let shown = path.display();
    if let Some(what) = crate::files::not_a_regular_file(path) {
        return Err(
            CliError::usage(format!("{shown} is {what}; a report is written only as a regular file"))
                .hint("give a new file name, as in -o report.html"),
        );
    }
    if let Some(key) = crate::identify::stack::FileKey::of(path) {
        let stack = crate::identify::stack::Stack::read(&crate::identify::sysfs::Host::system());
        for t in targets.iter().map(Path::new).filter(|t| t.exists()) {
            if stack.aliases(t).files().iter().any(|(_, k)| *k == key) {
                return Err(CliError::usage(format!(
                    "{shown} holds the bytes of {}, the target measured; the report would replace them",
                    t.display()
                ))
                .hint("give the report another file name, as in -o report.html"));
            }
        }
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

/// Write the report of `runs` to `path`, whole or not at all, and only over
/// a regular file ([`crate::files::write_output`]).
pub fn write_report(path: &Path, runs: &[(String, RunDocument)]) -> CliResult<()> {
    use crate::format::Format;
    let text = crate::format::html::Html.render(runs).unwrap_or_default();
    crate::files::write_output(path, text.as_bytes()).map_err(|why| {
        CliError::usage(format!("cannot write {}: {why}", path.display()))
            .hint("check the directory exists and is writable, and give a regular file's name")
    })
}
