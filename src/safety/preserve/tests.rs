//! The preserving target's own tests.

use super::*;
use crate::sim::SimTarget;

fn fill(t: &mut dyn Target, off: u64, len: u64, byte: u8) {
    let mut buf = AlignedBuf::new(len as usize);
    buf.as_mut_slice().fill(byte);
    t.run(&[Request::write(off, len as u32, 0)], 1, &mut buf).unwrap();
}

fn read(t: &mut dyn Target, off: u64, len: u64) -> Vec<u8> {
    let mut buf = AlignedBuf::new(len as usize);
    t.run(&[Request::read(off, len as u32, 0)], 1, &mut buf).unwrap();
    buf.as_slice().to_vec()
}

#[test]
fn ranges_that_touch_stay_apart_and_a_write_may_run_across_them() {
    let mut t = SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap();
    fill(&mut t, 0, 4 << 20, 0x33);
    let r = |offset: u64| Range { offset, len: 1 << 20 };
    // Three pieces that touch, and one past a gap.
    let ranges =
        crate::safety::ranges::normalize(vec![r(0), r(1 << 20), r(2 << 20), r(4 << 20)], 64 << 20, 512).unwrap();
    assert_eq!(ranges.len(), 4, "touching pieces are not merged");
    let mut p = PreservingTarget::in_memory(Box::new(t), ranges).unwrap();
    let mut buf = AlignedBuf::new(8192);
    buf.as_mut_slice().fill(0xee);
    // Across the first two pieces: both journalled, the third not.
    p.run(&[Request::write((1 << 20) - 4096, 8192, 0)], 1, &mut buf)
        .unwrap();
    assert_eq!(p.touched, [true, true, false, false]);
    // Across the gap between the third piece and the fourth: refused.
    assert!(matches!(
        p.run(&[Request::write((3 << 20) - 4096, 8192, 0)], 1, &mut buf),
        Err(TargetError::Undeclared { .. })
    ));
    assert_eq!(
        p.touched,
        [true, true, false, false],
        "nothing journalled for a refused write"
    );
    let (mut t, out) = p.finish();
    let out = out.unwrap();
    assert_eq!(out.ranges_touched, 2);
    assert_eq!(out.bytes_restored, 2 << 20, "the two chunks the write changed");
    assert!(read(t.as_mut(), 0, 4 << 20).iter().all(|&b| b == 0x33));
}

#[test]
fn only_the_ranges_a_test_wrote_are_written_back() {
    let mut t = SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap();
    let ranges = vec![
        Range {
            offset: 1 << 20,
            len: 1 << 20,
        },
        Range {
            offset: 4 << 20,
            len: 2 << 20,
        },
    ];
    fill(&mut t, 1 << 20, 1 << 20, 0x11);
    fill(&mut t, 4 << 20, 2 << 20, 0x22);
    let dir = tempfile::tempdir().unwrap();
    let reg = tempfile::tempdir().unwrap();
    let mut p = super::journalled(Box::new(t), "sim:demo", ranges, dir.path(), reg.path());
    let mut buf = AlignedBuf::new(8192);
    buf.as_mut_slice().fill(0xee);
    p.run(&[Request::write((5 << 20) + 8192, 8192, 0)], 1, &mut buf)
        .unwrap();
    assert!(matches!(
        p.run(&[Request::read(0, 4096, 0), Request::write(3 << 20, 4096, 0)], 1, &mut buf),
        Err(TargetError::Undeclared { offset, .. }) if offset == 3 << 20
    ));
    assert!(
        p.run(&[Request::write((6 << 20) - 4096, 8192, 0)], 1, &mut buf)
            .is_err(),
        "a write straddling a range's end"
    );
    let (mut t, out) = p.finish();
    let out = out.unwrap();
    assert_eq!(out.bytes_written, 8192);
    assert_eq!(
        out.bytes_restored,
        1 << 20,
        "the untouched first range, and the chunk of the second no write changed, are not rewritten"
    );
    assert!(read(t.as_mut(), 1 << 20, 1 << 20).iter().all(|&b| b == 0x11));
    assert!(read(t.as_mut(), 4 << 20, 2 << 20).iter().all(|&b| b == 0x22));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "journal deleted");
}

/// A real target journals and verifies through an independent reader,
/// on that reader's clock: the test's clock counts the journal's reads,
/// and the outcome carries the reader's whole time, so the run counts it
/// as device time (the target handed back never saw it).
#[test]
fn the_restores_read_back_is_device_time_the_outcome_carries() {
    use crate::targets::real::{EngineChoice, OpenOptions, RealTarget};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("card.img");
    std::fs::write(&path, vec![0x33u8; 4 << 20]).unwrap();
    let opts = OpenOptions {
        write: true,
        exclusive: false,
        engine: EngineChoice::Psync,
    };
    let t = RealTarget::open(&path, "card.img", opts).unwrap();
    let ranges = vec![Range {
        offset: 1 << 20,
        len: 2 << 20,
    }];
    let journals = tempfile::tempdir().unwrap();
    let reg = tempfile::tempdir().unwrap();
    let mut p = super::journalled(Box::new(t), "card.img", ranges, journals.path(), reg.path());
    let mut buf = AlignedBuf::new(2 << 20);
    buf.as_mut_slice().fill(0xee);
    p.run(&[Request::write(1 << 20, 2 << 20, 0)], 1, &mut buf).unwrap();
    // The journal read the originals through the reader: the test's
    // clock (what its budget is checked against) counts them, and marks
    // them the layer's own, as a simulated card's in-memory journal does.
    let (journalled, total) = (p.reader_ns(), p.device_time_ns());
    assert!(journalled > 0 && total > journalled, "{journalled} of {total}");
    assert_eq!(p.own_time_ns(), journalled);
    let (_, out) = p.finish();
    let out = out.unwrap();
    assert_eq!((out.bytes_restored, out.bytes_verified), (2 << 20, 2 << 20));
    assert!(out.verify_device_ns > journalled, "{out:?}");
    assert!(std::fs::read(&path).unwrap().iter().all(|&b| b == 0x33));
}

/// A target stopping on its run's stop refuses the next request once
/// that stop is given, and one with a stop of its own goes on; what it
/// wrote goes back either way.
#[test]
fn a_stop_given_ends_its_own_target_alone() {
    let ranges = || {
        vec![Range {
            offset: 1 << 20,
            len: 1 << 20,
        }]
    };
    let card = || Box::new(SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap());
    let stop = signals::Stop::default();
    let mut mine = PreservingTarget::in_memory(card(), ranges())
        .unwrap()
        .stopping_on(stop.clone());
    let mut other = PreservingTarget::in_memory(card(), ranges())
        .unwrap()
        .stopping_on(signals::Stop::default());
    let mut buf = AlignedBuf::new(4096);
    buf.as_mut_slice().fill(0x77);
    mine.run(&[Request::write(1 << 20, 4096, 0)], 1, &mut buf).unwrap();
    stop.stop(libc::SIGINT);
    assert!(matches!(
        mine.run(&[Request::write((1 << 20) + 4096, 4096, 0)], 1, &mut buf),
        Err(TargetError::Interrupted { signal }) if signal == libc::SIGINT
    ));
    other.run(&[Request::write(1 << 20, 4096, 0)], 1, &mut buf).unwrap();
    for p in [mine, other] {
        let (mut t, out) = p.finish();
        assert_eq!(out.unwrap().bytes_restored, 1 << 20);
        assert!(read(t.as_mut(), 1 << 20, 4096).iter().all(|&b| b != 0x77));
    }
}

/// A write of a chunk's own bytes changes nothing: nothing is written
/// back there; a write of other bytes is, in memory as from a journal.
#[test]
fn chunks_written_with_their_own_bytes_are_not_written_back() {
    let mut t = SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap();
    fill(&mut t, 8 << 20, 2 << 20, 0x5a);
    let ranges = vec![Range {
        offset: 8 << 20,
        len: 2 << 20,
    }];
    let mut p = PreservingTarget::in_memory(Box::new(t), ranges).unwrap();
    let mut buf = AlignedBuf::new(4096);
    buf.as_mut_slice().fill(0x5a);
    p.run(&[Request::write(8 << 20, 4096, 0)], 1, &mut buf).unwrap();
    buf.as_mut_slice()[17] = 0;
    p.run(&[Request::write((9 << 20) + 4096, 4096, 0)], 1, &mut buf)
        .unwrap();
    let before = p.device_time_ns();
    let (mut t, out) = p.finish();
    let out = out.unwrap();
    assert_eq!(out.bytes_written, 8192);
    assert_eq!(out.bytes_restored, 1 << 20, "only the second chunk");
    assert_eq!(
        out.bytes_verified,
        2 << 20,
        "the chunk written with its own bytes is read back too, as from a journal"
    );
    assert!(t.device_time_ns() > before, "the restore costs device time");
    assert!(read(t.as_mut(), 8 << 20, 2 << 20).iter().all(|&b| b == 0x5a));
}

/// Originals of one repeated byte (what a simulated card reads where
/// nothing was written) are kept as that byte, others whole; both are
/// written back and checked. A random write over 64 pieces kept 256
/// MiB of erased bytes before.
#[test]
fn uniform_originals_are_kept_as_one_byte() {
    let mut t = SimTarget::from_spec("sim:demo,capacity=1P").unwrap();
    let mut buf = AlignedBuf::new(1 << 20);
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    t.run(&[Request::write(1 << 44, 1 << 20, 0)], 1, &mut buf).unwrap();
    let pattern = buf.as_slice().to_vec();
    let erased = read(&mut t, 2 << 44, 4096);
    let ranges: Vec<Range> = (0..64)
        .map(|i| Range {
            offset: i << 44,
            len: 4 << 20,
        })
        .collect();
    let mut p = PreservingTarget::in_memory(Box::new(t), ranges).unwrap();
    buf.as_mut_slice().fill(0xee);
    let writes: Vec<Request> = (0..64).map(|i| Request::write(i << 44, 4096, 0)).collect();
    p.run(&writes, 1, &mut buf).unwrap();
    assert_eq!(p.originals.len(), 64 * 4, "every chunk of every piece journalled");
    let kept: usize = p
        .originals
        .values()
        .map(|o| match o {
            Original::InMemory(v) => v.len(),
            Original::Uniform { .. } | Original::InJournal { .. } => 0,
        })
        .sum();
    assert_eq!(kept, 1 << 20, "only the chunk that held a pattern is kept whole");
    let (mut t, out) = p.finish();
    assert_eq!(
        out.unwrap().bytes_restored,
        64 << 20,
        "the 64 chunks the writes changed"
    );
    assert_eq!(read(t.as_mut(), 1 << 44, 1 << 20), pattern);
    assert_eq!(read(t.as_mut(), 2 << 44, 4096), erased);
}

/// Bytes written back as they are over a range no write has touched yet
/// are read once, and the journal keeps that read (a read and a write
/// read them twice: `Target::rewrite`). Nothing needs writing back, the
/// restore's check reads them, and bytes `keep` refuses are neither
/// journalled nor written.
#[test]
fn bytes_written_back_as_they_are_are_read_once_and_journalled() {
    let len = (1u32 << 20) - 4096;
    let ranges = || {
        vec![
            Range {
                offset: 8 << 20,
                len: u64::from(len),
            },
            Range {
                offset: 16 << 20,
                len: 64 << 10,
            },
        ]
    };
    let card = || {
        let mut t = SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap();
        fill(&mut t, 8 << 20, 1 << 20, 0x5a);
        fill(&mut t, 16 << 20, 64 << 10, 0xa5);
        PreservingTarget::in_memory(Box::new(t), ranges()).unwrap()
    };
    let (mut once, mut twice) = (card(), card());
    let mut buf = AlignedBuf::new(1 << 20);
    let all = |_: &[u8]| true;
    let t0 = once.device_time_ns();
    assert!(once.rewrite(8 << 20, len, &mut buf, &all).unwrap());
    let once_ns = once.device_time_ns() - t0;
    assert!(buf.as_slice()[..len as usize].iter().all(|&b| b == 0x5a));
    let t0 = twice.device_time_ns();
    assert!(crate::targets::rewrite_through(&mut twice, 8 << 20, len, &mut buf, &all).unwrap());
    let twice_ns = twice.device_time_ns() - t0;
    assert!(once_ns < twice_ns, "{once_ns} ns against {twice_ns} ns");
    assert!(!once.rewrite(16 << 20, 64 << 10, &mut buf, &|b| b[0] != 0xa5).unwrap());
    // Touched now: read and written through `run`, as any write.
    assert!(once.rewrite(8 << 20, len, &mut buf, &all).unwrap());
    let (mut t, out) = once.finish();
    let out = out.unwrap();
    assert_eq!(
        (out.bytes_written, out.bytes_restored, out.bytes_verified),
        (2 * u64::from(len), 0, u64::from(len)),
        "the refused range was never journalled"
    );
    assert!(read(t.as_mut(), 8 << 20, 1 << 20).iter().all(|&b| b == 0x5a));
    assert!(read(t.as_mut(), 16 << 20, 64 << 10).iter().all(|&b| b == 0xa5));
}

/// On a card that wraps at 32 MiB, a range 32 MiB past one already written
/// is the same bytes, and its "original" holds this run's data. The write
/// is refused before that is journalled, and the restore leaves the card as
/// it was, from the journal as from memory.
#[test]
fn a_range_that_is_another_through_a_wrap_is_refused_and_the_card_kept() {
    const MIB: u64 = 1 << 20;
    for journal in [false, true] {
        let spec = "sim:demo,capacity=256M,real_capacity=32M,fake_mode=wrap,keep_data=true";
        let mut t = SimTarget::from_spec(spec).unwrap();
        let mut buf = AlignedBuf::new(MIB as usize);
        for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
            *b = (i % 253) as u8;
        }
        t.run(&[Request::write(0, MIB as u32, 0)], 1, &mut buf).unwrap();
        let before = read(&mut t, 0, MIB);
        let ranges = vec![
            Range { offset: 0, len: MIB },
            Range {
                offset: 32 * MIB,
                len: MIB,
            },
        ];
        let (dir, reg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut p = if journal {
            super::journalled(Box::new(t), spec, ranges, dir.path(), reg.path())
        } else {
            PreservingTarget::in_memory(Box::new(t), ranges).unwrap()
        };
        for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
            *b = (i * 7 % 251) as u8;
        }
        p.run(&[Request::write(0, MIB as u32, 0)], 1, &mut buf).unwrap();
        let r = p.run(&[Request::write(32 * MIB, MIB as u32, 0)], 1, &mut buf);
        assert!(
            matches!(r, Err(TargetError::Aliased { offset, other: 0 }) if offset == 32 * MIB),
            "journal {journal}: {r:?}"
        );
        let (mut t, out) = p.finish();
        assert_eq!(out.unwrap().ranges_touched, 1, "journal {journal}");
        assert!(
            read(t.as_mut(), 0, MIB) == before,
            "journal {journal}: the card as it was"
        );
    }
}

/// A range whose original holds the very block this run wrote at another
/// place (an earlier run with `--no-preserve` leaves the same data) on a
/// card that does not wrap: other bytes written where the block was leave
/// the range as it was, so its write goes on, and both come back as they
/// were.
#[test]
fn a_block_an_earlier_run_left_is_not_taken_for_a_wrap() {
    const MIB: u64 = 1 << 20;
    let mut t = SimTarget::from_spec("sim:demo,capacity=256M,keep_data=true").unwrap();
    let mut buf = AlignedBuf::new(MIB as usize);
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (i * 7 % 251) as u8;
    }
    t.run(&[Request::write(32 * MIB, MIB as u32, 0)], 1, &mut buf).unwrap();
    let before = (read(&mut t, 0, MIB), read(&mut t, 32 * MIB, MIB));
    let ranges = vec![
        Range { offset: 0, len: MIB },
        Range {
            offset: 32 * MIB,
            len: MIB,
        },
    ];
    let mut p = PreservingTarget::in_memory(Box::new(t), ranges).unwrap();
    for at in [0, 32 * MIB] {
        p.run(&[Request::write(at, MIB as u32, 0)], 1, &mut buf)
            .unwrap_or_else(|e| panic!("the write at {at}: {e}"));
    }
    let (mut t, out) = p.finish();
    assert_eq!(out.unwrap().ranges_touched, 2);
    assert!(read(t.as_mut(), 0, MIB) == before.0 && read(t.as_mut(), 32 * MIB, MIB) == before.1);
}
