//! A journal damaged after the crash that left it: cut at every record
//! boundary and inside every record, header bytes flipped, records reordered
//! or duplicated. Each is refused with the region named, nothing is written,
//! and the journal is kept; repaired, it restores.

use std::path::Path;

use super::{crashed_journal, journals, layout, restore, sha};
use crate::support::{LoopDevice, random_file, require_loop_devices};

/// Restore `journal` as it is now: must be refused (exit 2) naming what is
/// wrong, with the device and the journal unchanged.
fn refused(dev: &Path, journal: &Path, jdir: &Path, damage: &str, expect: &str) {
    let device_before = std::fs::read(dev).unwrap();
    let journal_before = std::fs::read(journal).unwrap();
    let out = restore(journal, jdir, &[]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{damage}: {err}");
    assert!(err.contains(expect) && err.contains("hint:"), "{damage}: {err}");
    if err.contains("corrupted") {
        // The set-aside command names this journal, to paste as it is.
        let aside = format!("`flashlab restore --set-aside {}`", journal.display());
        assert!(err.replace('\n', " ").contains(&aside), "{damage}: {err}");
        assert_eq!(err.matches("nothing was restored").count(), 1, "{damage}: {err}");
    }
    assert!(
        std::fs::read(dev).unwrap() == device_before,
        "{damage}: nothing written"
    );
    assert_eq!(
        std::fs::read(journal).unwrap(),
        journal_before,
        "{damage}: journal kept"
    );
}

#[test]
fn a_damaged_journal_is_refused_naming_the_region_and_kept() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 17);
    let dev = LoopDevice::attach(&f, None);
    let before = sha(&dev.path);
    let jdir = dir.path().join("j");
    // Killed at step 10, just before writing 9M..10M: three records
    // committed (1M, 2M, 9M), and 1M..3M on the device holds the pattern.
    let j = crashed_journal(dev.as_str(), &jdir, 10);
    let whole = std::fs::read(&j).unwrap();
    let l = layout(&whole);
    assert_eq!(l.records.len(), 4, "three records and the end");
    let mut cases = 0;
    // Cut at every record boundary (the end of a committed record) and
    // inside every record: its head, its data, its last byte.
    for k in 0..3 {
        let (s, e) = (l.records[k], l.records[k + 1]);
        for at in [s, s + 1, s + 31, s + 32, s + 33, s + 32 + 4096, e - 1] {
            std::fs::write(&j, &whole[..at]).unwrap();
            refused(&dev.path, &j, &jdir, &format!("cut at {at}"), "corrupted");
            cases += 1;
        }
    }
    // Cut inside the commit slots and the header.
    for at in [l.slots + 40, l.slots + 5, l.slots - 2, 30, 3] {
        std::fs::write(&j, &whole[..at]).unwrap();
        refused(&dev.path, &j, &jdir, &format!("cut at {at}"), "corrupted");
        cases += 1;
    }
    // Every byte of the magic and the header, flipped one at a time (the
    // target path among them: a changed path once sent a journal to another
    // device).
    for i in 0..l.slots {
        let mut b = whole.clone();
        b[i] ^= 0x20;
        std::fs::write(&j, &b).unwrap();
        refused(&dev.path, &j, &jdir, &format!("header byte {i} flipped"), "");
        cases += 1;
    }
    // Records reordered, and one duplicated over another.
    let rec = |k: usize| whole[l.records[k]..l.records[k + 1]].to_vec();
    let head = whole[..l.records[0]].to_vec();
    for (what, body) in [
        ("records 0 and 1 swapped", [rec(1), rec(0), rec(2)].concat()),
        ("record 0 twice", [rec(0), rec(0), rec(2)].concat()),
        ("record 2 twice", [rec(0), rec(1), rec(2), rec(2)].concat()),
        ("record 1 dropped", [rec(0), rec(2)].concat()),
    ] {
        std::fs::write(&j, [head.clone(), body].concat()).unwrap();
        refused(&dev.path, &j, &jdir, what, "corrupted");
        cases += 1;
    }
    // A data byte flipped: the target bytes are named.
    let mut b = whole.clone();
    b[l.records[2] + 100] ^= 1;
    std::fs::write(&j, &b).unwrap();
    refused(&dev.path, &j, &jdir, "data flipped", "bytes 9437184..10485760");
    cases += 1;
    // Repaired, it restores every byte.
    std::fs::write(&j, &whole).unwrap();
    let out = restore(&j, &jdir, &[]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(sha(&dev.path), before);
    assert!(journals(&jdir).is_empty());
    println!("{cases} damaged journals refused, nothing written, each kept");
}
