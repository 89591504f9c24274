//! One conformance suite for every Target: psync and io_uring on a regular
//! file and on a loop device, the simulator, and the preserving wrapper over
//! each of them. Also: what one engine writes the other reads back, a
//! 4096-byte-sector device refuses unaligned requests, and an exclusive
//! open of a mounted device is busy. Buffers are fresh, reused, and freed and reallocated between
//! batches (the pattern that once made io_uring read into pages the buffer no
//! longer had); request sizes are mixed; queue depths run from 1 to 64; every
//! write is checked by reading back through the target and through a path
//! that shares nothing with it.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use flashlab::safety::PreservingTarget;
use flashlab::safety::identity::Identity;
use flashlab::safety::journal::Header;
use flashlab::safety::ranges::Range;
use flashlab::safety::registry::Registry;
use flashlab::sim::SimTarget;
use flashlab::targets::real::{EngineChoice, OpenOptions, RealTarget};
use flashlab::targets::{AlignedBuf, Request, Target, TargetError};

use crate::support::{LoopDevice, pattern, random_file, require_loop_devices};

const SIZE: u64 = 32 << 20;
/// The suite writes inside this area only (so a preserving wrapper can
/// declare it); the rest of the target must never change.
const AREA: Range = Range {
    offset: 4 << 20,
    len: 16 << 20,
};

/// Reads the target's bytes by a path that shares nothing with the target
/// under test: buffered reads on a new descriptor for a real target, a fresh
/// buffer through the target itself for the simulator.
enum Independent {
    Path(PathBuf),
    Itself,
}

impl Independent {
    fn read(&self, t: &mut dyn Target, offset: u64, len: usize) -> Vec<u8> {
        match self {
            Independent::Path(p) => {
                let f = std::fs::File::open(p).unwrap();
                let mut out = vec![0u8; len];
                f.read_exact_at(&mut out, offset).unwrap();
                out
            }
            Independent::Itself => {
                let mut b = AlignedBuf::new(len);
                let c = t.run(&[Request::read(offset, len as u32, 0)], 1, &mut b).unwrap();
                assert!(c[0].errno.is_none());
                b.as_slice().to_vec()
            }
        }
    }
}

/// Request sizes, mixed (multiples of 4 KiB, so 4096-byte-sector devices
/// take them too).
const SIZES: [u32; 6] = [4096, 8192, 12288, 65536, 4096, 1 << 20];

/// A batch of writes with mixed sizes at scattered, non-overlapping offsets
/// in AREA, laid out back to back in the buffer; returns the requests and
/// buffer length.
fn scattered_writes(seed: u64, count: usize) -> (Vec<Request>, usize) {
    let mut reqs = Vec::new();
    let (mut at, mut buf_at) = (AREA.offset + (seed % 7) * 4096, 0usize);
    for i in 0..count {
        let len = SIZES[(i + seed as usize) % SIZES.len()];
        if at + u64::from(len) > AREA.end() {
            break;
        }
        reqs.push(Request::write(at, len, buf_at));
        buf_at += len as usize;
        // Leave a gap, so neighbours are not one sequential stream.
        at += u64::from(len) + 4096 * (1 + (i as u64 * 7 + seed) % 5);
    }
    (reqs, buf_at)
}

fn as_reads(writes: &[Request]) -> Vec<Request> {
    writes
        .iter()
        .map(|w| Request::read(w.offset, w.len, w.buf_offset))
        .collect()
}

/// Write `reqs` from `buf` at `qd`, then check: one completion per request,
/// no errors; read back through the target into a fresh buffer (at `qd`)
/// and through the independent path, both equal to what was written.
fn write_and_check(
    t: &mut dyn Target,
    ind: &Independent,
    reqs: &[Request],
    qd: usize,
    buf: &mut AlignedBuf,
    what: &str,
) {
    let done = t.run(reqs, qd, buf).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(done.len(), reqs.len(), "{what}: one completion per request");
    assert!(done.iter().all(|c| c.errno.is_none()), "{what}: a request failed");
    let mut back = AlignedBuf::new(buf.len());
    let done = t.run(&as_reads(reqs), qd, &mut back).unwrap();
    assert!(done.iter().all(|c| c.errno.is_none()));
    for r in reqs {
        let span = r.buf_offset..r.buf_offset + r.len as usize;
        assert!(
            back.as_slice()[span.clone()] == buf.as_slice()[span.clone()],
            "{what}: read back through the target differs at {} (qd {qd})",
            r.offset
        );
        assert!(
            ind.read(t, r.offset, r.len as usize) == buf.as_slice()[span],
            "{what}: the independent read differs at {} (qd {qd})",
            r.offset
        );
    }
}

/// The whole suite on one target. `outside` is a copy of the bytes outside
/// AREA (checked unchanged at the end).
fn suite(t: &mut dyn Target, ind: &Independent, name: &str) {
    let size = t.description().size_bytes;
    let outside_before = (
        ind.read(t, 0, AREA.offset as usize),
        ind.read(t, AREA.end(), (size - AREA.end()) as usize),
    );
    let mut seed = 1u64;
    // 1. A fresh buffer per batch, every queue depth from 1 to 64.
    for qd in [1usize, 2, 3, 4, 8, 16, 32, 64] {
        let (reqs, len) = scattered_writes(seed, 24);
        let mut buf = AlignedBuf::new(len);
        buf.as_mut_slice().copy_from_slice(&pattern(len, seed));
        write_and_check(t, ind, &reqs, qd, &mut buf, &format!("{name} fresh buffer"));
        seed += 1;
    }
    // 2. One buffer reused, its contents changed between batches.
    let (reqs, len) = scattered_writes(seed, 24);
    let mut buf = AlignedBuf::new(len);
    for qd in [1usize, 8, 64, 4] {
        buf.as_mut_slice().copy_from_slice(&pattern(len, seed * 31));
        write_and_check(t, ind, &reqs, qd, &mut buf, &format!("{name} reused buffer"));
        seed += 1;
    }
    // 3. Buffers freed and reallocated between batches, same size. Above
    //    glibc's largest mmap threshold (32 MiB on 64-bit), each is its own
    //    mapping, unmapped when freed; the next one usually gets the same
    //    address with new pages. Reads must land in the new buffer, writes
    //    come from it.
    for round in 0..6u64 {
        let (reqs, len) = scattered_writes(seed, 16);
        let len = len.max(40 << 20);
        let want = pattern(len, seed ^ 0xabc);
        let mut w = AlignedBuf::new(len);
        w.as_mut_slice().copy_from_slice(&want);
        t.run(&reqs, 8, &mut w).unwrap();
        drop(w);
        let mut r = AlignedBuf::new(len);
        let done = t.run(&as_reads(&reqs), 8, &mut r).unwrap();
        assert!(done.iter().all(|c| c.errno.is_none()));
        for q in &reqs {
            let span = q.buf_offset..q.buf_offset + q.len as usize;
            assert!(
                r.as_slice()[span.clone()] == want[span.clone()],
                "{name}: round {round}: a read into a reallocated buffer missed it at {}",
                q.offset
            );
            assert!(ind.read(t, q.offset, q.len as usize) == want[span]);
        }
        drop(r);
        seed += 1;
    }
    // 4. Reads after writes in one batch at depth 1 (in order), and a read
    //    of bytes no batch wrote still gives the original.
    let off = AREA.offset + (8 << 20);
    let mut buf = AlignedBuf::new(8192);
    buf.as_mut_slice()[..4096].copy_from_slice(&pattern(4096, 99));
    let done = t
        .run(
            &[Request::write(off, 4096, 0), Request::read(off, 4096, 4096)],
            1,
            &mut buf,
        )
        .unwrap();
    assert!(done.iter().all(|c| c.errno.is_none()));
    assert_eq!(
        buf.as_slice()[..4096],
        buf.as_slice()[4096..],
        "{name}: read after write in one batch"
    );
    // 5. What every target refuses before any I/O.
    let lb = t.description().logical_block_size;
    let mut b = AlignedBuf::new(8192);
    assert!(matches!(
        t.run(&[Request::read(size - u64::from(lb), 2 * lb, 0)], 1, &mut b),
        Err(TargetError::PastEnd { .. })
    ));
    assert!(matches!(
        t.run(&[Request::read(100, 4096, 0)], 1, &mut b),
        Err(TargetError::Unaligned { .. })
    ));
    assert!(matches!(
        t.run(&[Request::read(0, 16384, 0)], 1, &mut b),
        Err(TargetError::BufferTooSmall { .. })
    ));
    assert!(matches!(
        t.run(&[Request::read(0, 4096, 0)], 0, &mut b),
        Err(TargetError::ZeroQueueDepth)
    ));
    // Nothing outside the area changed.
    let outside_after = (
        ind.read(t, 0, AREA.offset as usize),
        ind.read(t, AREA.end(), (size - AREA.end()) as usize),
    );
    assert!(
        outside_before == outside_after,
        "{name}: bytes outside the written area changed"
    );
}

/// The suite through a preserving wrapper over `inner`, with a journal in
/// `jdir` when given; afterwards every byte of the area is back.
fn suite_preserving(inner: Box<dyn Target>, ind: &Independent, name: &str, jdir: Option<&Path>) {
    let original = {
        let mut t = inner;
        let o = ind.read(t.as_mut(), AREA.offset, AREA.len as usize);
        (t, o)
    };
    let (inner, original) = original;
    let size = inner.description().size_bytes;
    let header = Header {
        target: name.into(),
        size_bytes: size,
        identity: Identity::default(),
        created_unix: 0,
        created_ns: 0,
        sequence: 0,
        pid: std::process::id(),
        ranges: vec![[AREA.offset, AREA.len]],
        total_bytes: AREA.len,
    };
    let mut p = PreservingTarget::new(inner, vec![AREA], jdir.map(|d| (d, header, Registry::system()))).unwrap();
    suite(&mut p, ind, &format!("preserving {name}"));
    // A write outside the declared area is refused before any I/O.
    let mut b = AlignedBuf::new(4096);
    assert!(matches!(
        p.run(&[Request::write(0, 4096, 0)], 1, &mut b),
        Err(TargetError::Undeclared { offset: 0, .. })
    ));
    let (mut t, out) = p.finish();
    let out = out.unwrap();
    if jdir.is_some() {
        assert!(out.bytes_restored > 0);
        assert!(
            ind.read(t.as_mut(), AREA.offset, AREA.len as usize) == original,
            "{name}: restored"
        );
    }
}

fn open_real(path: &Path, engine: EngineChoice) -> Box<dyn Target> {
    let t = RealTarget::open(
        path,
        &path.display().to_string(),
        OpenOptions {
            write: true,
            exclusive: true,
            engine,
        },
    )
    .unwrap();
    Box::new(t)
}

fn engines() -> Vec<EngineChoice> {
    let mut e = vec![EngineChoice::Psync];
    match io_uring::IoUring::new(4) {
        Ok(_) => e.push(EngineChoice::IoUring),
        Err(why) => crate::support::skip(&format!("io_uring: {why}")),
    }
    e
}

fn real_cases(path: &Path) {
    let ind = Independent::Path(path.to_path_buf());
    for engine in engines() {
        let name = format!("{} {engine:?}", path.display());
        let mut t = open_real(path, engine);
        suite(t.as_mut(), &ind, &name);
        drop(t);
        let jdir = tempfile::tempdir().unwrap();
        suite_preserving(open_real(path, engine), &ind, &name, Some(jdir.path()));
        assert_eq!(std::fs::read_dir(jdir.path()).unwrap().count(), 0, "journal deleted");
    }
}

#[test]
fn every_engine_conforms_on_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", SIZE as usize, 41);
    real_cases(&f);
}

#[test]
fn every_engine_conforms_on_a_loop_device() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", SIZE as usize, 42);
    let dev = LoopDevice::attach(&f, None);
    real_cases(&dev.path);
    // And with 4096-byte logical blocks.
    let f4 = random_file(dir.path(), "t4.img", SIZE as usize, 43);
    let dev4 = LoopDevice::attach(&f4, Some(4096));
    real_cases(&dev4.path);
}

#[test]
fn the_simulator_conforms_alone_and_preserved() {
    let make = || SimTarget::from_spec("sim:demo,capacity=32M,au_size=1M,seed=3,jitter=0.05").unwrap();
    let mut t = make();
    suite(&mut t, &Independent::Itself, "sim");
    let jdir = tempfile::tempdir().unwrap();
    suite_preserving(Box::new(make()), &Independent::Itself, "sim", Some(jdir.path()));
    suite_preserving(Box::new(make()), &Independent::Itself, "sim", None);
}

/// A batch whose submission fails half-way (injected: the kernel refuses
/// the third request) returns an error, and leaves nothing behind that
/// points into its buffer: the request that never reached the kernel must
/// not be sent by the next batch, into a buffer that was freed and reused.
/// Before the fix it was: the next batch sent it, writing the new buffer's
/// bytes over data the failed batch never wrote.
#[test]
fn a_failed_io_uring_submission_leaves_no_request_behind() {
    if !engines().contains(&EngineChoice::IoUring) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", SIZE as usize, 44);
    let original = std::fs::read(&f).unwrap();
    let mut t = RealTarget::open(
        &f,
        "t.img",
        OpenOptions {
            write: true,
            exclusive: true,
            engine: EngineChoice::IoUring,
        },
    )
    .unwrap();
    let (writes, len) = scattered_writes(5, 8);
    let mut buf = AlignedBuf::new(len);
    buf.as_mut_slice().fill(0xa5);
    t.inject_submit_failure(2);
    let e = t.run(&writes, 8, &mut buf).unwrap_err();
    assert!(e.to_string().contains("injected"), "{e}");
    drop(buf);
    // Reads elsewhere, in a buffer that may reuse the freed one's memory.
    let reads: Vec<Request> = (0..8u64)
        .map(|i| Request::read(AREA.end() + i * 65536, 65536, i as usize * 65536))
        .collect();
    let mut other = AlignedBuf::new(8 * 65536);
    other.as_mut_slice().fill(0x5a);
    let done = t.run(&reads, 8, &mut other).unwrap();
    assert_eq!(done.len(), 8);
    assert!(done.iter().all(|c| c.errno.is_none()));
    for r in &reads {
        let at = r.offset as usize;
        assert!(
            other.as_slice()[r.buf_offset..r.buf_offset + 65536] == original[at..at + 65536],
            "the reads got the file's bytes"
        );
    }
    assert_eq!(t.last_engine, Some(EngineChoice::IoUring));
    drop(t);
    let now = std::fs::read(&f).unwrap();
    // The first two requests reached the kernel and may have landed; none
    // after them did, and nothing outside the batch changed.
    for w in &writes[2..] {
        let span = w.offset as usize..(w.offset + u64::from(w.len)) as usize;
        assert!(
            now[span.clone()] == original[span],
            "bytes {}.. were written by a request of the failed batch",
            w.offset
        );
    }
    let touched = |i: usize| {
        writes[..2]
            .iter()
            .any(|w| (w.offset as usize..(w.offset + u64::from(w.len)) as usize).contains(&i))
    };
    assert!((0..now.len()).step_by(512).all(|i| touched(i) || now[i] == original[i]));
}

// The real engines across each other.

fn io_uring_works() -> bool {
    io_uring::IoUring::new(4).is_ok()
}

/// Write 64 scattered 4 KiB blocks with `write_engine` at depth 8, read them back
/// with the other engine, compare, and check the untouched bytes are intact.
fn roundtrip(path: &std::path::Path, spec: &str) {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    for (write_engine, read_engine) in [
        (EngineChoice::IoUring, EngineChoice::Psync),
        (EngineChoice::Psync, EngineChoice::IoUring),
    ] {
        let mut t = RealTarget::open(
            path,
            spec,
            OpenOptions {
                write: true,
                exclusive: true,
                engine: write_engine,
            },
        )
        .unwrap();
        let size = if size == 0 { t.description().size_bytes } else { size };
        let before = {
            let mut buf = AlignedBuf::new(size as usize);
            let reqs: Vec<_> = (0..size / 65536)
                .map(|i| Request::read(i * 65536, 65536, (i * 65536) as usize))
                .collect();
            let c = t.run(&reqs, 1, &mut buf).unwrap();
            assert!(c.iter().all(|c| c.errno.is_none()));
            buf.as_slice().to_vec()
        };
        let data = pattern(64 * 4096, size ^ write_engine as u64);
        let mut buf = AlignedBuf::new(data.len());
        buf.as_mut_slice().copy_from_slice(&data);
        // Every 3rd 4 KiB block, so writes are not contiguous.
        let offsets: Vec<u64> = (0..64u64).map(|i| i * 3 * 4096).collect();
        let reqs: Vec<_> = offsets
            .iter()
            .enumerate()
            .map(|(i, &o)| Request::write(o, 4096, i * 4096))
            .collect();
        let done = t.run(&reqs, 8, &mut buf).unwrap();
        assert_eq!(done.len(), 64);
        assert!(done.iter().all(|c| c.errno.is_none() && c.duration_ns > 0));
        if write_engine == EngineChoice::IoUring && io_uring_works() {
            assert_eq!(t.last_engine, Some(EngineChoice::IoUring));
        }
        assert!(t.device_time_ns() > 0);
        drop(t);

        let mut r = RealTarget::open(
            path,
            spec,
            OpenOptions {
                write: false,
                exclusive: false,
                engine: read_engine,
            },
        )
        .unwrap();
        let mut back = AlignedBuf::new(64 * 4096);
        let reqs: Vec<_> = offsets
            .iter()
            .enumerate()
            .map(|(i, &o)| Request::read(o, 4096, i * 4096))
            .collect();
        let done = r.run(&reqs, 4, &mut back).unwrap();
        assert!(done.iter().all(|c| c.errno.is_none()));
        assert_eq!(back.as_slice(), &data[..], "read back what {write_engine:?} wrote");
        // A block between two written ones still holds its original bytes.
        let mut gap = AlignedBuf::new(4096);
        r.run(&[Request::read(4096, 4096, 0)], 1, &mut gap).unwrap();
        assert_eq!(gap.as_slice(), &before[4096..8192]);
        // Writes on a read-only target and reads past the end are refused up front.
        assert!(matches!(
            r.run(&[Request::write(0, 4096, 0)], 1, &mut gap),
            Err(TargetError::ReadOnly)
        ));
        assert!(matches!(
            r.run(&[Request::read(size - 512, 4096, 0)], 1, &mut gap),
            Err(TargetError::PastEnd { .. })
        ));
    }
}

#[test]
fn engines_roundtrip_on_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 2 << 20, 9);
    roundtrip(&f, f.to_str().unwrap());
}

#[test]
fn engines_roundtrip_on_a_loop_device() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 2 << 20, 10);
    let dev = LoopDevice::attach(&f, None);
    roundtrip(&dev.path, dev.as_str());
}

#[test]
fn unaligned_requests_are_refused_on_a_4k_device() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 1 << 20, 11);
    let dev = LoopDevice::attach(&f, Some(4096));
    let mut t = RealTarget::open(&dev.path, dev.as_str(), OpenOptions::default()).unwrap();
    assert_eq!(t.description().logical_block_size, 4096);
    let mut buf = AlignedBuf::new(4096);
    assert!(matches!(
        t.run(&[Request::read(512, 512, 0)], 1, &mut buf),
        Err(TargetError::Unaligned { align: 4096, .. })
    ));
    assert!(t.run(&[Request::read(4096, 4096, 0)], 1, &mut buf).is_ok());
}

#[test]
fn exclusive_open_of_a_mounted_device_is_busy() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "fs.img", 16 << 20, 12);
    let dev = LoopDevice::attach(&f, None);
    let _m = crate::support::Mounted::ext4(&dev.path, &dir.path().join("m"));
    let r = RealTarget::open(
        &dev.path,
        dev.as_str(),
        OpenOptions {
            write: true,
            exclusive: true,
            engine: EngineChoice::Auto,
        },
    );
    assert!(matches!(r, Err(TargetError::Busy { .. })), "{:?}", r.err());
}
