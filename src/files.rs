//! Reading a small text file a user names (a profile, a stored run to
//! import) without letting the name hang or flood the run: opened without
//! blocking, so a FIFO cannot hang it; refused unless a regular file; read
//! with a limit, so a device or a growing file cannot feed it forever.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The file's text, or why not, in words for an `error:` line.
pub fn read_small(path: &Path, max: u64) -> Result<String, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let too_big = || format!("larger than {max} bytes");
    if meta.len() > max {
        return Err(too_big());
    }
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > max {
        return Err(too_big());
    }
    Ok(text)
}
