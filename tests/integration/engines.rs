//! The real-device side of the Target seam: both engines write and read back the
//! right bytes at the right offsets, on a file and on a loop device.

use flashlab::target::real::{EngineChoice, OpenOptions, RealTarget};
use flashlab::target::{AlignedBuf, Request, Target, TargetError};

use crate::support::{LoopDevice, pattern, random_file, require_loop_devices};

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
