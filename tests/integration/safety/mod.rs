//! The data-safety write path through the binary: consent and refusals,
//! crashes at every step and at random with each engine (inside `restore`
//! too), damaged journals, aliases and concurrent runs, identity, bad input.
//! Every test ends by comparing the target's SHA-256 with what it held
//! before: zero bytes lost, and no "verified" that was not.

mod aliases;
mod consent;
mod crash;
mod damage;
mod edges;
mod identity;
mod in_process;
mod outputs;
mod registry;

use std::path::{Path, PathBuf};
use std::process::Command;

pub use crate::support::sha;

/// The crash tests set `FLASHLAB_CRASH_AT` and its kin, which only a build
/// with the `crash-hooks` feature reads: without it they would fail far from
/// the reason. One test says it plainly.
#[test]
fn the_suite_is_built_with_its_crash_hooks() {
    #[cfg(not(feature = "crash-hooks"))]
    panic!(
        "the crash tests need the crash-hooks feature: cargo test --locked --release --features crash-hooks (README)"
    );
    #[cfg(feature = "crash-hooks")]
    {
        // And the hook fires: the run is killed at its first step.
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("t.img");
        std::fs::write(&img, vec![7u8; 4 << 20]).unwrap();
        let _forget = ForgetJournals(dir.path().join("j"));
        let out = Command::new(env!("CARGO_BIN_EXE_flashlab"))
            .envs(crate::support::test_env())
            .env("FLASHLAB_JOURNAL_DIR", dir.path().join("j"))
            .env("FLASHLAB_CRASH_AT", "1")
            .args([
                "debug",
                "write-pattern",
                img.to_str().unwrap(),
                "--range",
                "0+64K",
                "--write",
            ])
            .output()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGKILL),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

pub fn journals(dir: &Path) -> Vec<PathBuf> {
    let mut j: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    j.sort();
    j
}

/// Journals a test leaves pending on purpose: their entries in the register
/// of pending journals (/var/tmp/flashlab/pending) are removed when the
/// test ends, also when it fails, so they do not outlive its temporary
/// directory as journals out of reach.
pub struct ForgetJournals(pub PathBuf);

impl Drop for ForgetJournals {
    fn drop(&mut self) {
        let r = flashlab::safety::registry::Registry::system();
        for j in journals(&self.0) {
            r.unregister(&j);
        }
    }
}

/// [`ForgetJournals`] for one journal by its path: its register entry
/// goes when the test ends, failed or not, wherever the test moved it.
pub struct ForgetJournal(pub PathBuf);

impl Drop for ForgetJournal {
    fn drop(&mut self) {
        flashlab::safety::registry::Registry::system().unregister(&self.0);
    }
}

/// Put `bytes` back on a device or file (between trials).
pub fn reset(dev: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(dev).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
}

/// The ranges most tests declare: two, so a crash can fall between them.
pub const RANGES: [&str; 4] = ["--range", "1M+2M", "--range", "9M+1M"];

/// `flashlab debug write-pattern DEV --write --journal-dir JDIR EXTRA... RANGES`:
/// the preserving writer the tests drive (1 MiB writes, queue depth 1).
pub fn write_pattern(dev: &str, jdir: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flashlab"));
    c.envs(crate::support::test_env());
    c.args(["debug", "write-pattern", dev, "--write", "--journal-dir"])
        .arg(jdir)
        .args(extra)
        .args(RANGES);
    c
}

/// `flashlab restore WHAT --journal-dir JDIR EXTRA...`.
pub fn restore(what: &Path, jdir: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flashlab"));
    c.envs(crate::support::test_env());
    c.arg("restore").arg(what).arg("--journal-dir").arg(jdir).args(extra);
    c
}

/// Run write-pattern (one pass over RANGES) and SIGKILL it at step `at`;
/// returns the journal it left. Steps of one pass: the 1M..3M records (1,
/// 2), their commit (3: records synced; 4: slot A written), its two writes
/// (5, 6); the 9M..10M record (7), commit (8, 9), write (10); the restore
/// batch (11); the journal's deletion (12).
pub fn crashed_journal(dev: &str, jdir: &Path, at: u32) -> PathBuf {
    let out = write_pattern(dev, jdir, &[])
        .env("FLASHLAB_CRASH_AT", at.to_string())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "killed at step {at}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut j = journals(jdir);
    assert_eq!(j.len(), 1, "one journal left");
    j.remove(0)
}

/// Journal layout, for cutting and flipping: where the commit slots start
/// and where each record starts (plus the end).
pub struct Layout {
    pub slots: usize,
    pub records: Vec<usize>,
}

pub fn layout(bytes: &[u8]) -> Layout {
    let magic = b"flashlab-journal v2\n".len();
    let n = u32::from_le_bytes(bytes[magic..magic + 4].try_into().unwrap()) as usize;
    let slots = magic + 4 + n + 4;
    let mut records = Vec::new();
    let mut at = slots + 64;
    while at + 32 <= bytes.len() {
        records.push(at);
        let len = u32::from_le_bytes(bytes[at + 16..at + 20].try_into().unwrap()) as usize;
        at += 32 + len;
    }
    records.push(at.min(bytes.len()));
    Layout { slots, records }
}

/// xorshift for seeded trials.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The seed of a seeded test: FLASHLAB_FAULT_SEED or the process id, printed.
pub fn seed(what: &str) -> u64 {
    let seed: u64 = std::env::var("FLASHLAB_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64);
    println!("{what}: seed {seed} (FLASHLAB_FAULT_SEED={seed} reruns it)");
    seed
}
