//! `flashlab emulate`: a simulated card as a real block device, checked with
//! real programs (dd, mkfs.ext4, mount, fsck) as root. Each test keeps its
//! emulations' state in its own directory (FLASHLAB_EMULATE_DIR), so a
//! cleanup only ever sees what that test made; every emulation is stopped
//! (SIGTERM, then SIGKILL and `--cleanup`) when its guard drops, also when
//! the test fails.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{require_loop_devices, sha};

/// Skip (visibly) unless loop devices and /dev/fuse are usable.
fn cannot_emulate() -> Option<String> {
    crate::support::cannot_use_loop_devices()
        .or_else(|| (!Path::new("/dev/fuse").exists()).then(|| "no /dev/fuse".to_string()))
}

macro_rules! require_emulation {
    () => {
        require_loop_devices!();
        if let Some(why) = cannot_emulate() {
            crate::support::skip(&why);
            return;
        }
    };
}

/// Emulations whose timing a test judges (`real_path`), and the heavy
/// workloads that would load the machine under them (`life`), run one at
/// a time: a probe through the real path read its pages as unsure while
/// five fio and mkfs workloads ran beside it.
static TIMED: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn timed() -> std::sync::MutexGuard<'static, ()> {
    TIMED.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running `flashlab emulate`, stopped on drop.
struct Emu {
    child: Option<Child>,
    /// Kept open: emulate writes its profile after the device line, and a
    /// closed pipe would turn that into exit 1.
    _stdout: BufReader<std::process::ChildStdout>,
    device: String,
    dir: PathBuf,
}

fn flashlab_in(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flashlab"));
    c.env("FLASHLAB_EMULATE_DIR", dir).envs(crate::support::test_env());
    c
}

impl Emu {
    /// Start `emulate SPEC ARGS...` and wait for the device path it prints.
    fn start(dir: &Path, spec: &str, args: &[&str]) -> Emu {
        let mut child = flashlab_in(dir)
            .arg("emulate")
            .arg(spec)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("flashlab runs");
        let mut first = String::new();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        stdout.read_line(&mut first).expect("reads stdout");
        let device = first.trim().to_string();
        let mut emu = Emu {
            _stdout: stdout,
            child: Some(child),
            device,
            dir: dir.to_path_buf(),
        };
        if !emu.device.starts_with("/dev/loop") {
            let err = emu.stop_with(libc::SIGTERM).1;
            panic!("emulate printed {first:?} instead of a device: {err}");
        }
        emu
    }

    /// Start `emulate SPEC --json ARGS...` and read its ready document; the
    /// stopped one follows on `_stdout` when it stops.
    fn start_json(dir: &Path, spec: &str, args: &[&str]) -> Emu {
        let mut child = flashlab_in(dir)
            .args(["emulate", spec, "--json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("flashlab runs");
        // The guard first: a failure below still stops the emulation.
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut emu = Emu {
            child: Some(child),
            _stdout: stdout,
            device: String::new(),
            dir: dir.to_path_buf(),
        };
        let ready: serde_json::Value = serde_json::Deserializer::from_reader(&mut emu._stdout)
            .into_iter()
            .next()
            .expect("the ready document")
            .unwrap();
        emu.device = ready["emulate"]["device"].as_str().unwrap().to_string();
        emu
    }

    /// Send `sig` and wait (10 s at most): exit code and stderr.
    fn stop_with(&mut self, sig: i32) -> (Option<i32>, String) {
        let Some(mut child) = self.child.take() else {
            return (None, String::new());
        };
        // SAFETY: kill(2) on our own child's pid, which has not been reaped.
        unsafe { libc::kill(child.id() as i32, sig) };
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if child.try_wait().ok().flatten().is_none() {
            let _ = child.kill();
        }
        let out = child.wait_with_output().expect("waits");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// Send `sig` and give the emulation 300 ms to act on it.
    fn signal(&self, sig: i32) {
        let child = self.child.as_ref().expect("running");
        // SAFETY: kill(2) on our own child's pid, which has not been reaped.
        unsafe { libc::kill(child.id() as i32, sig) };
        std::thread::sleep(Duration::from_millis(300));
    }

    /// Send `sig` and say whether the emulation is still running 500 ms later.
    fn survives(&mut self, sig: i32) -> bool {
        let child = self.child.as_mut().expect("running");
        // SAFETY: kill(2) on our own child's pid, which has not been reaped.
        unsafe { libc::kill(child.id() as i32, sig) };
        std::thread::sleep(Duration::from_millis(500));
        child.try_wait().expect("waits").is_none()
    }

    /// SIGTERM, exit 0; stderr with its line breaks made spaces (it is
    /// wrapped at 80 columns).
    fn stop(&mut self) -> String {
        let (code, err) = self.stop_with(libc::SIGTERM);
        assert_eq!(code, Some(0), "emulate ends cleanly on SIGTERM: {err}");
        err.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl Drop for Emu {
    fn drop(&mut self) {
        if self.child.is_some() {
            let (code, _) = self.stop_with(libc::SIGTERM);
            if code != Some(0) {
                let _ = flashlab_in(&self.dir).args(["emulate", "--cleanup"]).output();
            }
        }
    }
}

fn run(cmd: &str, args: &[&str]) -> std::process::Output {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Whether `dev` is attached to a file under `dir` (another test may
/// attach the same loop number as soon as it is free).
fn attached(dev: &str, dir: &Path) -> bool {
    let name = Path::new(dev).file_name().unwrap().to_str().unwrap();
    std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
        .is_ok_and(|b| b.trim_end().starts_with(dir.to_str().unwrap()))
}

fn random_bytes(path: &Path, len: usize, seed: u64) {
    let mut x = seed | 1;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(path, data).unwrap();
}

#[test]
fn dd_in_and_out_gives_back_the_same_bytes_and_the_stop_leaves_nothing() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let mut emu = Emu::start(dir.path(), "sim:demo,capacity=256M", &["--time-scale", "0.1"]);
    let data = dir.path().join("in.bin");
    random_bytes(&data, 16 << 20, 7);
    let dev = emu.device.clone();
    run(
        "dd",
        &[
            &format!("if={}", data.display()),
            &format!("of={dev}"),
            "bs=1M",
            "seek=8",
            "oflag=direct",
            "conv=fsync",
        ],
    );
    let back = dir.path().join("out.bin");
    run(
        "dd",
        &[
            &format!("if={dev}"),
            &format!("of={}", back.display()),
            "bs=1M",
            "skip=8",
            "count=16",
            "iflag=direct",
        ],
    );
    assert_eq!(sha(&back), sha(&data), "what was written reads back");
    let err = emu.stop();
    assert!(err.contains("writes (16 MiB)"), "the card saw the 16 MiB: {err}");
    assert!(err.contains(&format!("detached {dev}")), "{err}");
    assert!(!attached(&dev, dir.path()), "{dev} is detached");
    // The state file (PID.json) and the mount point (PID.mnt) are gone.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json" || x == "mnt"))
        .collect();
    assert!(left.is_empty(), "no state left: {left:?}");
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(dir.path().to_str().unwrap()), "unmounted");
}

#[test]
fn ext4_on_the_card_survives_fsck_and_a_restart_with_a_backing_file() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("card.img");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let spec = "sim:demo,capacity=256M";
    let fast = ["--time-scale", "0.05", "--backing", backing.to_str().unwrap()];
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    for i in 0..4 {
        random_bytes(&files.join(format!("f{i}")), (1 << 20) + i * 4097, i as u64 + 3);
    }
    {
        let mut emu = Emu::start(dir.path(), spec, &fast);
        let dev = emu.device.clone();
        run("mkfs.ext4", &["-q", "-F", &dev]);
        run("mount", &[&dev, mnt.to_str().unwrap()]);
        let copied = Command::new("cp").arg("-r").arg(&files).arg(&mnt).status().unwrap();
        // Mounted: a SIGTERM only warns (stopping would fail ext4's I/O).
        let survived = emu.survives(libc::SIGTERM);
        run("umount", &[mnt.to_str().unwrap()]);
        assert!(survived, "a SIGTERM while the card is mounted does not stop it");
        assert!(copied.success());
        let fsck = Command::new("fsck.ext4").args(["-n", "-f", &dev]).output().unwrap();
        assert_eq!(
            fsck.status.code(),
            Some(0),
            "fsck finds the filesystem clean: {}",
            String::from_utf8_lossy(&fsck.stdout)
        );
        let err = emu.stop();
        assert!(err.contains("is still in use (mounted?)"), "{err}");
    }
    // A new emulation over the same backing file: the files are there.
    let emu = Emu::start(dir.path(), spec, &fast);
    run("mount", &["-o", "ro", &emu.device, mnt.to_str().unwrap()]);
    let same = (0..4).all(|i| {
        let name = format!("f{i}");
        sha(&mnt.join("files").join(&name)) == sha(&files.join(&name))
    });
    run("umount", &[mnt.to_str().unwrap()]);
    assert!(same, "every file reads back after the restart");
}

#[test]
fn two_emulations_at_once_keep_their_own_bytes() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let a = Emu::start(dir.path(), "sim:demo,capacity=128M", &["--time-scale", "0.1"]);
    let b = Emu::start(dir.path(), "sim:kingston-sa04g,capacity=128M", &["--time-scale", "0.1"]);
    assert_ne!(a.device, b.device);
    for (i, e) in [&a, &b].iter().enumerate() {
        let data = dir.path().join(format!("in{i}"));
        random_bytes(&data, 2 << 20, 11 + i as u64);
        run(
            "dd",
            &[
                &format!("if={}", data.display()),
                &format!("of={}", e.device),
                "bs=1M",
                "oflag=direct",
            ],
        );
    }
    for (i, e) in [&a, &b].iter().enumerate() {
        let back = dir.path().join(format!("out{i}"));
        run(
            "dd",
            &[
                &format!("if={}", e.device),
                &format!("of={}", back.display()),
                "bs=1M",
                "count=2",
                "iflag=direct",
            ],
        );
        assert_eq!(sha(&back), sha(&dir.path().join(format!("in{i}"))), "card {i}");
    }
}

#[test]
fn a_killed_emulation_is_cleaned_up_and_only_it() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let mut killed = Emu::start(dir.path(), "sim:demo,capacity=128M", &["--time-scale", "0.1"]);
    let alive = Emu::start(dir.path(), "sim:demo,capacity=128M", &["--time-scale", "0.1"]);
    let dead_dev = killed.device.clone();
    let (code, _) = killed.stop_with(libc::SIGKILL);
    assert_eq!(code, None, "killed by the signal");
    assert!(attached(&dead_dev, dir.path()), "SIGKILL leaves the loop device behind");
    let out = flashlab_in(dir.path()).args(["emulate", "--cleanup"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("detached {dead_dev}")), "{err}");
    assert!(!err.contains(&alive.device), "the live emulation is not touched: {err}");
    assert!(!attached(&dead_dev, dir.path()), "{dead_dev} detached");
    // The live one still serves.
    run(
        "dd",
        &[
            &format!("if={}", alive.device),
            "of=/dev/null",
            "bs=1M",
            "count=1",
            "iflag=direct",
        ],
    );
    let again = flashlab_in(dir.path()).args(["emulate", "--cleanup"]).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing to clean up"));
}

/// The state letter of /proc/PID/stat (R, S, D, T, Z...).
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// Run `cmd`, failing the test (not hanging it) after `secs`.
fn bounded(mut cmd: Command, secs: u64) -> std::process::Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("{cmd:?} did not end within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// What a stopped emulation and a reader hung on it leave, ended by name
/// whatever the test did: the daemon SIGKILLed (a stopped process dies
/// too, and its FUSE connection with it, failing the hung reads), the
/// reader reaped, then `--cleanup`, and the loop device and the mount
/// removed by name if anything is left.
struct Rescue {
    pid: u32,
    device: String,
    dir: PathBuf,
    reader: Option<Child>,
}

impl Drop for Rescue {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid (the emulation), which has
        // not been reaped: the Emu guard reaps it, and drops after this one.
        unsafe { libc::kill(self.pid as i32, libc::SIGKILL) };
        if let Some(mut r) = self.reader.take() {
            let _ = r.kill();
            let _ = r.wait();
        }
        let _ = flashlab_in(&self.dir).args(["emulate", "--cleanup"]).output();
        if attached(&self.device, &self.dir) {
            let _ = Command::new("losetup").args(["-d", &self.device]).status();
        }
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        for point in mounts.lines().filter_map(|l| l.split(' ').nth(4)) {
            if point.starts_with(self.dir.to_str().unwrap()) {
                let _ = Command::new("umount").args(["-l", point]).status();
            }
        }
    }
}

/// A stopped emulation hangs every read of its device in uninterruptible
/// sleep. `--cleanup` says so and names the way out; a flashlab command on
/// the device refuses instead of hanging; `--cleanup --force PID` ends it:
/// the hung read fails at once, the loop device and the mount are gone.
#[test]
fn a_stopped_emulation_is_said_and_ended_on_the_users_word() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let emu = Emu::start(dir.path(), "sim:demo,capacity=128M", &["--time-scale", "0.1"]);
    let pid = emu.child.as_ref().expect("running").id();
    let dev = emu.device.clone();
    let mut rescue = Rescue {
        pid,
        device: dev.clone(),
        dir: dir.path().to_path_buf(),
        reader: None,
    };
    // SAFETY: kill(2) on our own child's pid, which has not been reaped.
    unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
    let until = Instant::now() + Duration::from_secs(5);
    while proc_state(pid) != Some('T') {
        assert!(Instant::now() < until, "the emulation stops: {:?}", proc_state(pid));
        std::thread::sleep(Duration::from_millis(20));
    }
    // A read past the calibration's block, which no cache holds.
    let reader = Command::new("dd")
        .args([
            &format!("if={dev}"),
            "of=/dev/null",
            "bs=4k",
            "count=1",
            "skip=4000",
            "iflag=direct",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reader_pid = reader.id();
    rescue.reader = Some(reader);
    let until = Instant::now() + Duration::from_secs(5);
    while proc_state(reader_pid) != Some('D') {
        assert!(Instant::now() < until, "the read hangs: {:?}", proc_state(reader_pid));
        std::thread::sleep(Duration::from_millis(20));
    }

    // Each command below in the emulation's directory, bounded: its exit
    // code and stderr.
    let in_dir = |args: &[&str], secs| {
        let mut c = flashlab_in(dir.path());
        c.args(args);
        let out = bounded(c, secs);
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = in_dir(&["emulate", "--cleanup"], 20);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!("error: emulation {pid} ({dev}) is stopped")),
        "{err}"
    );
    assert!(
        err.contains(&format!("`sudo flashlab emulate --cleanup --force {pid}`")),
        "{err}"
    );
    assert!(attached(&dev, dir.path()), "a live emulation is left alone");

    // flashlab itself on the device: refused, not hung.
    let (code, err) = in_dir(&["align", &dev, "--no-store"], 20);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("is stopped") && err.contains(&format!("--force {pid}")),
        "{err}"
    );

    // Not an emulation: refused, nothing touched.
    let (code, err) = in_dir(
        &["emulate", "--cleanup", "--force", &std::process::id().to_string()],
        20,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("is not a flashlab emulation") && err.contains("hint:"),
        "{err}"
    );
    assert!(attached(&dev, dir.path()));

    let (code, err) = in_dir(&["emulate", "--cleanup", "--force", &pid.to_string()], 30);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&format!("ended: emulation {pid}: aborted its FUSE connection")),
        "{err}"
    );
    assert!(
        err.contains("killed it") && err.contains(&format!("detached {dev}")),
        "{err}"
    );

    // The hung read returns, with an error.
    let reader = rescue.reader.as_mut().unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = reader.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < until, "the hung read returns within 5 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut dd_err = String::new();
    std::io::Read::read_to_string(&mut reader.stderr.take().unwrap(), &mut dd_err).unwrap();
    assert!(
        !status.success() && dd_err.contains("Input/output error"),
        "{status}: {dd_err}"
    );

    let until = Instant::now() + Duration::from_secs(5);
    while attached(&dev, dir.path()) {
        assert!(Instant::now() < until, "{dev} is detached");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(dir.path().to_str().unwrap()), "unmounted");
    assert_eq!(
        proc_state(pid),
        Some('Z'),
        "the daemon was killed (our child: a zombie until reaped)"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json" || x == "mnt"))
        .collect();
    assert!(left.is_empty(), "no state left: {left:?}");
    let again = flashlab_in(dir.path()).args(["emulate", "--cleanup"]).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing to clean up"));
    drop(rescue);
    drop(emu);
}

#[test]
fn emulate_refuses_what_cannot_work_with_a_hint() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], hint: &str| {
        let out = flashlab_in(dir.path()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("error:") && err.contains(hint), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    };
    refused(&["emulate", "sim:nonesuch"], "sim list");
    refused(&["emulate", "sim:demo", "--time-scale", "0"], "time scale");
    refused(&["emulate", "sim:demo", "--backing", "/dev/null"], "regular file");
    refused(&["emulate", "sim:demo", "--record", "/dev/null"], "regular file");
    let record = dir.path().join("card.blktrace.0");
    let record_arg = record.to_str().unwrap();
    refused(
        &[
            "emulate",
            "sim:demo,real_capacity=1G",
            "--backing",
            "x.img",
            "--record",
            record_arg,
        ],
        "--backing",
    );
    assert!(!record.exists(), "a refused emulation records nothing");
    // The record never empties the card's own data, under any name: the
    // same path, a hard link, or a backing file not made yet.
    let backing = dir.path().join("card.img");
    std::fs::write(&backing, b"the card's data").unwrap();
    let link = dir.path().join("card.link");
    std::fs::hard_link(&backing, &link).unwrap();
    let fresh = dir.path().join("new.img");
    for (card, record) in [(&backing, &backing), (&backing, &link), (&fresh, &fresh)] {
        let (card, record) = (card.to_str().unwrap(), record.to_str().unwrap());
        refused(
            &["emulate", "sim:demo", "--backing", card, "--record", record],
            "--backing file",
        );
    }
    assert_eq!(std::fs::read(&backing).unwrap(), b"the card's data");
    assert!(!fresh.exists(), "nothing made");
    refused(
        &["emulate", "sim:demo,real_capacity=1G", "--backing", "x.img"],
        "--backing",
    );
    refused(&["emulate"], "SPEC");
    // Not root: dropped to nobody with setpriv.
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_flashlab"))
        .args(["emulate", "sim:demo"])
        .env("FLASHLAB_EMULATE_DIR", dir.path())
        .env("FLASHLAB_DB", "/nonexistent/db.sqlite")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("needs root") && err.contains("hint: run it with sudo"),
        "{err}"
    );
}

/// How busy the machine was across a span: how long some task waited
/// for a CPU (the kernel's pressure stall information, /proc/pressure/cpu
/// `some total`) against the span's wall time. A timing test may accept
/// "unsure" from flashlab only where the machine was busy: on a quiet one
/// a path that only ever says "unsure" must fail.
pub(crate) struct Load {
    waited_before: f64,
    started: Instant,
}

impl Load {
    pub(crate) fn start() -> Load {
        Load {
            waited_before: cpu_waited_s(),
            started: Instant::now(),
        }
    }

    /// Whether tasks waited for a CPU a fiftieth of the span or more
    /// (never where the kernel keeps no pressure figures), and the
    /// figures. An idle machine here: 6 ms of 10 s (0.06%). In CI beside
    /// the other tests: 1.8 s of 19 s (9.5%), where flashbench's rows of
    /// an emulated card were too noisy for the import to be sure of
    /// either limit (`third_party.rs`), under the tenth this was.
    pub(crate) fn busy(&self) -> (bool, String) {
        let waited = cpu_waited_s() - self.waited_before;
        let wall = self.started.elapsed().as_secs_f64();
        (
            waited >= 0.02 * wall,
            format!("tasks waited for a CPU {waited:.1} s of {wall:.0} s"),
        )
    }
}

/// Seconds some task has waited for a CPU since boot, in µs in the file
/// (NaN where the kernel keeps no pressure figures: no span is then busy).
fn cpu_waited_s() -> f64 {
    let text = std::fs::read_to_string("/proc/pressure/cpu").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("some "))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("total=")))
        .and_then(|t| t.parse::<f64>().ok())
        .map_or(f64::NAN, |us| us / 1e6)
}

mod batch;
mod flash_work;
mod life;
mod live;
mod real_path;
mod third_party;
mod timing;
