//! flashlab's own real-device path against cards whose truth is known: a
//! loop device served by `flashlab emulate` is recognised as a card by
//! what the emulation publishes about itself, and measured from timing
//! alone: the card the emulation names is for people, never for the
//! measuring side.

use std::path::Path;

use super::{Emu, Load, cannot_emulate, flashlab_in, timed};
use crate::support::require_loop_devices;

/// `align DEV --json` through the real path: the erase block (checked:
/// claimed as sure only where it is the card's 1 MiB, and unsure only
/// where the machine was busy) and how identification named the device
/// (the run's device name, "NAME, SIZE (TRANSPORT)").
fn align(dir: &Path, dev: &str, what: &str) -> String {
    let load = Load::start();
    let out = flashlab_in(dir)
        .args(["align", dev, "--json", "--no-store"])
        .output()
        .unwrap();
    let v = crate::support::document(&out, 0, "align");
    let a = &v["align"];
    // What the verdict rested on, for a CI log: the evidence and each
    // row's boundary, diff and spread in µs.
    let rows: Vec<String> = a["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let us = |k: &str| r[k].as_f64().unwrap() / 1e3;
            format!(
                "{}:{:.1}±{:.1}",
                r["boundary_bytes"],
                us("diff_ns"),
                us("diff_spread_ns")
            )
        })
        .collect();
    let why = format!(
        "{what}: {} at {}, {} rows {}",
        a["erase_size_bytes"],
        a["confidence"],
        a["evidence"],
        rows.join(" ")
    );
    if a["confidence"].as_f64().unwrap() >= 0.9 {
        assert_eq!(a["erase_size_bytes"].as_u64(), Some(1 << 20), "{why}");
    } else {
        // Stalls past a third of the reads leave align unsure, as they
        // should; a quiet machine has none.
        let (busy, how) = load.busy();
        assert!(busy, "unsure on a quiet machine ({how}): {why}");
        println!("unsure on a busy machine ({how}): {why}");
    }
    let name = v["device"]["name"].as_str().unwrap();
    name.rsplit_once(", ").map_or(name, |(n, _)| n).to_string()
}

/// The emulation's state record, rewritten with `spec` (None: hidden).
fn publish(dir: &Path, spec: Option<&str>) {
    let rec = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("the emulation's record");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    v["spec"] = spec.map_or(serde_json::Value::Null, Into::into);
    std::fs::write(&rec, v.to_string()).unwrap();
}

/// An emulated card is a card (its erase block is claimed, confidently and
/// rightly, wherever the machine is quiet enough to claim it), named as
/// the emulation published it. The guard that the
/// measuring side never reads the spec: with the record saying 8 MiB AUs,
/// or nothing at all, the verdict is still the card's 1 MiB. A plain loop
/// device over a file with the same bytes stays "no flash behaviour".
#[test]
fn an_emulated_card_is_measured_from_timing_never_from_its_spec() {
    let _alone = timed();
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let spec = "sim:demo,capacity=64M,au_size=1M,jitter=0";
    let emu = Emu::start(dir.path(), spec, &[]);
    let model = align(dir.path(), &emu.device, "as published");
    assert_eq!(model, format!("emulated card ({spec}, time scale 1)"));
    let lie = "sim:demo,capacity=64M,au_size=8M,page_size=64K";
    publish(dir.path(), Some(lie));
    let model = align(dir.path(), &emu.device, "the lie is not measured");
    assert_eq!(model, format!("emulated card ({lie}, time scale 1)"));
    publish(dir.path(), None);
    let model = align(dir.path(), &emu.device, "not named");
    assert_eq!(model, "emulated card (card not named, time scale 1)");
    // The same bytes in a file behind an ordinary loop device: not a card.
    let copy = dir.path().join("copy.img");
    std::fs::write(&copy, std::fs::read(&emu.device).unwrap()).unwrap();
    let plain = crate::support::LoopDevice::attach(&copy, None);
    let out = flashlab_in(dir.path())
        .args(["align", plain.as_str(), "--json", "--no-store"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["align"]["not_flash"].is_string(), "{v}");
    assert!(!v["device"]["name"].as_str().unwrap().contains("emulated"), "{v}");
}

/// The summary's verdicts of a probe document: (what, value, confidence).
fn verdicts(v: &serde_json::Value) -> Vec<(&'static str, Option<u64>, f64)> {
    let s = &v["summary"];
    let one = |what, o: &serde_json::Value, key: &str| (what, o[key].as_u64(), o["confidence"].as_f64().unwrap_or(0.0));
    vec![
        one("erase block", &s["erase_block"], "bytes"),
        one("page", &s["page"], "bytes"),
        one("open AUs in order", &s["open_aus"]["linear"], "count"),
        one("open AUs random", &s["open_aus"]["random"], "count"),
        one("FAT area", &s["fat_area"], "aus"),
    ]
}

/// What a writing verdict rested on, in a few lines (a CI log shows the
/// tail): open-au's notes and each sweep's counts with their MB/s, fat's
/// method, limit and rows.
fn how_fat_and_open_au_went(v: &serde_json::Value) -> String {
    let sweep = |order: &str| {
        let runs = v["open_au"][order]["runs"].as_array().cloned().unwrap_or_default();
        let counts: Vec<String> = runs
            .iter()
            .map(|r| {
                let mark = if r["collapsed"] == true { "x" } else { "" };
                let again = if r["confirmation"] == true { "'" } else { "" };
                let mbs = r["levels"][0]["bytes_per_sec"].as_f64().unwrap_or(0.0) / 1e6;
                format!("{}{again}{mark}@{mbs:.1}", r["open_aus"])
            })
            .collect();
        format!("{order} {} ({})", counts.join(" "), v["open_au"][order]["not_claimed"])
    };
    let f = &v["fat"];
    let rows: Vec<String> = f["aus"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| format!("{}:{}", r["au"], r["merging"]))
        .collect();
    format!(
        "open-au: {}; {}; notes {}\nfat: {} limit {} area {} at {}, rows {}, notes {}",
        sweep("linear"),
        sweep("random"),
        v["open_au"]["notes"],
        f["method"],
        f["random_aus"],
        f["fat_area_aus"],
        f["confidence"],
        rows.join(" "),
        f["notes"]
    )
}

/// probe through the real path (O_DIRECT through /dev/loopN, the loop
/// queue, FUSE, the emulation's clock at time scale 1, where the card's
/// small-read timing was measured faithful) gives the verdicts of probe on
/// the same spec in process, with both engines: each confident and right,
/// or (a writing step on a loaded machine) not claimed.
#[test]
fn probe_through_the_real_path_gives_the_models_verdicts() {
    let _alone = timed();
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let spec = "sim:demo,capacity=256M,au_size=1M";
    let model = crate::support::json(&["probe", spec, "--no-store"]);
    let want = verdicts(&model);
    let truth = [1 << 20, 16 << 10, 6, 24, 2];
    for ((what, value, conf), t) in want.iter().zip(truth) {
        assert_eq!((*value, *conf >= 0.9), (Some(t), true), "the model's {what}");
    }
    for engine in ["psync", "io_uring"] {
        // A fresh card for each, as the model's starts fresh.
        let emu = Emu::start(dir.path(), spec, &[]);
        let load = Load::start();
        let out = flashlab_in(dir.path())
            .args([
                "probe",
                &emu.device,
                "--write",
                "--no-store",
                "--json",
                "--engine",
                engine,
            ])
            .output()
            .unwrap();
        let real = crate::support::document(&out, 0, engine);
        // Each verdict confident and the model's, or not claimed: a loaded
        // machine's stalls may leave a step unsure (open-au judges a
        // collapse twice and claims nothing where the two disagree; align
        // claims nothing past a third of its reads stalled), but never
        // confident and wrong.
        let got = verdicts(&real);
        let mut unsure = Vec::new();
        for ((what, value, conf), (_, model_value, _)) in got.iter().zip(&want) {
            if *conf >= 0.9 {
                assert_eq!(
                    value,
                    model_value,
                    "{engine}: {what} confident and wrong: {}\n{}\n{}",
                    real["summary"],
                    how_fat_and_open_au_went(&real),
                    load.busy().1
                );
            } else {
                unsure.push(*what);
            }
        }
        // On a quiet machine every verdict is claimed: a path that only
        // ever says "unsure" fails here.
        let (busy, how) = load.busy();
        assert!(
            busy || unsure.is_empty(),
            "{engine}: {how}, yet not claimed: {unsure:?}"
        );
        if !unsure.is_empty() {
            println!("{engine}: not claimed through the real path: {}", unsure.join(", "));
        }
        let (m, r) = (
            model["device_time_s"].as_f64().unwrap(),
            real["device_time_s"].as_f64().unwrap(),
        );
        println!("{engine}: {r:.1} device-s through the real path, {m:.1} in process");
        drop(emu);
    }
}
