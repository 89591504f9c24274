//! Reading a small text file a user names (a profile, a stored run to
//! import) without letting the name hang or flood the run: opened without
//! blocking, so a FIFO cannot hang it; refused unless a regular file; read
//! with a limit, so a device or a growing file cannot feed it forever. And
//! what an output path is when it is not a regular file (outputs are
//! written by [`crate::safety::output`], which also knows what uses a file).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The file's text, or why not, in words for an `error:` line.
pub fn read_small(path: &Path, max: u64) -> Result<String, String> {
    String::from_utf8(read_small_bytes(path, max)?).map_err(|_| "not UTF-8 text".to_string())
}

/// The file's bytes, with the same care (text in another charset).
pub fn read_small_bytes(path: &Path, max: u64) -> Result<Vec<u8>, String> {
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
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(too_big());
    }
    Ok(bytes)
}

/// What an output path is, when it exists and is not a regular file: a
/// report renamed over it would replace a device node (`/dev/full`), a FIFO,
/// a symbolic link or a directory.
pub fn not_a_regular_file(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::symlink_metadata(path).ok()?.file_type();
    if t.is_file() {
        None
    } else if t.is_symlink() {
        Some("a symbolic link")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}
