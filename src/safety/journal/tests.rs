//! The journal format against damage: every cut, flip, reorder and torn
//! commit a crash or an edit can leave.

use super::*;

fn header(ranges: &[[u64; 2]]) -> Header {
    crate::safety::header::sample(0, 0, ranges)
}

/// A journal with `n` 64 KiB records in one range, the first `commit`
/// committed; returns its path and the byte where each record starts.
fn make(dir: &Path, n: u64, commit: u64) -> (PathBuf, Vec<u64>) {
    let mut w = Writer::create(dir, &header(&[[1 << 20, 4 << 20]]), Registry::at(dir)).unwrap();
    let mut starts = Vec::new();
    for i in 0..n {
        starts.push(w.end);
        w.record((1 << 20) + i * 65536, &vec![i as u8 + 1; 65536]).unwrap();
        if i + 1 == commit {
            w.commit().unwrap();
        }
    }
    starts.push(w.end);
    (w.path.clone(), starts)
}

fn cut(path: &Path, len: u64) {
    OpenOptions::new().write(true).open(path).unwrap().set_len(len).unwrap();
}

#[test]
fn a_committed_journal_reads_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = make(dir.path(), 4, 4);
    let j = Journal::open(&p).unwrap();
    assert_eq!((j.committed, j.bytes(), j.torn_tail), (4, 4 * 65536, false));
}

#[test]
fn truncation_of_committed_records_is_refused_at_every_boundary_and_inside() {
    let dir = tempfile::tempdir().unwrap();
    let (p, starts) = make(dir.path(), 4, 4);
    let whole = std::fs::read(&p).unwrap();
    for &s in &starts[..4] {
        for at in [s, s + 1, s + 31, s + 32, s + 33, s + 32 + 65535] {
            std::fs::write(&p, &whole[..at as usize]).unwrap();
            let e = Journal::open(&p).unwrap_err();
            assert!(matches!(e, SafetyError::Corrupt { .. }), "cut at {at}: {e}");
        }
    }
    // Cut inside the slots or the header: refused too.
    for at in [starts[0] - 1, starts[0] - 40, 10, 30] {
        std::fs::write(&p, &whole[..at as usize]).unwrap();
        assert!(Journal::open(&p).is_err(), "cut at {at}");
    }
}

#[test]
fn a_torn_uncommitted_tail_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    // Two committed, two appended but not committed (a crash before the
    // commit): any cut in the last two records is a torn tail.
    let (p, starts) = make(dir.path(), 4, 2);
    for at in [starts[2], starts[2] + 5, starts[3] + 100, starts[4] - 1] {
        cut(&p, at);
        let j = Journal::open(&p).unwrap();
        assert_eq!(j.committed, 2);
        assert!(j.bytes() >= 2 * 65536, "{at}");
        assert_eq!(
            j.torn_tail,
            at != starts[2] && at != starts[3] && at != starts[4],
            "{at}"
        );
    }
}

#[test]
fn flipped_header_reordered_and_duplicated_records_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (p, starts) = make(dir.path(), 3, 3);
    let whole = std::fs::read(&p).unwrap();
    // Every byte of the magic, header and slots, flipped alone.
    for i in 0..starts[0] as usize {
        let mut b = whole.clone();
        b[i] ^= 0x04;
        std::fs::write(&p, &b).unwrap();
        match Journal::open(&p) {
            Err(_) => {}
            // One slot flipped: the other still vouches for all three.
            Ok(j) => assert!(i >= starts[0] as usize - 2 * HEAD && j.committed == 3, "byte {i}"),
        }
    }
    let rec = |k: usize| whole[starts[k] as usize..starts[k + 1] as usize].to_vec();
    let head = whole[..starts[0] as usize].to_vec();
    for body in [
        [rec(1), rec(0), rec(2)].concat(),
        [rec(0), rec(0), rec(2)].concat(),
        [rec(0), rec(1), rec(2), rec(2)].concat(),
    ] {
        std::fs::write(&p, [head.clone(), body].concat()).unwrap();
        let e = Journal::open(&p).unwrap_err();
        assert!(e.to_string().contains("reordered or duplicated"), "{e}");
    }
    // A data byte flipped: the region is named.
    let mut b = whole.clone();
    b[starts[1] as usize + 40] ^= 1;
    std::fs::write(&p, &b).unwrap();
    let e = Journal::open(&p).unwrap_err().to_string();
    assert!(e.contains("bytes 1114112..1179648"), "{e}");
}

#[test]
fn one_damaged_slot_is_a_crash_only_with_new_complete_records() {
    let dir = tempfile::tempdir().unwrap();
    let (p, starts) = make(dir.path(), 3, 3);
    let whole = std::fs::read(&p).unwrap();
    let slot_a = starts[0] as usize - 2 * HEAD;
    // Slot A damaged, B says 3 and all 3 are there: refused (no crash
    // leaves a damaged slot without new records).
    let mut b = whole.clone();
    b[slot_a + 20] ^= 1;
    std::fs::write(&p, &b).unwrap();
    assert!(Journal::open(&p).is_err());
    // A crash in the middle of committing record 3: B still says 2, A torn.
    let mut w = whole.clone();
    w[slot_a + HEAD..slot_a + 2 * HEAD].copy_from_slice(&slot_bytes(1, 2));
    w[slot_a + 3] = 0;
    std::fs::write(&p, &w).unwrap();
    let j = Journal::open(&p).unwrap();
    assert_eq!((j.committed, j.bytes()), (2, 3 * 65536));
    // ...but not if the third record is then cut short too.
    std::fs::write(&p, &w[..starts[3] as usize - 10]).unwrap();
    assert!(Journal::open(&p).is_err());
    // A crash while writing slot B: A already counts all three.
    let mut b = whole.clone();
    b[slot_a + HEAD + 20] ^= 1;
    std::fs::write(&p, &b).unwrap();
    assert_eq!(Journal::open(&p).unwrap().committed, 3);
}

/// (That a journal being written is live and locked is pending's to
/// check, in its own tests: pending reads journals, not the other way.)
#[test]
fn a_v1_journal_and_a_fifo_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let w = Writer::create(dir.path(), &header(&[[0, 4096]]), Registry::at(dir.path())).unwrap();
    let path = w.path.clone();
    drop(w);
    std::fs::write(&path, b"flashlab-journal v1\n{}\n").unwrap();
    assert!(Journal::open(&path).unwrap_err().to_string().contains("format v1"));
    // A FIFO is not read (it would block).
    let fifo = dir.path().join("x.fljournal");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    assert!(
        Journal::open(&fifo)
            .unwrap_err()
            .to_string()
            .contains("not a regular file")
    );
}
