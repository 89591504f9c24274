//! Where the HTML report goes: a path checked before any work, and written
//! whole or not at all, never over anything but a regular file that nothing
//! uses ([`crate::safety::output`]).

use std::path::Path;

use crate::document::RunDocument;
use crate::error::{CliError, CliResult};

/// Refuse, before any work, a report path that cannot be written, that is
/// not a regular file (a device node, a FIFO, a symbolic link: the report is
/// renamed over the path, which would replace it), that is in use (a loop
/// device's backing file, a mounted image, a swap file, a file another
/// process writes), that holds the bytes of one of the `targets`
/// measured (`probe v.img --html v.img`, or the file behind a loop device),
/// or that is one of the files the command reads or keeps, each `kept`
/// with what it is (the results store, a run document read): a report
/// renamed over the store loses every run in it.
pub fn check_report_path(path: &Path, targets: &[&str], kept: &[(&Path, &str)]) -> CliResult<()> {
    let shown = path.display();
    // By device and inode where both exist, else by whole path: a store
    // the run is about to make does not exist yet.
    let key = crate::identify::stack::FileKey::of(path);
    let whole = |p: &Path| std::path::absolute(p).ok();
    let same = |f: &Path| match (key, crate::identify::stack::FileKey::of(f)) {
        (Some(a), Some(b)) => a == b,
        _ => whole(f).is_some() && whole(f) == whole(path),
    };
    if let Some((_, what)) = kept.iter().find(|(f, _)| same(f)) {
        return Err(
            CliError::usage(format!("{shown} is {what}; the report would replace it"))
                .hint("give the report another file name, as in -o report.html"),
        );
    }
    if let Some(key) = key {
        let stack = crate::identify::stack::Stack::read(&crate::identify::sysfs::Roots::system());
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
    // Not a regular file, or in use otherwise (after the target's own
    // bytes, whose message is the sharper).
    crate::safety::output::check(path)?;
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
/// a regular file nothing uses ([`crate::safety::output::write_output`]).
/// Returns where it went as a whole path, which a user can open from any
/// directory (a bare "flashlab-report-1.html" said nothing of where).
pub fn write_report(path: &Path, runs: &[(String, RunDocument)]) -> CliResult<std::path::PathBuf> {
    use crate::format::Format;
    let text = crate::format::html::Html.render(runs).unwrap_or_default();
    crate::safety::output::write_output(path, text.as_bytes())?;
    Ok(std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}
