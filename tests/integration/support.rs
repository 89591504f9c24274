//! Shared helpers: the binary under test, temporary files, and loop devices and
//! mounts that are always detached/unmounted by name, also when a test fails.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The results store a test's runs save into: one per test (named after
/// it, so no test reads another's runs) in a directory per user (so one
/// user's leftovers never stand in another's way), never the user's own.
pub fn test_db() -> PathBuf {
    let uid = rustix::process::getuid().as_raw();
    let dir = std::env::temp_dir().join(format!("flashlab-tests-{uid}"));
    let _ = std::fs::create_dir_all(&dir);
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    dir.join(format!("{test}.sqlite"))
}

/// The SHA-256 of a file's or device's bytes: what every data-safety
/// check compares before and after.
pub fn sha(path: &Path) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    Sha256::digest(std::fs::read(path).expect("read target")).to_vec()
}

/// The environment every run of the binary gets: the test's own results
/// store and its own default journal directory (where journals made under
/// another --journal-dir leave their pointers), never the user's.
pub fn test_env() -> [(&'static str, PathBuf); 2] {
    let db = test_db();
    let journals = db.with_extension("journals");
    [("FLASHLAB_DB", db), ("FLASHLAB_JOURNAL_DIR", journals)]
}

pub fn flashlab() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("flashlab").expect("binary built");
    c.envs(test_env());
    c
}

/// Run flashlab with `--json` and parse stdout, asserting exit 0 and that stdout
/// holds exactly one JSON document.
pub fn json(args: &[&str]) -> serde_json::Value {
    let out = flashlab().args(args).arg("--json").output().expect("runs");
    document(&out, 0, &format!("flashlab {args:?}"))
}

/// Run `cmd`, which must be refused: exit 2, stderr with an `error:` that
/// says `says` and a `hint:`, nothing on stdout. Returns stderr.
pub fn refused(cmd: &mut assert_cmd::Command, says: &str) -> String {
    let out = cmd.output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error:") && err.contains("hint:") && err.contains(says),
        "should say {says:?}: {err}"
    );
    assert!(out.stdout.is_empty(), "a refusal prints nothing on stdout: {err}");
    err
}

/// The one JSON document a finished run printed on stdout, once it exited
/// with `code` (stderr in the message where it did not); `what` names the
/// run or the loop's case in either message.
pub fn document(out: &std::process::Output, code: i32, what: &str) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// [`json`] with the results store `db`: a store of the test's own, made
/// in a temporary directory, so it holds only the runs the test made.
pub fn with_db(db: &Path, args: &[&str]) -> serde_json::Value {
    json(&[args, &["--db", db.to_str().expect("a UTF-8 path")]].concat())
}

/// Run flashlab for its text (200 columns, so no line wraps a phrase the
/// test looks for) with the results store `db`, asserting exit 0: stdout.
pub fn text_with_db(db: &Path, args: &[&str]) -> String {
    let out = flashlab()
        .args(args)
        .arg("--db")
        .arg(db)
        .env("COLUMNS", "200")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "flashlab {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// A temporary file of `size` bytes filled with a seeded pseudo-random pattern.
pub fn random_file(dir: &Path, name: &str, size: usize, seed: u64) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, pattern(size, seed)).unwrap();
    path
}

/// Deterministic bytes (xorshift64*), so tests need no RNG crate.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Why root-only tests cannot run here, or None when they can.
pub fn cannot_use_loop_devices() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("no /dev/loop-control".into());
    }
    if Command::new("losetup").arg("--version").output().is_err() {
        return Some("losetup is not installed".into());
    }
    None
}

/// Say that the running test is skipped, and why, where the test output
/// shows it: written to the process's stderr directly (libtest captures
/// `eprintln!` of a passing test, not this), and counted. Under CI=true a
/// skip fails the test instead: CI has root, loop devices, io_uring,
/// /dev/fuse, zram and every tool `.ci/run` installs.
pub fn skip(why: &str) {
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SKIPPED: AtomicUsize = AtomicUsize::new(0);
    let name = std::thread::current().name().unwrap_or("?").to_string();
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI must run {name}, but: {why}");
    }
    let n = SKIPPED.fetch_add(1, Ordering::SeqCst) + 1;
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED (skip {n} of this run): {name}: {why}"
    );
}

/// Skip (visibly, see [`skip`]) unless loop devices are usable.
macro_rules! require_loop_devices {
    () => {
        if let Some(why) = crate::support::cannot_use_loop_devices() {
            crate::support::skip(&why);
            return;
        }
    };
}
pub(crate) use require_loop_devices;

/// Where `program` is on PATH, if it is.
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// Skip (visibly, see [`skip`]) unless `program` is on PATH, naming its
/// Debian package.
macro_rules! require_program {
    ($program:expr, $package:expr) => {
        if crate::support::which($program).is_none() {
            crate::support::skip(&format!("{} is not installed (Debian package {})", $program, $package));
            return;
        }
    };
}
pub(crate) use require_program;

/// A loop device over a file, detached by name on drop.
pub struct LoopDevice {
    pub path: PathBuf,
}

impl LoopDevice {
    pub fn attach(file: &Path, sector_size: Option<u32>) -> Self {
        Self::attach_with(file, sector_size, 0)
    }

    /// Attached at byte `offset` of `file` (`losetup --offset`).
    pub fn attach_with(file: &Path, sector_size: Option<u32>, offset: u64) -> Self {
        let mut cmd = Command::new("losetup");
        cmd.arg("--find").arg("--show");
        if let Some(s) = sector_size {
            cmd.arg("--sector-size").arg(s.to_string());
        }
        if offset > 0 {
            cmd.arg("--offset").arg(offset.to_string());
        }
        let out = cmd.arg(file).output().expect("losetup runs");
        assert!(
            out.status.success(),
            "losetup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        LoopDevice { path }
    }

    pub fn as_str(&self) -> &str {
        self.path.to_str().unwrap()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
    }
}

/// A filesystem mounted on a temporary directory, unmounted by name on drop.
pub struct Mounted {
    pub dir: PathBuf,
}

impl Mounted {
    pub fn ext4(dev: &Path, dir: &Path) -> Self {
        let mkfs = Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(dev)
            .output()
            .expect("mkfs.ext4 runs");
        assert!(
            mkfs.status.success(),
            "mkfs.ext4: {}",
            String::from_utf8_lossy(&mkfs.stderr)
        );
        std::fs::create_dir_all(dir).unwrap();
        let m = Command::new("mount").arg(dev).arg(dir).output().expect("mount runs");
        assert!(m.status.success(), "mount: {}", String::from_utf8_lossy(&m.stderr));
        Mounted { dir: dir.to_path_buf() }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// This machine's host name, as run documents record it.
pub fn hostname() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}

/// A child's output, line by line as it comes, read on a thread of its own.
pub fn lines_of(out: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Take lines until one contains `what`; panics with the lines taken when
/// none has within `within`.
pub fn wait_for_line(lines: &std::sync::mpsc::Receiver<String>, what: &str, within: std::time::Duration) {
    let until = std::time::Instant::now() + within;
    let mut seen = Vec::new();
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(l) if l.contains(what) => return,
            Ok(l) => seen.push(l),
            Err(_) => break,
        }
    }
    panic!("no line with {what:?} within {within:?}; saw:\n{}", seen.join("\n"));
}
