//! The HTML report: one self-contained file with the plots of the run,
//! rendered by a real browser (Debian's chromium, headless) to PNG with no
//! console errors, its plots and axis labels counted in the DOM the browser
//! built.

use std::path::Path;
use std::process::Command;

use crate::support::flashlab;

/// The plots a probe of sim:demo has: align, open-au, fat, scatter, and
/// bench's throughput, latency distribution and throughput over time.
const PROBE_PLOTS: usize = 7;

fn probe_with_report(db: &Path, html: &Path) {
    let out = flashlab()
        .args(["probe", "sim:demo", "--html"])
        .arg(html)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn the_report_is_self_contained_and_has_every_plot_with_labelled_axes() {
    let dir = tempfile::tempdir().unwrap();
    let (db, html) = (dir.path().join("r.sqlite"), dir.path().join("probe.html"));
    probe_with_report(&db, &html);
    let text = std::fs::read_to_string(&html).unwrap();
    assert_eq!(text.matches("<svg class=\"plot\"").count(), PROBE_PLOTS, "plots");
    assert_eq!(
        text.matches("class=\"axis-label\"").count(),
        2 * PROBE_PLOTS,
        "two labelled axes each"
    );
    for unit in ["(MB/s)", "(µs)", "(bytes, log scale)", "(MiB)"] {
        assert!(text.contains(unit), "an axis in {unit}");
    }
    // Nothing fetched: no src or href, no stylesheet or script from elsewhere.
    assert!(!text.contains(" src=") && !text.contains(" href="), "self-contained");
    assert!(text.contains("prefers-color-scheme: dark") && text.contains("@media print"));
    // A comparison of the stored probe with a second run.
    let out = flashlab()
        .args([
            "bench",
            "sim:kingston-sa04g",
            "--preset",
            "quick",
            "--runtime",
            "1s",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let both = dir.path().join("both.html");
    let out = flashlab()
        .args(["report", "1", "2", "-o"])
        .arg(&both)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&both).unwrap();
    assert!(text.contains("Side by side"));
    // Without -o: a name from the ids in the current directory, said
    // (`report 1` refused).
    let out = flashlab()
        .current_dir(dir.path())
        .args(["report", "2", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Said as a whole path, to open from anywhere.
    let whole = dir.path().join("flashlab-report-2.html");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("report written to {}", whole.display())
    );
    assert!(dir.path().join("flashlab-report-2.html").is_file());
    assert_eq!(
        text.matches("<svg class=\"plot\"").count(),
        PROBE_PLOTS + 3,
        "the probe's and the bench's"
    );
}

#[test]
fn a_real_browser_renders_the_report_without_errors() {
    let Some(browser) = chromium() else {
        crate::support::skip("no chromium on this machine (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (db, html) = (dir.path().join("r.sqlite"), dir.path().join("probe.html"));
    probe_with_report(&db, &html);
    let url = format!("file://{}", html.display());
    let png = dir.path().join("probe.png");
    let profile = dir.path().join("chrome-profile");
    let common = |c: &mut Command| {
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--enable-logging=stderr", "--v=0"]);
    };
    let mut shot = Command::new(browser);
    common(&mut shot);
    let out = shot
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,5000")
        .arg(&url)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{log}");
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    assert!(bytes.len() > 20_000, "more than a blank page: {} bytes", bytes.len());
    let mut dom = Command::new(browser);
    common(&mut dom);
    let out = dom.arg("--dump-dom").arg(&url).output().unwrap();
    assert!(out.status.success());
    let log = log + &String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        dom.matches("<svg class=\"plot\"").count(),
        PROBE_PLOTS,
        "plots in the browser's DOM"
    );
    for label in [
        "extra read time (µs)",
        "write speed (MB/s)",
        "read time (µs)",
        "throughput (MB/s)",
        "share of requests (%)",
        "device time (s)",
        "latency (log scale)",
        "typical write (",
    ] {
        assert!(dom.contains(label), "axis label {label:?} in the DOM");
    }
}
