//! What an emulation says about its own timing: answers it could not give
//! on time, programs that wait between requests, a time scale too small to
//! be faithful, and the request sizes the card sees. Nothing here is timed
//! against a goal (a busy CI machine would fail it): each wait is made by
//! the test itself, and only its lower bound is asserted.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Emu, cannot_emulate, run};
use crate::support::require_loop_devices;

/// A page-aligned buffer for O_DIRECT.
struct Aligned(Vec<u8>, usize);

impl Aligned {
    fn new(len: usize) -> Aligned {
        let v = vec![0u8; len + 4096];
        let skew = v.as_ptr().align_offset(4096);
        Aligned(v, skew)
    }

    fn buf(&mut self, len: usize) -> &mut [u8] {
        &mut self.0[self.1..self.1 + len]
    }
}

fn open_direct(dev: &str) -> std::fs::File {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .unwrap()
}

/// The number after `before` in `text`, in ms when a unit follows
/// ("300.12 ms", "85.1 µs", "1.20 s").
fn ms_after(text: &str, before: &str) -> f64 {
    let at = text.find(before).unwrap_or_else(|| panic!("{before:?} in {text}")) + before.len();
    let mut words = text[at..].split_whitespace();
    let n: f64 = words.next().unwrap().trim_end_matches(',').parse().unwrap();
    match words.next().unwrap().trim_end_matches([',', ')', ':']) {
        "s" => n * 1e3,
        "ms" => n,
        "µs" => n / 1e3,
        "ns" => n / 1e6,
        u => panic!("unit {u:?} in {text}"),
    }
}

/// Counts in "N of M answers late", as the scripts grep it.
fn late_counts(summary: &str) -> Option<(u64, u64)> {
    let at = summary.find(" answers late")?;
    let head: Vec<&str> = summary[..at].rsplitn(4, ' ').collect();
    // head: [M, "of", N, rest...]
    Some((head[2].parse().ok()?, head[0].parse().ok()?))
}

/// Stopped (SIGSTOP) for 300 ms three times while a program reads 1 MiB at
/// a time, the emulation answers the reads in flight late and says so: how
/// many, and the latest at least as late as the stop was long.
#[test]
fn answers_held_up_by_a_stopped_emulation_are_counted_late() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let mut emu = Emu::start(dir.path(), "sim:demo,capacity=256M", &[]);
    let pid = emu.child.as_ref().unwrap().id() as i32;
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (dev, stop) = (emu.device.clone(), stop.clone());
        std::thread::spawn(move || {
            let f = open_direct(&dev);
            let mut b = Aligned::new(1 << 20);
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                f.read_exact_at(b.buf(1 << 20), (n % 32) << 20).unwrap();
                n += 1;
            }
            n
        })
    };
    /// Sends SIGCONT on drop, so a failing test never leaves the
    /// emulation stopped (its device would hang every program).
    struct Resume(i32);
    impl Drop for Resume {
        fn drop(&mut self) {
            // SAFETY: kill(2) on the emulation's pid, our unreaped child.
            unsafe { libc::kill(self.0, libc::SIGCONT) };
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        let resume = Resume(pid);
        // SAFETY: kill(2) on the emulation's pid, our unreaped child.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        std::thread::sleep(Duration::from_millis(300));
        drop(resume);
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::SeqCst);
    let reads = reader.join().unwrap();
    let err = emu.stop();
    let (late, answers) = late_counts(&err).unwrap_or_else(|| panic!("no late answers said: {err}"));
    assert!((1..=answers).contains(&late), "{err}");
    assert!(
        answers >= reads,
        "every read was answered by the model: {reads} reads, {err}"
    );
    assert!(
        ms_after(&err, "the latest") >= 150.0,
        "a 300 ms stop makes an answer at least that late: {err}"
    );
    assert!(err.contains("the machine did not keep up"), "{err}");
}

/// A program that sleeps 2 ms between its 4 KiB reads is named as the
/// waiting, not the card: the summary says how much later than the path's
/// own round trip the requests came.
#[test]
fn a_program_waiting_between_requests_is_said_to_wait() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let mut emu = Emu::start(dir.path(), "sim:demo,capacity=256M", &[]);
    let f = open_direct(&emu.device);
    let mut b = Aligned::new(4096);
    for i in 0..150u64 {
        f.read_exact_at(b.buf(4096), i * 65536).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(f);
    let err = emu.stop();
    let at = err
        .find(" requests came while none was in flight")
        .unwrap_or_else(|| panic!("{err}"));
    let n: u64 = err[..at].rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n >= 149, "{err}");
    assert!(
        ms_after(&err, "none was in flight, a mean") >= 1.5,
        "a 2 ms sleep: {err}"
    );
}

/// Under the faithful time scale the emulation warns, naming the limit;
/// at it, it does not. A 1 MiB direct write reaches a card whose host
/// takes 512 KiB a command as two 512 KiB requests.
#[test]
fn a_time_scale_too_small_warns_and_large_writes_reach_the_card_as_its_host_splits_them() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let rest = |emu: &mut Emu| {
        let mut s = String::new();
        emu._stdout.read_to_string(&mut s).unwrap();
        s
    };
    let mut fast = Emu::start(dir.path(), "sim:demo,capacity=256M", &["--time-scale", "0.01"]);
    let data = dir.path().join("in.bin");
    std::fs::write(&data, vec![7u8; 4 << 20]).unwrap();
    run(
        "dd",
        &[
            &format!("if={}", data.display()),
            &format!("of={}", fast.device),
            "bs=1M",
            "oflag=direct",
        ],
    );
    let err = fast.stop();
    let out = rest(&mut fast);
    assert!(
        out.contains("requests   up to 512 KiB each; the loop device splits larger ones"),
        "{out}"
    );
    assert!(err.contains("512 KiB x8"), "four 1 MiB writes, two pieces each: {err}");
    assert!(!err.contains("1 MiB x"), "{err}");
    let warning = out
        .lines()
        .find(|l| l.starts_with("warning: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(warning.contains("time scale 0.01 is under "), "{warning}");
    assert!(out.contains("hint: use --time-scale "), "{out}");
    let mut real = Emu::start(dir.path(), "sim:demo,capacity=256M", &[]);
    real.stop();
    let out = rest(&mut real);
    assert!(!out.contains("warning:"), "{out}");
}

/// A loop device keeps its request limit across detach and attach: CI's
/// emulation of sim:demo once passed 32 KiB pieces to a card whose host
/// takes 512 KiB, on a loop device an earlier emulation had left at
/// 32 KiB. The limit is set upward too, and the one found is put back.
#[test]
fn the_request_limit_is_raised_as_well_as_lowered_and_put_back() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("card");
    std::fs::File::create(&file).unwrap().set_len(16 << 20).unwrap();
    let lo = crate::support::LoopDevice::attach(&file, None);
    let limit = std::path::Path::new("/sys/block")
        .join(lo.path.file_name().unwrap())
        .join("queue/max_sectors_kb");
    let read = || std::fs::read_to_string(&limit).unwrap().trim().parse::<u64>().unwrap();
    let found = read();
    std::fs::write(&limit, "32\n").unwrap();
    let raised = flashlab::emulate::limit_requests(lo.as_str(), 512 << 10);
    let while_set = read();
    let restored = flashlab::emulate::restore_limit(lo.as_str(), 32);
    let after = read();
    std::fs::write(&limit, format!("{found}\n")).unwrap();
    assert_eq!(raised, (512 << 10, Some(32)));
    assert_eq!(while_set, 512);
    assert_eq!((restored, after), (Ok(()), 32));
    // Lowered too, and left alone where it already is what the card takes.
    assert_eq!(
        flashlab::emulate::limit_requests(lo.as_str(), 68 << 10),
        (68 << 10, Some(found))
    );
    assert_eq!(
        flashlab::emulate::limit_requests(lo.as_str(), 68 << 10),
        (68 << 10, None)
    );
    flashlab::emulate::restore_limit(lo.as_str(), found).unwrap();
}
