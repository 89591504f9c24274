//! `flashlab life` against the truth: real workloads (fio, mkfs and a file
//! copy, SQLite in WAL mode on ext4) on an emulated card, recorded with
//! `flashlab trace` at the loop device, then replayed by `life --start
//! fresh` on the same card. The flash bytes and erases life predicts are
//! the ones the emulation counted (the issue asks within 1%; the replay
//! sees the requests the card saw, in their order, so they are equal).
//! The capture also reads as blkparse's text, and blkparse's own totals
//! agree with what life counts.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use flashlab::import::trace::{Trace, TraceOp, TraceOptions, TraceRecord};

use super::{Emu, cannot_emulate, flashlab_in, run, timed};
use crate::support::{Mounted, require_loop_devices, require_program};

/// 1 MiB AUs, 2 open in order and 1 at random, an 8-AU FAT area with a
/// fifth spare: merges, switch merges and collection all happen.
const CARD: &str = "sim:demo,capacity=256M,au_size=1M,open_aus_linear=2,open_aus_random=1,fat_area_aus=8,spare=0.2";

/// The kernel's block tracer is the machine's: one capture at a time.
static TRACER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A running `flashlab trace`, interrupted on drop.
struct Capture(Option<Child>);

impl Capture {
    fn start(dir: &Path, device: &str) -> Capture {
        let prefix = dir.join("cap");
        let child = flashlab_in(dir)
            .args(["trace", device, "--json", "-o"])
            .arg(&prefix)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut c = Capture(Some(child));
        // The files appear once the kernel traces the device.
        let until = Instant::now() + Duration::from_secs(10);
        while !dir.join("cap.blktrace.0").exists() {
            if let Some(status) = c.0.as_mut().unwrap().try_wait().unwrap() {
                let mut err = String::new();
                c.0.take().unwrap().stderr.unwrap().read_to_string(&mut err).unwrap();
                panic!("flashlab trace ended ({status}): {err}");
            }
            assert!(Instant::now() < until, "flashlab trace did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        c
    }

    /// Ctrl-C: its document.
    fn stop(mut self) -> serde_json::Value {
        let child = self.0.take().unwrap();
        // SAFETY: kill(2) on our own child's pid, which has not been reaped.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        crate::support::document(&out, 0, "the emulation")
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            // SAFETY: as in `stop`.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let _ = child.wait();
        }
    }
}

fn fio(device: &str, job: &[&str]) {
    let mut args = vec!["--name=j", "--direct=1", "--randseed=7", "--output=/dev/null"];
    let file = format!("--filename={device}");
    args.push(&file);
    args.extend(job);
    run("fio", &args);
}

fn sqlite_wal(device: &str, dir: &Path) {
    let m = Mounted::ext4(Path::new(device), &dir.join("mnt"));
    let db = rusqlite::Connection::open(m.dir.join("t.db")).unwrap();
    db.pragma_update(None, "journal_mode", "WAL").unwrap();
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)", [])
        .unwrap();
    for k in 0..400 {
        db.execute("INSERT INTO t (k, v) VALUES (?1, zeroblob(512))", [k])
            .unwrap();
    }
    drop(db);
    drop(m);
}

fn mkfs_and_copy(device: &str, dir: &Path) {
    let m = Mounted::ext4(Path::new(device), &dir.join("mnt"));
    let data: Vec<u8> = (0..24u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(m.dir.join("copy.bin"), &data).unwrap();
    run("sync", &[]);
    drop(m);
}

/// How one try at a workload went.
struct Replayed {
    /// (flash bytes, erases) the emulation counted.
    counted: (u64, u64),
    /// (flash bytes, erases) life predicted from the capture.
    predicted: (u64, u64),
    /// Requests the emulation took after a later one.
    overtaken: u64,
    /// Where the card's own record first differs from the capture, in the
    /// writes and discards: what the kernel issued is not what the card
    /// took, in order.
    changed: Option<String>,
}

/// One workload, captured at the loop device and recorded by the card
/// (`emulate --record`).
fn replayed(name: &str, work: &dyn Fn(&str, &Path)) -> Replayed {
    let _alone = timed();
    let _one = TRACER.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("card.blktrace.0");
    let record_arg = record.to_str().unwrap();
    let mut emu = Emu::start_json(dir.path(), CARD, &["--time-scale", "0.05", "--record", record_arg]);
    let capture = Capture::start(dir.path(), &emu.device);
    work(&emu.device, dir.path());
    let captured = capture.stop();
    emu.stop();
    let mut rest = String::new();
    emu._stdout.read_to_string(&mut rest).unwrap();
    let stopped: serde_json::Value = serde_json::from_str(rest.trim()).unwrap_or_else(|e| panic!("{rest:?}: {e}"));
    let work_done = &stopped["stopped"]["flash_work"];
    let counted = (
        work_done["flash_bytes_written"].as_u64().unwrap(),
        work_done["erases"].as_u64().unwrap(),
    );
    assert_eq!(
        stopped["stopped"]["recorded"].as_u64(),
        Some(requests(&record).len() as u64),
        "{name}: the summary counts the record's requests"
    );
    let capture = dir.path().join("cap.blktrace.0");
    let l = life_of(name, dir.path(), &capture);
    let predicted = flash(&l);
    assert_eq!(l["trace"]["writes"], captured["writes"], "{name}");
    assert_eq!(l["trace"]["discards"], captured["discards"], "{name}");
    // The card's own record replays to exactly what it counted: the
    // emulation and life run one model.
    assert_eq!(
        flash(&life_of(name, dir.path(), &record)),
        counted,
        "{name}: life on the card's record"
    );
    let changed = first_change(&changes(&requests(&capture)), &changes(&requests(&record)));
    let overtaken = stopped["stopped"]["overtaken"].as_u64().unwrap();
    eprintln!(
        "{name}: counted {counted:?}, predicted {predicted:?}, {overtaken} requests taken out of the kernel's \
         order; the card's record {}",
        changed.as_deref().unwrap_or("matches the capture")
    );
    Replayed {
        counted,
        predicted,
        overtaken,
        changed,
    }
}

/// `life --start fresh` on `trace`: its document's `life`.
fn life_of(name: &str, dir: &Path, trace: &Path) -> serde_json::Value {
    let out = flashlab_in(dir)
        .args(["life", "--json", "--no-store", "--start", "fresh", "--card", CARD])
        .arg(trace)
        .output()
        .unwrap();
    let life = crate::support::document(&out, 0, name);
    life["life"].clone()
}

/// A life document's (flash bytes, erases).
fn flash(l: &serde_json::Value) -> (u64, u64) {
    (
        l["flash_bytes_written"].as_u64().unwrap(),
        l["erases"].as_u64().unwrap(),
    )
}

/// The requests of a blktrace capture (every CPU's file), in time order.
fn requests(first: &Path) -> Vec<TraceRecord> {
    let mut t = Trace::open(first, TraceOptions::default()).unwrap();
    std::iter::from_fn(|| t.next_record().unwrap()).collect()
}

/// The writes and discards, each run of pieces that continue one another
/// as one: the loop device and FUSE split a request into pieces (and a
/// zeroing into the card's largest write) without changing what it asks.
fn changes(rs: &[TraceRecord]) -> Vec<(TraceOp, u64, u64)> {
    let mut out: Vec<(TraceOp, u64, u64)> = Vec::new();
    for r in rs.iter().filter(|r| matches!(r.op, TraceOp::Write | TraceOp::Discard)) {
        match out.last_mut() {
            Some((op, at, len)) if *op == r.op && *at + *len == r.offset => *len += r.len,
            _ => out.push((r.op, r.offset, r.len)),
        }
    }
    out
}

/// Where two lists of changes first differ, in words.
fn first_change(kernel: &[(TraceOp, u64, u64)], card: &[(TraceOp, u64, u64)]) -> Option<String> {
    let at = kernel.iter().zip(card).position(|(k, c)| k != c);
    match at {
        Some(i) => Some(format!(
            "differs at change {i} of {}: the kernel issued {:?}, the card took {:?}",
            kernel.len(),
            kernel[i],
            card[i]
        )),
        None if kernel.len() != card.len() => Some(format!("has {} changes, the capture {}", card.len(), kernel.len())),
        None => None,
    }
}

fn within_1_pct(name: &str, counted: (u64, u64), predicted: (u64, u64)) {
    let close = |a: u64, b: u64| a.abs_diff(b) as f64 <= 0.01 * a.max(1) as f64;
    assert!(
        close(counted.0, predicted.0) && close(counted.1, predicted.1),
        "{name}: the emulation counted {counted:?} (flash bytes, erases), life predicted {predicted:?}"
    );
    assert!(counted.0 > 0 && counted.1 > 0, "{name}: the workload wore the card");
}

/// A workload's name and what it does to the device.
type Workload<'a> = (&'a str, &'a dyn Fn(&str, &Path));

/// Tries at a workload: the emulation may take a request out of the
/// kernel's order on a loaded machine (its FUSE threads late past their
/// patience, `emulate::order`, counted as `overtaken`), or the path from
/// the loop device to the card may (the card's record then differs from
/// the capture); then the card saw another workload than the one traced,
/// and the try is made again.
const TRIES: usize = 3;

#[test]
fn life_predicts_what_the_emulated_card_counted() {
    require_emulation!();
    require_program!("fio", "fio");
    require_program!("mkfs.ext4", "e2fsprogs");
    let random = |d: &str, _: &Path| fio(d, &["--rw=randwrite", "--bs=4k", "--size=12M", "--offset=4M"]);
    let sequential = |d: &str, _: &Path| fio(d, &["--rw=write", "--bs=128k", "--size=24M", "--offset=32M"]);
    let mixed = |d: &str, _: &Path| {
        fio(
            d,
            &["--rw=randrw", "--bs=16k", "--size=16M", "--offset=96M", "--fsync=8"],
        );
        run("blkdiscard", &["-o", "96M", "-l", "8M", d]);
    };
    let workloads: [Workload<'_>; 5] = [
        ("fio random 4 KiB", &random),
        ("fio sequential", &sequential),
        ("fio mixed, fsync, discard", &mixed),
        ("mkfs.ext4 and a file copy", &mkfs_and_copy),
        ("SQLite WAL inserts on ext4", &sqlite_wal),
    ];
    for (name, work) in workloads {
        let mut why = Vec::new();
        let whole = loop {
            let r = replayed(name, work);
            if r.overtaken == 0 && r.changed.is_none() {
                break r;
            }
            why.push(format!(
                "{} overtaken, the record {}",
                r.overtaken,
                r.changed.as_deref().unwrap_or("matches")
            ));
            assert!(
                why.len() < TRIES,
                "{name}: the card never took what the kernel issued, in its order: {}",
                why.join("; ")
            );
        };
        within_1_pct(name, whole.counted, whole.predicted);
    }
}

/// blkparse reads the capture too, and its own totals are what life
/// counts: "Write Dispatches" holds the writes and the discards,
/// "Read Dispatches" the reads and the flushes.
#[test]
fn blkparse_reads_the_capture_and_agrees_with_life() {
    require_emulation!();
    require_program!("fio", "fio");
    require_program!("blkparse", "blktrace");
    let _alone = timed();
    let _one = TRACER.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut emu = Emu::start(dir.path(), CARD, &["--time-scale", "0.05"]);
    let capture = Capture::start(dir.path(), &emu.device);
    fio(&emu.device, &["--rw=randrw", "--bs=8k", "--size=4M", "--fsync=16"]);
    run("blkdiscard", &["-o", "8M", "-l", "1M", &emu.device]);
    let captured = capture.stop();
    emu.stop();
    let text = run("blkparse", &["-i", "cap", "-D", dir.path().to_str().unwrap()]).stdout;
    let text = String::from_utf8(text).unwrap();
    std::fs::write(dir.path().join("cap.txt"), &text).unwrap();
    // "Total (cap):" then " Reads Queued: ... Write Dispatches: N, K KiB".
    let total = &text[text.find("Total (").expect("blkparse's totals")..];
    let figure = |label: &str| -> (u64, u64) {
        let at = total.find(label).unwrap_or_else(|| panic!("no {label}")) + label.len();
        let nums: Vec<u64> = total[at..]
            .split(|c: char| !c.is_ascii_digit())
            .filter(|t| !t.is_empty())
            .take(2)
            .map(|t| t.parse().unwrap())
            .collect();
        (nums[0], nums[1])
    };
    let (write_dispatches, write_kib) = figure("Write Dispatches:");
    let (read_dispatches, read_kib) = figure("Read Dispatches:");
    let life_of = |file: &str| -> serde_json::Value {
        let out = flashlab_in(dir.path())
            .args(["life", "--json", "--no-store", "--start", "fresh", "--card", CARD])
            .arg(dir.path().join(file))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["life"].clone()
    };
    let binary = life_of("cap.blktrace.0");
    let t = &binary["trace"];
    let n = |k: &str| t[k].as_u64().unwrap();
    assert!(
        n("writes") > 0 && n("reads") > 0 && n("discards") == 1 && n("flushes") > 0,
        "{t}"
    );
    assert_eq!(write_dispatches, n("writes") + n("discards"), "{t}");
    assert_eq!(
        write_kib,
        (n("host_bytes_written") + n("host_bytes_discarded")) / 1024,
        "{t}"
    );
    assert_eq!(read_dispatches, n("reads") + n("flushes"), "{t}");
    assert_eq!(read_kib, n("host_bytes_read") / 1024, "{t}");
    assert_eq!(captured["writes"], t["writes"]);
    // The text gives the same trace and the same answer.
    let parsed = life_of("cap.txt");
    assert_eq!(parsed["trace"]["format"], "blkparse");
    for k in [
        "requests",
        "writes",
        "reads",
        "discards",
        "flushes",
        "host_bytes_written",
    ] {
        assert_eq!(parsed["trace"][k], t[k], "{k}");
    }
    assert_eq!(parsed["flash_bytes_written"], binary["flash_bytes_written"]);
    assert_eq!(parsed["erases"], binary["erases"]);
}

/// A capture killed with SIGKILL (no drop runs) leaves the kernel's tracer
/// set to `blk`; the next capture puts it back from the record the first
/// one wrote, says so, and traces; its own end leaves the tracer `nop`.
#[test]
fn a_capture_killed_leaves_the_tracer_to_the_next() {
    require_loop_devices!();
    let _tracer = TRACER.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let file = crate::support::random_file(dir.path(), "disk.img", 16 << 20, 3);
    let disk = crate::support::LoopDevice::attach(&file, None);
    let tracer = || std::fs::read_to_string("/sys/kernel/tracing/current_tracer").map(|t| t.trim().to_string());
    let first = dir.path().join("first");
    std::fs::create_dir(&first).unwrap();
    let mut killed = Capture::start(&first, disk.as_str());
    let child = killed.0.take().unwrap();
    let how = tracer();
    // SAFETY: kill(2) on our own child's pid, which has not been reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(libc::SIGKILL)
    );
    if how.as_deref().ok() != Some("blk") {
        // blktrace's relay files traced it: no tracer to leave behind.
        return crate::support::skip(&format!("the capture did not use ftrace's blk tracer ({how:?})"));
    }
    assert_eq!(tracer().unwrap(), "blk", "the killed capture left it");
    let second = dir.path().join("second");
    std::fs::create_dir(&second).unwrap();
    // Before the record, this capture was refused: "the kernel's tracer
    // is busy".
    let doc = Capture::start(&second, disk.as_str()).stop();
    assert_eq!(doc["how"], "ftrace's blk tracer", "{doc}");
    assert_eq!(tracer().unwrap(), "nop", "put back at the second's end");
    assert!(
        !std::path::Path::new("/run/flashlab-trace.json").exists(),
        "no record is left"
    );
}
