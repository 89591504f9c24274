//! bench on real parts: a loop device over a file, each engine, reads at
//! queue depth 1 and 32 and preserved writes. The figures must agree with
//! each other, and the file must come back byte for byte.

use crate::support::{LoopDevice, cannot_use_loop_devices, json, random_file};

fn check(v: &serde_json::Value, want_tests: usize) {
    let tests = v["bench"]["tests"].as_array().unwrap();
    assert_eq!(tests.len(), want_tests, "{v}");
    for t in tests {
        let (iops, bps, bs) = (
            t["iops"].as_f64().unwrap(),
            t["bytes_per_sec"].as_f64().unwrap(),
            t["block_size"].as_f64().unwrap(),
        );
        assert!(iops > 0.0, "{t}");
        assert!(
            (bps - iops * bs).abs() <= 1e-6 * bps,
            "bytes_per_sec = iops x block_size: {t}"
        );
        let l = &t["latency_ns"];
        let p: Vec<u64> = ["p50", "p90", "p99", "p999", "max"]
            .iter()
            .map(|k| l[k].as_u64().unwrap())
            .collect();
        assert!(p.windows(2).all(|w| w[0] <= w[1]), "percentiles in order: {l}");
        assert!(p[0] > 0, "{l}");
        assert!(!t["timeline"].as_array().unwrap().is_empty(), "{t}");
    }
}

#[test]
fn bench_on_a_loop_device_with_each_engine_gives_back_every_byte() {
    if let Some(why) = cannot_use_loop_devices() {
        crate::support::skip(&why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = random_file(dir.path(), "b.img", 64 << 20, 7);
    let before = crate::support::sha(&file);
    let dev = LoopDevice::attach(&file, None);
    let jdir = tempfile::tempdir().unwrap();
    let j = jdir.path().to_str().unwrap();
    for engine in ["psync", "io_uring"] {
        let reads = json(&[
            "bench",
            dev.as_str(),
            "--rw",
            "randread",
            "--qd",
            "1,32",
            "--size",
            "4M",
            "--engine",
            engine,
        ]);
        check(&reads, 2);
        let writes = json(&[
            "bench",
            dev.as_str(),
            "--rw",
            "randwrite",
            "--bs",
            "4k,64k",
            "--size",
            "2M",
            "--area",
            "8M+16M",
            "--engine",
            engine,
            "--write",
            "--journal-dir",
            j,
        ]);
        check(&writes, 2);
        // Every preset runs, shortened (quick 4 tests, cdm 8, a1 3,
        // sdspeed 1, full all 16).
        for (preset, n) in [("quick", 4), ("cdm", 8), ("a1", 3), ("sdspeed", 1), ("full", 16)] {
            let v = json(&[
                "bench",
                dev.as_str(),
                "--preset",
                preset,
                "--runtime",
                "100ms",
                "--area",
                "8M+16M",
                "--engine",
                engine,
                "--write",
                "--journal-dir",
                j,
            ]);
            check(&v, n);
            // A loop device is not a card: its speeds, no SD class.
            assert!(v["bench"]["classes"].as_object().unwrap().is_empty(), "{preset}: {v}");
            assert!(v["bench"]["not_flash"].as_str().unwrap().contains("loop"), "{preset}");
        }
    }
    drop(dev);
    let after = crate::support::sha(&file);
    assert_eq!(before, after, "bench's writes were put back");
}

#[test]
fn bench_refuses_what_cannot_run() {
    for args in [
        &["bench", "--bs", "1000"][..],
        &["bench", "--rw", "read", "--size", "0"][..],
        &["bench", "--area", "40G+1M"][..],
        // More pieces of 4 MiB than a writing test may declare (it listed
        // 2^28 of them, gigabytes, before writing anything).
        &["bench", "sim:demo,capacity=1P", "--area", "0+1P", "--rw", "randwrite"][..],
    ] {
        let out = crate::support::flashlab().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("error:") && err.contains("hint:"), "{args:?}: {err}");
    }
}

/// Class verdicts only where their figures were measured, and each verdict
/// is what its figures say.
#[test]
fn class_verdicts_follow_their_figures_on_every_preset() {
    for preset in ["quick", "cdm", "a1", "sdspeed", "full"] {
        let v = json(&["bench", "sim:demo", "--preset", preset, "--runtime", "300ms"]);
        let classes = v["bench"]["classes"].as_object().unwrap();
        // Every preset writes sequentially: the speed classes are decided.
        assert!(classes.contains_key("C10"), "{preset}: {classes:?}");
        // A1 needs random 4 KiB reads and writes, which sdspeed has not.
        assert_eq!(classes.contains_key("A1"), preset != "sdspeed", "{preset}: {classes:?}");
        for (name, f) in v["bench"]["class_figures"].as_object().unwrap() {
            assert_eq!(f["label"], format!("{name}-style"));
            let met = f["figures"]
                .as_array()
                .unwrap()
                .iter()
                .all(|x| x["measured"].as_f64().unwrap() >= x["needed"].as_f64().unwrap());
            assert_eq!(classes[name].as_bool(), Some(met), "{preset} {name}: {f}");
        }
    }
}
