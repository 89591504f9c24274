//! The readers together, through [`Trace`]: real captures (the fixtures of
//! tests/fixtures/trace, made by blktrace's kernel interface, blkparse and
//! fio on a loop device; see their README), hand-made records for what a
//! capture did not show, compression, truncation, errors with their
//! places, and arbitrary bytes.

use std::io::Write;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;

/// The consumer may replay on a thread of its own.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Trace>();
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trace")
        .join(name)
}

/// A fixture's bytes, decompressed.
fn fixture_bytes(name: &str) -> Vec<u8> {
    let raw = std::fs::read(fixture(name)).unwrap();
    if name.ends_with(".zst") {
        zstd::decode_all(&raw[..]).unwrap()
    } else {
        raw
    }
}

struct Got {
    format: TraceFormat,
    records: Vec<TraceRecord>,
    truncated: Option<String>,
    went_back: Option<String>,
    left_out: Option<String>,
}

fn read(path: &Path, events: Events) -> Result<Got, TraceError> {
    let mut t = Trace::open(path, TraceOptions { events })?;
    let mut records = Vec::new();
    while let Some(r) = t.next_record()? {
        records.push(r);
    }
    Ok(Got {
        format: t.format(),
        records,
        truncated: t.truncated(),
        went_back: t.went_back(),
        left_out: t.left_out(),
    })
}

fn read_ok(path: &Path) -> Got {
    read(path, Events::Dispatch).unwrap_or_else(|e| panic!("{e}\nhint: {}", e.hint()))
}

/// A file of these bytes in a fresh directory.
fn file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

fn count(records: &[TraceRecord], op: TraceOp) -> (u64, u64) {
    let of: Vec<_> = records.iter().filter(|r| r.op == op).collect();
    (of.len() as u64, of.iter().map(|r| r.len).sum())
}

/// blkparse's own count in its `Total` block: `Write Dispatches: N, K KiB`.
fn blkparse_total(text: &str, what: &str) -> (u64, u64) {
    let total = &text[text.find("Total (").expect("a Total block")..];
    let rest = &total[total.find(what).expect(what) + what.len()..];
    let mut f = rest
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty());
    let n = f.next().unwrap().parse().unwrap();
    let kib = f.next().unwrap().trim_end_matches("KiB").parse().unwrap();
    (n, kib)
}

#[test]
fn a_real_capture_reads_the_same_from_blkparse_blktrace_and_fio() {
    let text = read_ok(&fixture("randw.blkparse.txt.zst"));
    let binary = read_ok(&fixture("randw.blktrace.0.zst"));
    assert_eq!(text.format, TraceFormat::Blkparse);
    assert_eq!(binary.format, TraceFormat::Blktrace);
    assert_eq!(text.records, binary.records, "times included");
    assert!(text.truncated.is_none() && binary.truncated.is_none());
    // Both equal blkparse's own count at the end of its output.
    let (writes, bytes) = count(&binary.records, TraceOp::Write);
    let summary = String::from_utf8(fixture_bytes("randw.blkparse.txt.zst")).unwrap();
    assert_eq!(blkparse_total(&summary, "Write Dispatches:"), (writes, bytes / 1024));
    assert_eq!(binary.records.len() as u64, writes);
    // And fio's log of the job (--rw=randwrite --bs=4k --size=1M): 256
    // writes, 1 MiB, at the same offsets in the same order (the job's file
    // was the device).
    let fio = read_ok(&fixture("randw.iolog.zst"));
    assert_eq!(fio.format, TraceFormat::FioV3);
    assert_eq!(count(&fio.records, TraceOp::Write), (256, 1 << 20));
    assert_eq!((writes, bytes), (256, 1 << 20));
    let places = |rs: &[TraceRecord]| rs.iter().map(|r| (r.op, r.offset, r.len)).collect::<Vec<_>>();
    assert_eq!(places(&fio.records), places(&binary.records));
    assert!(binary.records.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    assert_eq!(binary.records[0].time_ns, 36_685, "blkparse's first D, 0.000036685");
}

#[test]
fn flushes_and_discards_read_the_same_from_a_real_capture() {
    let summary = String::from_utf8(fixture_bytes("mixed.blkparse.txt.zst")).unwrap();
    for events in [Events::Dispatch, Events::Queue] {
        let text = read(&fixture("mixed.blkparse.txt.zst"), events).unwrap();
        let binary = read(&fixture("mixed.blktrace.1.zst"), events).unwrap();
        assert_eq!(text.records, binary.records, "{events:?}");
        let r = &binary.records;
        assert_eq!(count(r, TraceOp::Flush).0, 11, "{events:?}: fsync every 4 writes");
        assert_eq!(count(r, TraceOp::Read), (14, 14 * 4096));
        assert_eq!(count(r, TraceOp::Write), (18, 18 * 4096));
        assert_eq!(count(r, TraceOp::Discard), (4, 4 * 16384));
        if events == Events::Dispatch {
            // blkparse counts a discard as a write (it carries the WRITE
            // category) and a flush as a read of no bytes.
            let (w, d) = (count(r, TraceOp::Write), count(r, TraceOp::Discard));
            let want = (w.0 + d.0, (w.1 + d.1) / 1024);
            assert_eq!(blkparse_total(&summary, "Write Dispatches:"), want);
            let (rd, f) = (count(r, TraceOp::Read), count(r, TraceOp::Flush));
            assert_eq!(blkparse_total(&summary, "Read Dispatches:"), (rd.0 + f.0, rd.1 / 1024));
        }
    }
    // fio's logs of the two jobs say the same.
    let mixed = read_ok(&fixture("mixed.iolog")).records;
    assert_eq!(count(&mixed, TraceOp::Write), (18, 18 * 4096));
    assert_eq!(count(&mixed, TraceOp::Read), (14, 14 * 4096));
    assert_eq!(count(&mixed, TraceOp::Flush).0, 11);
    let trims = read_ok(&fixture("trim.iolog")).records;
    let binary = read_ok(&fixture("mixed.blktrace.0.zst")).records;
    let discards = |rs: &[TraceRecord]| {
        rs.iter()
            .filter(|r| r.op == TraceOp::Discard)
            .map(|r| (r.offset, r.len))
            .collect::<Vec<_>>()
    };
    assert_eq!(discards(&trims), discards(&binary));
    assert_eq!(discards(&trims)[0], (262_144, 16_384));
}

/// One blktrace record (blk_io_trace, version 7).
#[allow(clippy::too_many_arguments)]
fn rec(big: bool, time: u64, sector: u64, bytes: u32, act: u32, cat: u32, dev: u32, pdu: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    let w32 = |v: &mut Vec<u8>, x: u32| v.extend(if big { x.to_be_bytes() } else { x.to_le_bytes() });
    let w64 = |v: &mut Vec<u8>, x: u64| v.extend(if big { x.to_be_bytes() } else { x.to_le_bytes() });
    w32(&mut v, 0x6561_7407);
    w32(&mut v, 0);
    w64(&mut v, time);
    w64(&mut v, sector);
    w32(&mut v, bytes);
    w32(&mut v, cat << 16 | act);
    w32(&mut v, 42);
    w32(&mut v, dev);
    w32(&mut v, 0);
    v.extend([0, 0]);
    let len = pdu.len() as u16;
    v.extend(if big { len.to_be_bytes() } else { len.to_le_bytes() });
    v.extend(pdu);
    v
}

// The reader's own action codes and category bits, short, for records
// written by hand; and the read bit, which the reader never asks (what
// does not write reads).
use super::blktrace::{
    ACT_ISSUE as D, ACT_QUEUE as Q, TC_DISCARD as DISCARD, TC_FLUSH as FLUSH, TC_NOTIFY as NOTIFY, TC_PC as PC,
    TC_WRITE as WRITE,
};
const READ: u32 = 1;
const SDA: u32 = 8 << 20;

fn r(time_ns: u64, op: TraceOp, offset: u64, len: u64) -> TraceRecord {
    TraceRecord {
        time_ns,
        op,
        offset,
        len,
    }
}

/// biosnoop's requests of disk `<unknown>` are left out, and said to be.
#[test]
fn biosnoops_unplaced_requests_are_counted() {
    let text = "TIME(s) COMM PID DISK T SECTOR BYTES LAT(ms)\n\
                0.000100 a 1 sda W 16 4096 0.1\n\
                0.100000 kw 1 <unknown> W 0 4096000 1.0\n\
                0.200000 kw 1 <unknown> W 0 4096 1.0\n";
    let (_dir, path) = file("u", text.as_bytes());
    let g = read_ok(&path);
    assert_eq!(g.records.len(), 1);
    assert_eq!(
        g.left_out.as_deref(),
        Some("2 requests of disk <unknown> (3.91 MiB), whose start biosnoop did not see, left out")
    );
}

/// Times that go back are counted and placed, each record taken at the
/// time before it; a trace in order says nothing.
#[test]
fn times_that_go_back_are_named_and_held() {
    let (_d, p) = file(
        "back.iolog",
        b"fio version 3 iolog\n5000000 /dev/sdb add\n5000000 /dev/sdb open\n5000000 /dev/sdb write 0 4096\n\
          3000000 /dev/sdb write 4096 4096\n6000000 /dev/sdb write 8192 4096\n1000000 /dev/sdb write 0 4096\n",
    );
    let g = read_ok(&p);
    assert_eq!(
        g.records.iter().map(|r| r.time_ns / 1_000_000).collect::<Vec<_>>(),
        [5_000, 5_000, 6_000, 6_000]
    );
    assert_eq!(
        g.went_back.as_deref(),
        Some("2 records, by up to 5.00 s, the first at line 5")
    );
    let (_d, p) = file(
        "order.iolog",
        b"fio version 3 iolog\n0 /dev/sdb add\n0 /dev/sdb open\n1 /dev/sdb write 0 4096\n1 /dev/sdb write 0 4096\n",
    );
    assert_eq!(read_ok(&p).went_back, None);
}

#[test]
fn blktrace_records_become_requests_by_their_category() {
    for big in [false, true] {
        let mut b = Vec::new();
        // A timestamp note: action 1, as Q, but a note.
        b.extend(rec(big, 900, 0, 0, 1, NOTIFY, SDA, b"\0\0\0\0\0\0\0\0"));
        b.extend(rec(big, 1000, 8, 4096, Q, WRITE, SDA, &[]));
        b.extend(rec(big, 1100, 8, 4096, D, WRITE, SDA, &[]));
        b.extend(rec(big, 1200, 0, 0, D, FLUSH | READ, SDA, &[]));
        b.extend(rec(big, 1300, 16, 8192, D, FLUSH | WRITE, SDA, &[]));
        b.extend(rec(big, 1400, 2048, 1 << 20, D, DISCARD | WRITE, SDA, &[]));
        b.extend(rec(big, 1500, 24, 512, D, READ, SDA, &[1, 2, 3]));
        b.extend(rec(big, 1600, 0, 36, D, PC, SDA, &[0; 36]));
        b.extend(rec(big, 1700, 0, 0, D, READ, SDA, &[]));
        b.extend(rec(big, 1800, 32, 4096, 8, WRITE, SDA, &[]));
        let (_dir, path) = file("sda.blktrace.0", &b);
        let got = read_ok(&path).records;
        // Times count from the first record that is not a note (the Q).
        assert_eq!(
            got,
            [
                r(100, TraceOp::Write, 4096, 4096),
                r(200, TraceOp::Flush, 0, 0),
                r(300, TraceOp::Flush, 0, 0),
                r(300, TraceOp::Write, 8192, 8192),
                r(400, TraceOp::Discard, 1 << 20, 1 << 20),
                r(500, TraceOp::Read, 24 * 512, 512),
            ],
            "big-endian {big}"
        );
        let queued = read(&path, Events::Queue).unwrap().records;
        assert_eq!(queued, [r(0, TraceOp::Write, 4096, 4096)]);
    }
}

#[test]
fn per_cpu_files_merge_by_time_ties_to_the_lower_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = |n: usize, recs: &[(u64, u64)]| {
        let b: Vec<u8> = recs
            .iter()
            .flat_map(|&(t, s)| rec(false, t, s, 512, D, WRITE, SDA, &[]))
            .collect();
        std::fs::write(dir.path().join(format!("x.blktrace.{n}")), b).unwrap();
    };
    cpu(0, &[(10, 0), (30, 1), (50, 2)]);
    cpu(1, &[(20, 10), (30, 11), (40, 12)]);
    cpu(2, &[]);
    // CPU 10 sorts after 2, and a big-endian file goes with little-endian ones.
    let b: Vec<u8> = rec(true, 30, 100, 512, D, WRITE, SDA, &[]);
    std::fs::write(dir.path().join("x.blktrace.10"), b).unwrap();
    std::fs::write(
        dir.path().join("y.blktrace.0"),
        rec(false, 0, 0, 512, D, WRITE, SDA, &[]),
    )
    .unwrap();
    let got: Vec<(u64, u64)> = read_ok(&dir.path().join("x.blktrace.1"))
        .records
        .iter()
        .map(|r| (r.time_ns, r.offset / 512))
        .collect();
    assert_eq!(got, [(0, 0), (10, 10), (20, 1), (20, 11), (20, 100), (30, 12), (40, 2)]);
    // Two files for one CPU are refused.
    std::fs::write(dir.path().join("x.blktrace.1.gz"), []).unwrap();
    let err = read(&dir.path().join("x.blktrace.0"), Events::Dispatch).err().unwrap();
    assert!(matches!(err, TraceError::Files { .. }), "{err}");
}

#[test]
fn a_binary_file_cut_mid_record_reads_up_to_it() {
    let mut b = Vec::new();
    for i in 0..3 {
        b.extend(rec(false, i * 10, i, 512, D, WRITE, SDA, &[7; 8]));
    }
    let whole = b.len();
    for (cut, what) in [(whole - 50, "mid-header"), (whole - 3, "mid-payload")] {
        let (_dir, path) = file("t.blktrace.0", &b[..cut]);
        let got = read_ok(&path);
        assert_eq!(got.records.len(), 2, "{what}");
        let t = got.truncated.expect(what);
        assert!(t.contains(what), "{t}");
    }
    let (_dir, path) = file("t.blktrace.0", &b);
    assert!(read_ok(&path).truncated.is_none());
}

#[test]
fn a_text_file_cut_mid_line_reads_up_to_it() {
    let text =
        "  7,0  1  0  0.000036685 16809  D  WS 120 + 8 [fio]\n  7,0  1  0  0.000241849 16809  D  WS 1512 + 8 [fio]\n";
    for cut in [
        "  7,0  1  0  0.000350119 16809  D  WS 1720 + 8 [fi",
        "  7,0  1  0  0.000350119 16809  D  WS 17",
    ] {
        let (_dir, path) = file("t.txt", format!("{text}{cut}").as_bytes());
        let got = read_ok(&path);
        assert_eq!(got.records.len(), 2, "{cut}");
        assert!(got.truncated.unwrap().contains("cut short"));
    }
    // A last line with no newline that is whole is a record.
    let (_dir, path) = file("t.txt", text.trim_end().as_bytes());
    let got = read_ok(&path);
    assert_eq!(got.records.len(), 2);
    assert!(got.truncated.is_none());
    let fio = "fio version 3 iolog\n1 /dev/sdb add\n2 /dev/sdb write 0 4096\n3 /dev/sdb wri";
    let (_dir, path) = file("t.log", fio.as_bytes());
    let got = read_ok(&path);
    assert_eq!(got.records, [r(2000, TraceOp::Write, 0, 4096)]);
    assert!(got.truncated.is_some());
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

#[test]
fn gzip_and_zstd_give_the_same_records_as_plain() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture_bytes("mixed.blkparse.txt.zst");
    let mut seen = Vec::new();
    for (name, bytes) in [
        ("plain.txt", text.clone()),
        ("renamed.zst", gzip(&text)),
        ("zstd.txt", zstd::encode_all(&text[..], 3).unwrap()),
    ] {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        seen.push(read_ok(&dir.path().join(name)).records);
    }
    assert!(!seen[0].is_empty());
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0], seen[2]);
    // Per-CPU binary files, one gzip and one plain.
    let cpu0 = fixture_bytes("mixed.blktrace.0.zst");
    std::fs::write(dir.path().join("m.blktrace.0.gz"), gzip(&cpu0)).unwrap();
    std::fs::write(dir.path().join("m.blktrace.1"), fixture_bytes("mixed.blktrace.1.zst")).unwrap();
    assert_eq!(read_ok(&dir.path().join("m.blktrace.1")).records, seen[0]);
}

#[test]
fn a_compressed_file_cut_short_reads_up_to_the_cut() {
    let text = fixture_bytes("randw.blkparse.txt.zst");
    let whole = read_ok(&fixture("randw.blkparse.txt.zst")).records;
    // zstd in blocks of 8 KiB (a frame's block holds up to 128 KiB, and
    // nothing of a block cut short is read).
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    for chunk in text.chunks(8192) {
        e.write_all(chunk).unwrap();
        e.flush().unwrap();
    }
    let zst = e.finish().unwrap();
    for (name, packed) in [("t.gz", gzip(&text)), ("t.zst", zst)] {
        let (_dir, path) = file(name, &packed[..packed.len() / 2]);
        let got = read_ok(&path);
        assert!(!got.records.is_empty() && got.records.len() < whole.len(), "{name}");
        assert_eq!(got.records, whole[..got.records.len()], "{name}");
        let t = got.truncated.unwrap_or_else(|| panic!("{name} not seen cut"));
        assert!(t.contains("stream stops"), "{t}");
    }
    // Cut before its first block: nothing to read.
    let one_block = zstd::encode_all(&text[..], 3).unwrap();
    let (_dir, path) = file("u.zst", &one_block[..one_block.len() / 2]);
    let err = read(&path, Events::Dispatch).err().unwrap();
    assert!(matches!(err, TraceError::Decompress { .. }), "{err}");
}

#[test]
fn each_format_is_told_by_content() {
    let cases: [(&str, &str, TraceFormat); 5] = [
        (
            "a.iolog",
            "fio version 2 iolog\nf add\nf write 0 512\n",
            TraceFormat::FioV2,
        ),
        (
            "b.txt",
            "\nfio version 3 iolog\n5 f add\n6 f write 0 512\n",
            TraceFormat::FioV3,
        ),
        (
            "c.blktrace.0",
            "TIME(s) COMM PID DISK T SECTOR BYTES LAT(ms)\n0.0 fio 1 sda W 0 512 0.1\n",
            TraceFormat::Biosnoop,
        ),
        (
            "d.log",
            "Input file d.blktrace.0 added\n  8,0  0  1  0.000000000  1  D  W 0 + 1 [x]\n",
            TraceFormat::Blkparse,
        ),
        (
            "e",
            "TIMESTAMP COMM PID DISK T SECTOR BYTES QUE(ms) LAT(ms)\n0.0 fio 1 sda W 0 512 -1 0.1\n",
            TraceFormat::Biosnoop,
        ),
    ];
    for (name, text, format) in cases {
        let (_dir, path) = file(name, text.as_bytes());
        let got = read_ok(&path);
        assert_eq!(got.format, format, "{name}");
        assert_eq!(got.records.len(), 1, "{name}");
        assert_eq!((got.records[0].op, got.records[0].len), (TraceOp::Write, 512), "{name}");
    }
    for text in ["", "hello\n", "fio version 4 iolog\n", "TIME COMM\n"] {
        let (_dir, path) = file("u", text.as_bytes());
        let err = read(&path, Events::Dispatch).err().unwrap();
        assert!(matches!(err, TraceError::Unknown { .. }), "{text:?}: {err}");
        assert!(err.hint().contains("blkparse") && err.hint().contains("biosnoop"));
    }
}

/// The line or byte of a reading's error.
fn error_at(name: &str, bytes: &[u8]) -> At {
    let (_dir, path) = file(name, bytes);
    match read(&path, Events::Dispatch) {
        Err(TraceError::Malformed { at, path: p, hint, .. }) => {
            assert_eq!(p, path);
            assert!(!hint.is_empty());
            at
        }
        other => panic!("{name}: {:?}", other.map(|r| r.records)),
    }
}

#[test]
fn a_malformed_record_names_its_line_or_byte() {
    let blkparse = "  8,0  0  1  0.000000000  1  D  W 0 + 8 [x]\n\n  8,0  0  2  0.000000001  1  D  W 8 + [x]\n";
    assert_eq!(error_at("a", blkparse.as_bytes()), At::Line(3));
    let fio = "fio version 2 iolog\nf add\nf open\nf write 0 4096\ng write 0 4096\n";
    assert_eq!(error_at("b", fio.as_bytes()), At::Line(5));
    let bios = "TIME(s) COMM PID DISK T SECTOR BYTES LAT(ms)\n0.1 a b 1 sda W 8 4096 0.1\n0.2 fio 1 sda W 8 4096\n";
    assert_eq!(error_at("c", bios.as_bytes()), At::Line(3));
    let mut b = rec(false, 0, 0, 512, D, WRITE, SDA, &[1, 2]);
    b.extend(b"not a record at all, forty-eight bytes of text here");
    assert_eq!(error_at("d", &b), At::Byte(50));
    // Two devices in one trace.
    let two = "  8,0  0  1  0.000000000  1  D  W 0 + 8 [x]\n  8,16  0  2  0.000000001  1  D  W 8 + 8 [x]\n";
    assert_eq!(error_at("e", two.as_bytes()), At::Line(2));
    let mut b = rec(false, 0, 0, 512, D, WRITE, SDA, &[]);
    b.extend(rec(false, 1, 0, 512, D, WRITE, SDA + 16, &[]));
    assert_eq!(error_at("f", &b), At::Byte(48));
    // A line with no end.
    let long = format!("fio version 2 iolog\n{}\n", "x".repeat(MAX_LINE + 10));
    assert_eq!(error_at("g", long.as_bytes()), At::Line(2));
}

/// A time more than ten years into the trace is refused where it stands,
/// in every format: `life` replays a trace many times on one u64 clock
/// of nanoseconds, which a span of 9.3e9 s overflowed.
#[test]
fn a_time_past_ten_years_names_its_line_or_byte() {
    let past = MAX_SPAN_NS / 1_000_000_000 + 1;
    let blkparse =
        format!("  8,0  0  1  0.000000000  1  D  W 0 + 8 [x]\n  8,0  0  2  {past}.000000000  1  D  W 8 + 8 [x]\n");
    assert_eq!(error_at("a", blkparse.as_bytes()), At::Line(2));
    let fio = format!(
        "fio version 3 iolog\n0 sda add\n0 sda open\n0 sda write 0 4096\n{} sda write 0 4096\n",
        past * 1_000_000
    );
    assert_eq!(error_at("b", fio.as_bytes()), At::Line(5));
    let bios = format!(
        "TIME(s) COMM PID DISK T SECTOR BYTES LAT(ms)\n0.1 a 1 sda W 8 4096 0.1\n{past}.0 a 1 sda W 8 4096 0.1\n"
    );
    assert_eq!(error_at("c", bios.as_bytes()), At::Line(3));
    let mut b = rec(false, 5, 0, 512, D, WRITE, SDA, &[]);
    b.extend(rec(false, 5 + MAX_SPAN_NS + 1, 8, 512, D, WRITE, SDA, &[]));
    assert_eq!(error_at("d", &b), At::Byte(48));
    // Ten years to the nanosecond still reads.
    let edge = format!(
        "  8,0  0  1  0.000000000  1  D  W 0 + 8 [x]\n  8,0  0  2  {}.000000000  1  D  W 8 + 8 [x]\n",
        past - 1
    );
    let (_dir, path) = file("e", edge.as_bytes());
    assert_eq!(read(&path, Events::Dispatch).unwrap().records.len(), 2);
}

#[test]
fn what_is_not_a_regular_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (path, what) in [
        (fifo, "a FIFO"),
        (dir.path().to_path_buf(), "a directory"),
        (PathBuf::from("/dev/null"), "a character device"),
    ] {
        match read(&path, Events::Dispatch) {
            Err(e @ TraceError::Open { .. }) => assert!(e.to_string().contains(what), "{e}"),
            other => panic!("{path:?}: {:?}", other.map(|r| r.records)),
        }
    }
    assert!(matches!(
        read(&dir.path().join("missing"), Events::Dispatch),
        Err(TraceError::Open { .. })
    ));
}

#[test]
fn blkparse_events_end_at_its_summary() {
    let events = "  8,0  0  1  0.000000000  1  D  W 0 + 8 [x]\n";
    for summary in [
        "CPU0 (sda):\n Reads Queued:           0,        0KiB\n",
        "fio (17710)\n Reads Queued:           0,        0KiB\t Writes Queued:  1,  4KiB\n",
        "kworker/u8:2 (14, ...)\n Reads Queued:           0,        0KiB\n",
    ] {
        let after = "  8,16  0  1  0.000000000  1  D  W 0 + 8 [x]\nnot read\n";
        let (_dir, path) = file("s", format!("{events}{summary}{after}").as_bytes());
        let got = read_ok(&path);
        assert_eq!(got.records, [r(0, TraceOp::Write, 0, 4096)], "{summary}");
        assert!(got.truncated.is_none());
    }
}

#[test]
fn a_preflush_comes_first_and_times_never_go_back() {
    let text = "TIME(s) COMM PID DISK T SECTOR BYTES LAT(ms)\n\
                0.000200 a 1 sda FWS 8 4096 0.1\n\
                0.000100 b 1 sda W 16 4096 0.1\n";
    let (_dir, path) = file("b", text.as_bytes());
    assert_eq!(
        read_ok(&path).records,
        [
            r(200_000, TraceOp::Flush, 0, 0),
            r(200_000, TraceOp::Write, 4096, 4096),
            r(200_000, TraceOp::Write, 8192, 4096),
        ]
    );
}

/// Valid lines of each format, to mutate.
const SEEDS: [&str; 5] = [
    "  8,0    3        1     0.000000000   697  D   W 223490 + 8 [kjournald]\n",
    "fio version 2 iolog\n/dev/sdb add\n/dev/sdb wait 5 0\n/dev/sdb write 4096 512\n",
    "fio version 3 iolog\n31 /dev/loop0 add\n171 /dev/loop0 write 61440 4096\n",
    "TIME(s) COMM PID DISK T SECTOR BYTES QUE(ms) LAT(ms)\n0.004217 kworker 12 sda FWS 2048 4096 0.1 0.35\n",
    "TIMESTAMP COMM PID DISK T SECTOR BYTES LAT(ms)\n2.5 fio 1 nvme0n1 D 16 4096 0.1\n",
];

/// Read a file of these bytes to its end or its first error, which must
/// not panic; records stay in time order.
fn survive(bytes: &[u8]) {
    let (_dir, path) = file("p.blktrace.0", bytes);
    let Ok(mut t) = Trace::open(&path, TraceOptions::default()) else {
        return;
    };
    let mut last = 0;
    for _ in 0..100_000 {
        match t.next_record() {
            Ok(Some(r)) => {
                assert!(r.time_ns >= last);
                last = r.time_ns;
            }
            Ok(None) | Err(_) => break,
        }
    }
    let _ = t.truncated();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), head in 0usize..7) {
        let mut b: Vec<u8> = match head {
            0..=4 => SEEDS[head].as_bytes().to_vec(),
            5 => rec(head % 2 == 0, 5, 8, 512, D, WRITE, SDA, &[]),
            _ => Vec::new(),
        };
        b.extend(&bytes);
        survive(&b);
    }

    #[test]
    fn mutated_lines_never_panic(
        seed in 0usize..SEEDS.len(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let mut b = SEEDS[seed].as_bytes().to_vec();
        for (at, byte, kind) in edits {
            let i = at.index(b.len() + 1);
            match kind {
                0 if i < b.len() => b[i] = byte,
                1 => b.insert(i, byte),
                _ if i < b.len() => {
                    b.remove(i);
                }
                _ => {}
            }
        }
        survive(&b);
    }

    #[test]
    fn mutated_binary_records_never_panic(
        edits in proptest::collection::vec((0usize..144, any::<u8>()), 1..6),
        cut in 0usize..150,
    ) {
        let mut b = Vec::new();
        for (i, (cat, sector)) in [(WRITE, 8), (FLUSH | WRITE, u64::MAX / 512), (DISCARD | WRITE, 16)].into_iter().enumerate() {
            b.extend(rec(false, i as u64, sector, 4096, D, cat, SDA, &[]));
        }
        for (i, byte) in edits {
            b[i] = byte;
        }
        b.truncate(cut.max(4));
        survive(&b);
    }
}

/// The rates the replay needs, on one core: 2 million records a second
/// from binary, 1 million from text. Timing on a shared machine is not a
/// test that always runs: `cargo test --release --lib trace::tests::speed -- --ignored --nocapture`.
#[test]
#[ignore]
fn speed() {
    let dir = tempfile::tempdir().unwrap();
    let n: u64 = 2_000_000;
    let mut b = Vec::with_capacity(n as usize * 48);
    for i in 0..n {
        b.extend(rec(false, i * 1000, i * 8 % 1_000_000, 4096, D, WRITE, SDA, &[]));
    }
    std::fs::write(dir.path().join("s.blktrace.0"), &b).unwrap();
    let mut text = String::new();
    for i in 0..n / 2 {
        let (s, ns) = (i / 1000, i % 1000 * 1_000_000);
        text.push_str(&format!(
            "  8,0    1   {i:6}  {s:5}.{ns:09} 16809  D  WS {} + 8 [fio]\n",
            i * 8
        ));
    }
    std::fs::write(dir.path().join("s.txt"), &text).unwrap();
    for (name, want) in [("s.blktrace.0", 2e6), ("s.txt", 1e6)] {
        let start = std::time::Instant::now();
        let mut t = Trace::open(&dir.path().join(name), TraceOptions::default()).unwrap();
        let mut k = 0u64;
        while t.next_record().unwrap().is_some() {
            k += 1;
        }
        let rate = k as f64 / start.elapsed().as_secs_f64();
        println!("{name}: {k} records, {rate:.0} records/s");
        assert!(rate > want, "{name}: {rate:.0} records/s");
    }
}

/// `flashlab trace`'s live counts, fed the capture in uneven chunks as a
/// relay or trace_pipe gives it, count what the reader reads.
#[test]
fn live_counts_match_the_reader_whatever_the_chunks() {
    let mut counted = 0;
    for name in [
        "mixed.blktrace.0.zst",
        "mixed.blktrace.1.zst",
        "randw.blktrace.0.zst",
        "randw.blktrace.1.zst",
    ] {
        let bytes = fixture_bytes(name);
        let mut tally = Tally::default();
        let mut at = 0;
        for size in [1usize, 47, 48, 49, 4096, 7].iter().cycle() {
            if at >= bytes.len() {
                break;
            }
            let end = (at + size).min(bytes.len());
            tally.feed(&bytes[at..end]);
            at = end;
        }
        let (mut writes, mut reads, mut discards, mut written) = (0, 0, 0, 0);
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one.blktrace.0");
        std::fs::write(&one, &bytes).unwrap();
        let mut t = Trace::open(&one, TraceOptions::default()).unwrap();
        while let Some(r) = t.next_record().unwrap() {
            match r.op {
                TraceOp::Write => {
                    writes += 1;
                    written += r.len;
                }
                TraceOp::Read => reads += 1,
                TraceOp::Discard => discards += 1,
                TraceOp::Flush => {}
            }
        }
        counted += writes + reads;
        assert_eq!(
            (
                tally.counts.writes,
                tally.counts.reads,
                tally.counts.discards,
                tally.counts.bytes_written
            ),
            (writes, reads, discards, written),
            "{name}"
        );
    }
    assert!(counted > 256, "the fixtures hold {counted} requests");
}
