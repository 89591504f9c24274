//! The fleet store through the binary against a real PostgreSQL server,
//! which the test starts itself (Debian's postgresql: initdb into a
//! temporary directory, run as an unprivileged user, stopped on drop):
//! three stations upload at once, one is killed mid-upload and retried,
//! one is cut off and uploads later, and the store ends with every run
//! exactly once.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::skip;

/// Debian's server binaries (`/usr/lib/postgresql/N/bin`), newest first.
fn server_bin() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists() && b.join("postgres").exists())
        .collect();
    found.sort();
    found.pop()
}

/// A PostgreSQL server of the test's own, on a free port of 127.0.0.1.
struct Postgres {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Postgres {
    /// Start one, or say why it cannot (not root, no server installed).
    fn start() -> Result<Postgres, String> {
        let bin = server_bin().ok_or("Debian's postgresql is not installed")?;
        if !rustix::process::geteuid().is_root() {
            return Err("not root (the server runs as nobody)".into());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let data = dir.path().join("data");
        let nobody = |p: &Path| {
            std::os::unix::fs::chown(p, Some(65534), Some(65534)).map_err(|e| format!("chown {}: {e}", p.display()))
        };
        nobody(dir.path())?;
        let as_nobody = |program: &Path| {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(program);
            c
        };
        let init = as_nobody(&bin.join("initdb"))
            .args(["-D", data.to_str().unwrap(), "-U", "lab", "--auth=trust", "-E", "UTF8"])
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !init.status.success() {
            return Err(format!("initdb: {}", String::from_utf8_lossy(&init.stderr)));
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let child = as_nobody(&bin.join("postgres"))
            .args(["-D", data.to_str().unwrap(), "-p", &port.to_string(), "-k"])
            .arg(dir.path())
            .args(["-c", "listen_addresses=127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("postgres: {e}"))?;
        let pg = Postgres {
            child,
            url: format!("postgres://lab@127.0.0.1:{port}/postgres"),
            _dir: dir,
        };
        let until = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > until {
                return Err("the server did not listen within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Listening comes before accepting logins; a list answers once it does.
        while !station(Path::new("/nonexistent"))
            .args(["results", "list", "--db", &pg.url])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            if Instant::now() > until {
                return Err("the server did not take a login within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(pg)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT: the server's fast shutdown.
        // SAFETY: kill(2) on our own child's pid, which has not been reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until && self.child.try_wait().ok().flatten().is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// flashlab as a station whose local store lives under `home`.
fn station(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flashlab"));
    c.envs(crate::support::test_env())
        .env_remove("FLASHLAB_DB")
        .env("XDG_DATA_HOME", home);
    c
}

/// Two simulated cards, a batch's worth of runs for a station.
const CARDS: [&str; 2] = ["sim:demo", "sim:demo,capacity=1G,real_capacity=256M,fake_mode=wrap"];

#[test]
fn three_stations_upload_at_once_and_every_run_lands_once() {
    let pg = match Postgres::start() {
        Ok(pg) => pg,
        Err(why) => return skip(&why),
    };
    let dir = tempfile::tempdir().unwrap();
    let home = |s: &str| dir.path().join(s);
    let unreachable = "postgres://lab@127.0.0.1:1/postgres";
    // At once: A uploads, B is killed after its first run reached the
    // server (before it noted so), C cannot reach the server.
    let spawn = |name: &str, db: &str, crash: Option<&str>| {
        let mut c = station(&home(name));
        c.arg("batch").args(CARDS).args(["--db", db, "--json"]);
        if let Some(at) = crash {
            c.env("FLASHLAB_CRASH_AT", at);
        }
        c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    };
    let a = spawn("a", &pg.url, None);
    let b = spawn("b", &pg.url, Some("fleet upload#1"));
    let c = spawn("c", unreachable, None);
    let a = crate::support::document(&a.wait_with_output().unwrap(), 0, "the run");
    let b = b.wait_with_output().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&b.status),
        Some(libc::SIGKILL),
        "{}",
        String::from_utf8_lossy(&b.stderr)
    );
    let c = c.wait_with_output().unwrap();
    let c_err = String::from_utf8_lossy(&c.stderr).into_owned();
    let c = crate::support::document(&c, 0, "the run");
    assert!(
        c_err.contains("not uploaded") && c_err.contains(&format!("`flashlab results upload --db {unreachable}`")),
        "{c_err}"
    );
    assert!(c["warnings"].to_string().contains("not uploaded"), "{}", c["warnings"]);
    assert!(a["notes"].to_string().contains("uploaded 2 run(s)"), "{}", a["notes"]);
    let count = |url: &str| {
        let out = station(&home("reader"))
            .args(["results", "list", "--json", "--db", url])
            .output()
            .unwrap();
        crate::support::document(&out, 0, "the run")["runs"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(
        count(&pg.url),
        3,
        "A's two runs and the one B sent before it was killed"
    );
    // B retries, C comes back online: each sends what the fleet lacks.
    let upload = |name: &str| {
        let out = station(&home(name))
            .args(["results", "upload", "--json", "--db", &pg.url])
            .output()
            .unwrap();
        crate::support::document(&out, 0, "the run")["upload"].clone()
    };
    let b_up = upload("b");
    assert_eq!(
        (b_up["sent"].as_u64(), b_up["already"].as_u64()),
        (Some(2), Some(0)),
        "{b_up}"
    );
    let c_up = upload("c");
    assert_eq!(c_up["sent"], 2, "{c_up}");
    assert_eq!(count(&pg.url), 6, "every run exactly once");
    // Again, and nothing moves.
    let again = upload("a");
    assert_eq!((again["sent"].as_u64(), again["already"].as_u64()), (Some(0), Some(2)));
    assert_eq!(count(&pg.url), 6);
    // The fleet answers as the local store does: by batch, with a report.
    let id = c["batch"]["id"].as_str().unwrap();
    let out = station(&home("reader"))
        .args(["results", "list", "--json", "--batch", id, "--db", &pg.url])
        .output()
        .unwrap();
    let listed = crate::support::document(&out, 0, "the run");
    assert_eq!(listed["runs"].as_array().map(Vec::len), Some(2), "{listed}");
    let html = dir.path().join("c.html");
    let out = station(&home("reader"))
        .args(["report", "--batch", id, "--db", &pg.url, "-o", html.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&html).unwrap().contains("fake_mode=wrap"));
    let host = crate::support::hostname();
    let out = station(&home("reader"))
        .args(["results", "list", "--json", "--host", &host, "--db", &pg.url])
        .output()
        .unwrap();
    assert_eq!(
        crate::support::document(&out, 0, "the run")["runs"]
            .as_array()
            .map(Vec::len),
        Some(6)
    );
    let out = station(&home("reader"))
        .args(["results", "list", "--json", "--host", "no-such-host", "--db", &pg.url])
        .output()
        .unwrap();
    assert_eq!(
        crate::support::document(&out, 0, "the run")["runs"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    // A single run with a fleet store goes there too, kept locally first.
    let out = station(&home("d"))
        .args(["bench", "sim:demo", "--preset", "quick", "--json", "--db", &pg.url])
        .output()
        .unwrap();
    let one = crate::support::document(&out, 0, "the run");
    assert!(
        one["notes"].to_string().contains("uploaded 1 run(s)"),
        "{}",
        one["notes"]
    );
    assert_eq!(count(&pg.url), 7);
}

/// Without a fleet, upload says what it needs; an unreachable fleet is an
/// error with a hint, the local runs untouched.
#[test]
fn upload_needs_a_reachable_fleet_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("runs.sqlite");
    let out = crate::support::flashlab()
        .args(["results", "upload", "--db"])
        .arg(&local)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a fleet store"));
    let out = crate::support::flashlab()
        .args(["results", "list", "--db", "postgres://lab@127.0.0.1:1/postgres"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot connect") && err.contains("hint:"), "{err}");
    assert!(!err.contains("secret"));
}
