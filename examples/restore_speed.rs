//! Restore speed on simulated cards (the goal: restore at least 80% of the
//! device's sequential write speed). For each built-in profile: fill a range
//! with data, overwrite it once with 1 MiB sequential writes through the
//! preserving write path (the card's sequential write speed), then let the
//! journal put the original back. All figures are device (virtual) time.
//!
//! Run with `cargo run --release --example restore_speed`. The loop-device
//! counterpart is scripts/restore-speed.sh.

use flashlab::safety::PreservingTarget;
use flashlab::safety::identity::Identity;
use flashlab::safety::journal::{CHUNK, Header};
use flashlab::safety::ranges::Range;
use flashlab::safety::registry::Registry;
use flashlab::sim::SimTarget;
use flashlab::sim::profiles::{PROFILES, build};
use flashlab::targets::{AlignedBuf, Request, Target};

const MIB: u64 = 1 << 20;

fn main() {
    let dir = tempfile::tempdir().expect("temporary journal directory");
    println!(
        "{:<22} {:>7} {:>12} {:>12} {:>6} {:>14} {:>6}",
        "profile", "range", "seq write", "write-back", "", "verified", ""
    );
    for prof in PROFILES {
        let params = build(prof.name).expect("built-in profile");
        let mut t = SimTarget::new(&format!("sim:{}", prof.name), params);
        let cap = t.description().size_bytes;
        let len = (32 * MIB).min(cap / 4 / MIB * MIB).max(MIB);
        let range = Range {
            offset: cap / 2 / MIB * MIB,
            len,
        };
        let mut buf = AlignedBuf::new(CHUNK);
        let chunks: Vec<u64> = (0..len / MIB).map(|i| range.offset + i * MIB).collect();
        // The original contents: distinct bytes per chunk, so a wrong restore shows.
        for &off in &chunks {
            buf.as_mut_slice().fill((off / MIB) as u8);
            t.run(&[Request::write(off, MIB as u32, 0)], 1, &mut buf).expect("fill");
        }
        let header = Header {
            target: format!("sim:{}", prof.name),
            size_bytes: cap,
            identity: Identity::default(),
            created_unix: 0,
            created_ns: 0,
            sequence: 0,
            pid: std::process::id(),
            ranges: vec![[range.offset, range.len]],
            total_bytes: range.len,
        };
        let mut p = PreservingTarget::new(
            Box::new(&mut t),
            vec![range],
            Some((dir.path(), header, Registry::at(dir.path()))),
        )
        .expect("journal");
        buf.as_mut_slice().fill(0xa5);
        // The first write journals the range (reads it); the timed pass below
        // is then the device's plain sequential write.
        p.run(&[Request::write(chunks[0], MIB as u32, 0)], 1, &mut buf)
            .expect("write");
        let t0 = p.device_time_ns();
        for &off in &chunks {
            p.run(&[Request::write(off, MIB as u32, 0)], 1, &mut buf)
                .expect("write");
        }
        let seq = len as f64 * 1e9 / (p.device_time_ns() - t0) as f64;
        let (_, out) = p.finish();
        let out = out.expect("restore");
        for &off in &chunks {
            t.run(&[Request::read(off, MIB as u32, 0)], 1, &mut buf).expect("read");
            assert!(
                buf.as_slice().iter().all(|&b| b == (off / MIB) as u8),
                "restore lost data"
            );
        }
        let wb = out.restore_write_bytes_per_sec.unwrap_or(0.0);
        let ver = out.restore_bytes_per_sec.unwrap_or(0.0);
        println!(
            "{:<22} {:>4} MiB {:>7.2} MB/s {:>7.2} MB/s {:>5.0}% {:>9.2} MB/s {:>5.0}%",
            prof.name,
            len / MIB,
            seq / 1e6,
            wb / 1e6,
            100.0 * wb / seq,
            ver / 1e6,
            100.0 * ver / seq
        );
    }
}
