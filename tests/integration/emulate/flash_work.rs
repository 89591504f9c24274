//! The flash work an emulated card reports is the in-process model's,
//! request for request: the same writes through `/dev/loopN` (O_DIRECT, one
//! at a time, so the kernel neither merges nor splits them) and straight
//! into a `SimTarget` count the same pages, copies and erases.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;

use flashlab::sim::SimTarget;
use flashlab::targets::{AlignedBuf, Request, Target};

use super::{Emu, cannot_emulate};
use crate::support::require_loop_devices;

/// 1 MiB AUs, 2 open in order and 1 at random, and an 8-AU FAT area with
/// a fifth of its raw flash spare, so merges, switch merges and garbage
/// collection all happen.
const CARD: &str = "sim:demo,capacity=128M,au_size=1M,open_aus_linear=2,open_aus_random=1,fat_area_aus=8,spare=0.2";

/// The writes: (offset, length). In order through two AUs, 4 KiB at
/// scattered places over 40 AUs (past the open limit), and 16 KiB at
/// scattered places of the FAT area, 12 MiB of them (past its spare).
fn writes() -> Vec<(u64, u32)> {
    let mut w: Vec<(u64, u32)> = (0..16).map(|i| ((20 << 20) + i * (128 << 10), 128 << 10)).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..300 {
        w.push(((40 << 20) + next() % (40 << 8) * 4096, 4096));
    }
    for _ in 0..768 {
        w.push((next() % (8 << 6) * 16384, 16384));
    }
    w
}

/// The counts a summary line says, in its order: host pages, read-modify-
/// written, copied by merges, by garbage collection, erases.
fn said(summary: &str) -> Vec<u64> {
    let at = summary.find("flash work: ").expect("the summary has its flash work");
    let line = &summary[at..];
    let line = &line[..line.find(" rated").expect("one line")];
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .filter_map(|t| t.parse().ok())
        .collect()
}

#[test]
fn an_emulated_cards_flash_work_is_the_models_for_the_same_writes() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    // With --json: the ready document first, the stopped one at the end.
    let mut emu = Emu::start_json(dir.path(), CARD, &[]);
    let mut dev = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&emu.device)
        .unwrap();
    let mut buf = AlignedBuf::new(128 << 10);
    buf.as_mut_slice().fill(0x5a);
    let mut model = SimTarget::from_spec(CARD).unwrap();
    for (off, len) in writes() {
        dev.seek(SeekFrom::Start(off)).unwrap();
        dev.write_all(&buf.as_slice()[..len as usize]).unwrap();
        model.run(&[Request::write(off, len, 0)], 1, &mut buf).unwrap();
    }
    drop(dev);
    let summary = emu.stop();
    let mut rest = String::new();
    emu._stdout.read_to_string(&mut rest).unwrap();
    let stopped: serde_json::Value = serde_json::from_str(rest.trim()).unwrap_or_else(|e| panic!("{rest:?}: {e}"));
    let m = model.flash_report();
    assert_eq!(stopped["stopped"]["flash_work"], serde_json::to_value(&m).unwrap());
    let w = &m.work;
    assert!(
        w.merges > 0 && w.switch_merges > 0 && w.collections > 0,
        "every cause happens: {w:?}"
    );
    // "N pages of 16 KiB ...": the page size's 16 is the second number.
    let want = vec![
        w.host_pages,
        16,
        w.rmw_pages,
        w.merge_copies,
        w.gc_copies,
        w.erases,
        m.blocks_erased,
        m.blocks,
        m.most_erases,
        m.rated_pe_cycles,
    ];
    assert_eq!(said(&summary), want, "{summary}");
}
