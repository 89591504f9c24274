//! The journal crash matrix in plain `cargo test`, without root or a
//! process to kill (beside the SIGKILL tests of `crash.rs`), on a regular
//! file, as redb tests its storage: a device whose writes fail after a
//! countdown (a [`FailingTarget`], redb's `FailingBackend`), and a crash at
//! every step of the write path (the crash points, unwinding in-process).
//! After each, the journal left behind restores the original bytes exactly.

use std::path::Path;

use flashlab::safety::PreservingTarget;
use flashlab::safety::identity::Identity;
use flashlab::safety::journal::{Header, Journal};
use flashlab::safety::ranges::Range;
use flashlab::safety::registry::Registry;
use flashlab::safety::signals::{Crash, crash_in_process_at};
use flashlab::targets::real::{EngineChoice, OpenOptions, RealTarget};
use flashlab::targets::{AlignedBuf, Completions, Request, Target, TargetDescription, TargetError};

use super::journals;
use crate::support::random_file;

/// A target whose writes fail once `writes_left` have been made, as a
/// device that dies mid-run does: every write after that fails too; reads
/// still work.
struct FailingTarget<'a> {
    inner: &'a mut dyn Target,
    writes_left: u64,
}

impl Target for FailingTarget<'_> {
    fn description(&self) -> &TargetDescription {
        self.inner.description()
    }

    fn run(&mut self, requests: &[Request], qd: usize, buf: &mut AlignedBuf) -> Completions {
        let writes = requests.iter().filter(|r| r.op == flashlab::targets::Op::Write).count() as u64;
        if writes > self.writes_left {
            self.writes_left = 0;
            return Err(TargetError::Io {
                op: "write",
                offset: requests[0].offset,
                source: std::io::Error::other("injected: the device failed"),
            });
        }
        self.writes_left -= writes;
        self.inner.run(requests, qd, buf)
    }

    fn device_time_ns(&self) -> u64 {
        self.inner.device_time_ns()
    }

    fn sync(&mut self) -> Result<(), TargetError> {
        self.inner.sync()
    }

    fn independent_reader(&self) -> Option<Box<dyn Target>> {
        self.inner.independent_reader()
    }
}

const RANGES: [Range; 2] = [
    Range {
        offset: 1 << 20,
        len: 2 << 20,
    },
    Range {
        offset: 9 << 20,
        len: 1 << 20,
    },
];

fn open(f: &Path) -> RealTarget {
    let o = OpenOptions {
        write: true,
        exclusive: false,
        engine: EngineChoice::Psync,
    };
    RealTarget::open(f, &f.display().to_string(), o).unwrap()
}

fn header(size: u64) -> Header {
    Header {
        target: "in-process".into(),
        size_bytes: size,
        identity: Identity::default(),
        created_unix: 0,
        created_ns: 0,
        sequence: 0,
        pid: std::process::id(),
        ranges: RANGES.iter().map(|r| [r.offset, r.len]).collect(),
        total_bytes: RANGES.iter().map(|r| r.len).sum(),
    }
}

/// Two passes of 1 MiB writes over both ranges through a preserving target
/// over `t`, then the run's own restore. Err: where it stopped.
fn workload(t: &mut dyn Target, jdir: &Path) -> Result<(), String> {
    let size = t.description().size_bytes;
    let mut p = PreservingTarget::new(
        Box::new(t),
        RANGES.to_vec(),
        Some((jdir, header(size), Registry::system())),
    )
    .map_err(|e| e.to_string())?;
    let mut buf = AlignedBuf::new(1 << 20);
    let mut failed = None;
    'passes: for pass in 0..2u8 {
        buf.as_mut_slice().fill(0xa0 + pass);
        for r in RANGES {
            for off in (r.offset..r.end()).step_by(1 << 20) {
                if let Err(e) = flashlab::targets::run_all(&mut p, &[Request::write(off, 1 << 20, 0)], 1, &mut buf) {
                    failed = Some(e.to_string());
                    break 'passes;
                }
            }
        }
    }
    let (_, outcome) = p.finish();
    match (failed, outcome) {
        (None, Ok(_)) => Ok(()),
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(e.to_string()),
    }
}

/// What `flashlab restore` does with what a run left: every journal,
/// newest first, written back through a fresh descriptor and verified.
fn recover(f: &Path, jdir: &Path) -> usize {
    let mut left: Vec<Journal> = journals(jdir).iter().map(|j| Journal::open(j).unwrap()).collect();
    left.sort_by_key(|j| std::cmp::Reverse(j.header.order()));
    let n = left.len();
    for j in left {
        let mut t = open(f);
        let mut reader = t.independent_reader().unwrap();
        j.restore(&mut t, Some(reader.as_mut())).unwrap();
        j.delete().unwrap();
    }
    n
}

#[test]
fn a_device_failing_at_any_write_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 70);
    let original = std::fs::read(&f).unwrap();
    let jdir = dir.path().join("j");
    std::fs::create_dir_all(&jdir).unwrap();
    // 6 writes a run, and the restore's: every countdown from none to all.
    let mut recovered = 0;
    for n in 0..=12u64 {
        let mut real = open(&f);
        let mut failing = FailingTarget {
            inner: &mut real,
            writes_left: n,
        };
        let r = workload(&mut failing, &jdir);
        drop(real);
        if r.is_err() {
            recovered += recover(&f, &jdir);
        }
        assert!(
            journals(&jdir).is_empty(),
            "countdown {n}: the journal is gone once restored"
        );
        assert!(std::fs::read(&f).unwrap() == original, "countdown {n}: {r:?}");
    }
    assert!(
        recovered >= 6,
        "the failures left journals to restore from ({recovered})"
    );
}

#[test]
fn a_crash_at_every_step_of_the_write_path_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 71);
    let original = std::fs::read(&f).unwrap();
    let jdir = dir.path().join("j");
    std::fs::create_dir_all(&jdir).unwrap();
    let mut steps = Vec::new();
    for k in 1..200u64 {
        crash_in_process_at(Some(k));
        let run = std::panic::catch_unwind(|| {
            let mut real = open(&f);
            workload(&mut real, &jdir)
        });
        crash_in_process_at(None);
        match run {
            Ok(r) => {
                // Past the last step: the run finished by itself.
                assert_eq!(r, Ok(()), "step {k}");
                assert!(journals(&jdir).is_empty());
                assert!(std::fs::read(&f).unwrap() == original, "the run restored");
                break;
            }
            Err(payload) => {
                let step = payload
                    .downcast::<Crash>()
                    .map(|c| c.0)
                    .unwrap_or_else(|_| "a panic".into());
                recover(&f, &jdir);
                assert!(std::fs::read(&f).unwrap() == original, "crash at step {k} ({step})");
                steps.push(step);
            }
        }
    }
    // Every kind of step was crashed at: journalling, committing, writing,
    // restoring, deleting.
    for what in [
        "journal record",
        "journal commit",
        "journal second slot",
        "device write",
        "restore batch",
        "journal delete",
    ] {
        assert!(steps.iter().any(|s| s == what), "never crashed at {what}: {steps:?}");
    }
}
