//! Writing an output file (an HTML report, the manual pages): whole or not
//! at all, and never over anything but a regular file that nothing uses.
//!
//! An output is written beside its path and renamed over it, so whatever
//! held the old name loses it: a loop device or a mount keeps the old inode
//! while the name now holds a report, a swap area is orphaned, a program
//! writing the file writes into a file nobody can name any more. So a path
//! whose bytes are in use (found by device and inode, through
//! [`crate::identify::identify`], never by path text) is refused, before
//! anything is written and again just before the rename.

use std::path::Path;

use crate::identify::{self, sysfs::Roots};

/// Why an output was not written; nothing was (no temporary file is left).
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The path exists and is a device node, a FIFO, a symbolic link or a
    /// directory: a rename would replace it.
    #[error("{path} is {what}; an output is written only as a regular file")]
    NotAFile { path: String, what: String },
    /// The path's bytes are in use; each reason is one use.
    #[error("{path} is in use ({}); an output never replaces a file in use", .uses.join("; "))]
    InUse { path: String, uses: Vec<String> },
    #[error("cannot write {path}: {why}")]
    Io { path: String, why: String },
}

/// What uses the regular file at `path`, one reason each: a loop device
/// over its bytes (at any depth), a mount of the file itself (a FUSE
/// filesystem serving it) or of a loop device over it, active swap, another
/// process holding it open or mapped for writing, a flashlab run writing
/// it. Empty when the path is absent or nothing uses it.
pub fn users(path: &Path) -> Vec<String> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Vec::new();
    };
    if !meta.is_file() {
        return Vec::new();
    }
    let Ok(info) = identify::identify(&Roots::system(), path, meta.len(), 512, 512) else {
        return Vec::new();
    };
    let mut uses = Vec::new();
    if !info.aliases.is_empty() {
        uses.push(format!("a loop device shows its bytes: {}", info.aliases.join(", ")));
    }
    uses.extend(info.in_use_by);
    uses
}

/// Refuse `path` as an output unless it is absent or a regular file that
/// nothing uses.
pub fn check(path: &Path) -> Result<(), OutputError> {
    let shown = path.display().to_string();
    if let Some(what) = crate::files::not_a_regular_file(path) {
        return Err(OutputError::NotAFile {
            path: shown,
            what: what.to_string(),
        });
    }
    let uses = users(path);
    if !uses.is_empty() {
        return Err(OutputError::InUse { path: shown, uses });
    }
    Ok(())
}

/// Write `bytes` to `path` whole or not at all: to a temporary file beside
/// it, then renamed over it, and only while `path` is absent or a regular
/// file nothing uses ([`check`], before the temporary file is made and
/// again just before the rename).
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let io = |why: String| OutputError::Io {
        path: path.display().to_string(),
        why,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| io("it names no file".into()))?;
    check(path)?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    // Made here (create_new) or not at all: a file already at that name is
    // someone else's, and is neither written nor removed.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| io(e.to_string()))?;
    let written = {
        use std::io::Write;
        file.write_all(bytes).and_then(|()| file.sync_all())
    };
    drop(file);
    let renamed = written
        .map_err(|e| io(e.to_string()))
        .and_then(|()| check(path))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| io(e.to_string())));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_is_written_whole_and_a_strangers_temporary_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.html");
        write_output(&out, b"first").unwrap();
        write_output(&out, b"second").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"second");
        // Our temporary name, taken by someone else's file.
        let tmp = dir.path().join(format!(".r.html.{}.tmp", std::process::id()));
        std::fs::write(&tmp, b"not ours").unwrap();
        let e = write_output(&out, b"third").unwrap_err();
        assert!(matches!(e, OutputError::Io { .. }), "{e}");
        assert_eq!(std::fs::read(&tmp).unwrap(), b"not ours");
        assert_eq!(std::fs::read(&out).unwrap(), b"second");
        let e = write_output(dir.path(), b"x").unwrap_err();
        assert!(
            matches!(&e, OutputError::NotAFile { what, .. } if what == "a directory"),
            "{e}"
        );
    }
}
