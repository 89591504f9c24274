//! Targets that are not flash: a regular file on the test's
//! filesystem and on tmpfs, and loop devices over each. No erase block,
//! page, open-AU limit or FAT area may be claimed with confidence 0.5 or more, the
//! output says why, and the data comes back.

use crate::support::{LoopDevice, cannot_use_loop_devices, json, random_file, sha};

/// Every claim a document makes at confidence 0.5 or more, by name.
fn confident_claims(v: &serde_json::Value) -> Vec<String> {
    let mut claims = Vec::new();
    let a = &v["align"];
    if a["erase_size_bytes"].is_u64() && a["confidence"].as_f64().unwrap_or(1.0) >= 0.5 {
        claims.push(format!("erase block {}", a["erase_size_bytes"]));
    }
    for order in ["linear", "random"] {
        let s = &v["open_au"][order];
        if s["max_open_aus"].is_u64() && s["confidence"].as_f64().unwrap_or(1.0) >= 0.5 {
            claims.push(format!("{order} open AUs {}", s["max_open_aus"]));
        }
    }
    let w = &v["au"];
    if w["erase_size_bytes"].is_u64() && w["confidence"].as_f64().unwrap_or(1.0) >= 0.5 {
        claims.push(format!("erase block by writes {}", w["erase_size_bytes"]));
    }
    let p = &v["page"];
    if p["page_size_bytes"].is_u64() && p["confidence"].as_f64().unwrap_or(1.0) >= 0.5 {
        claims.push(format!("page {}", p["page_size_bytes"]));
    }
    let f = &v["fat"];
    if f["fat_area_aus"].as_u64().unwrap_or(0) > 0 && f["confidence"].as_f64().unwrap_or(1.0) >= 0.5 {
        claims.push(format!("FAT area {}", f["fat_area_aus"]));
    }
    claims
}

/// Run `args` with `--json`: no claim at confidence 0.5 or more, and a
/// reason (in align, open_au or fat) naming one of `kinds`.
fn claims_nothing(args: &[&str], kinds: &[&str]) {
    let v = json(args);
    let claims = confident_claims(&v);
    assert!(claims.is_empty(), "{args:?} claims {claims:?}");
    let why = ["align", "open_au", "fat", "page", "au"]
        .iter()
        .find_map(|k| v[k]["not_flash"].as_str())
        .unwrap_or_else(|| panic!("{args:?}: no reason given"));
    assert!(kinds.iter().any(|k| why.contains(k)), "{args:?}: {why}");
}

/// A zram device this test made, removed by number when dropped.
struct Zram(u32);

impl Zram {
    /// A new 64 MiB zram device, or why there can be none here.
    fn add() -> Result<Zram, String> {
        let control = std::path::Path::new("/sys/class/zram-control/hot_add");
        if !control.exists() {
            return Err("no /sys/class/zram-control (zram module not loaded)".into());
        }
        let id: u32 = std::fs::read_to_string(control)
            .map_err(|e| format!("hot_add: {e}"))?
            .trim()
            .parse()
            .map_err(|e| format!("hot_add: {e}"))?;
        let z = Zram(id);
        std::fs::write(format!("/sys/block/zram{id}/disksize"), "64M").map_err(|e| format!("disksize: {e}"))?;
        Ok(z)
    }
}

impl Drop for Zram {
    fn drop(&mut self) {
        let _ = std::fs::write("/sys/class/zram-control/hot_remove", self.0.to_string());
    }
}

#[test]
fn a_zram_device_claims_no_flash_geometry() {
    if let Some(why) = cannot_use_loop_devices() {
        crate::support::skip(&why);
        return;
    }
    let z = match Zram::add() {
        Ok(z) => z,
        Err(why) => {
            crate::support::skip(&why);
            return;
        }
    };
    let dev = format!("/dev/zram{}", z.0);
    let jdir = tempfile::tempdir().unwrap();
    let j = jdir.path().to_str().unwrap();
    for args in [
        vec!["probe", dev.as_str()],
        vec![
            "fat",
            dev.as_str(),
            "--erase-size",
            "1M",
            "--max",
            "4",
            "--write",
            "--journal-dir",
            j,
        ],
    ] {
        claims_nothing(&args, &["RAM disk"]);
    }
}

#[test]
fn files_and_loop_devices_claim_no_flash_geometry() {
    let mut dirs = vec![tempfile::tempdir().unwrap()];
    if std::path::Path::new("/dev/shm").is_dir() {
        dirs.push(tempfile::tempdir_in("/dev/shm").unwrap());
    }
    let loops = cannot_use_loop_devices();
    if let Some(why) = &loops {
        crate::support::skip(&format!("the loop-device kinds: {why}"));
    }
    let jdir = tempfile::tempdir().unwrap();
    let j = jdir.path().to_str().unwrap();
    let mut runs = 0;
    for dir in &dirs {
        let file = random_file(dir.path(), "t.img", 128 << 20, 41);
        let dev = loops.is_none().then(|| LoopDevice::attach(&file, None));
        let mut targets = vec![file.to_str().unwrap().to_string()];
        targets.extend(dev.as_ref().map(|d| d.as_str().to_string()));
        for t in &targets {
            let before = sha(&file);
            for _ in 0..2 {
                for args in [
                    vec!["probe", t.as_str()],
                    vec!["align", t.as_str()],
                    vec![
                        "open-au",
                        t.as_str(),
                        "--erase-size",
                        "1M",
                        "--max",
                        "2",
                        "--write",
                        "--journal-dir",
                        j,
                    ],
                    vec![
                        "fat",
                        t.as_str(),
                        "--erase-size",
                        "1M",
                        "--max",
                        "4",
                        "--write",
                        "--journal-dir",
                        j,
                    ],
                    vec!["page", t.as_str(), "--write", "--journal-dir", j],
                    vec!["au", t.as_str(), "--write", "--journal-dir", j],
                ] {
                    claims_nothing(&args, &["file", "loop"]);
                    runs += 1;
                }
            }
            assert_eq!(sha(&file), before, "{t}: data changed");
        }
    }
    println!("{runs} runs on files and loop devices, no confident flash claim");
    assert!(runs >= 8);
}
