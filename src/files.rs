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
    use std::fs::FileType;
    use std::os::unix::fs::FileTypeExt;
    type Is = fn(&FileType) -> bool;
    let kinds: [(Is, &'static str); 6] = [
        (FileType::is_symlink, "a symbolic link"),
        (FileType::is_dir, "a directory"),
        (FileType::is_block_device, "a block device"),
        (FileType::is_char_device, "a character device"),
        (FileType::is_fifo, "a FIFO"),
        (FileType::is_socket, "a socket"),
    ];
    let t = std::fs::symlink_metadata(path).ok()?.file_type();
    if t.is_file() {
        return None;
    }
    let kind = kinds.iter().find(|(is, _)| is(&t));
    Some(kind.map_or("not a regular file", |&(_, name)| name))
}
