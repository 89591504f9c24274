//! The loop driver's own answer to what a loop device shows:
//! `LOOP_GET_STATUS64` on the device, which gives the backing file's
//! device and inode (or the backing block device's number) and the offset,
//! never a path.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::{FileKey, Node};

/// `struct loop_info64` of `<linux/loop.h>`, which `LOOP_GET_STATUS64` fills.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// `LOOP_GET_STATUS64` from `<linux/loop.h>`.
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

/// The kernel's `new_decode_dev` (include/linux/kdev_t.h): how
/// `LOOP_GET_STATUS64` encodes device numbers, which differs from the C
/// library's encoding for large minors.
pub(super) fn kernel_decode_dev(dev: u64) -> (u32, u32) {
    let major = ((dev & 0xfff00) >> 8) as u32;
    let minor = ((dev & 0xff) | ((dev >> 12) & 0xfff00)) as u32;
    (major, minor)
}

/// What the kernel says a loop device shows: (backing, offset). None when
/// the device cannot be opened (not root) or is not a loop device.
pub(super) fn loop_status(node: &Path) -> Option<(Node, u64)> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(node)
        .ok()?;
    use std::os::fd::AsRawFd;
    // SAFETY: `info` is an owned, fully initialised `struct loop_info64`
    // of exactly the kernel's layout, valid for writes for the whole call;
    // the descriptor is open for the call (borrowed from `f`, dropped after).
    // On failure the kernel writes nothing and the zeroed value is unused.
    let (rc, info) = unsafe {
        let mut info: LoopInfo64 = std::mem::zeroed();
        let rc = libc::ioctl(f.as_raw_fd(), LOOP_GET_STATUS64, &mut info as *mut LoopInfo64);
        (rc, info)
    };
    if rc != 0 {
        return None;
    }
    let backing = if info.lo_rdevice != 0 {
        let (ma, mi) = kernel_decode_dev(info.lo_rdevice);
        Node::device(ma, mi)
    } else {
        let (ma, mi) = kernel_decode_dev(info.lo_device);
        Node::file(FileKey {
            dev: rustix::fs::makedev(ma, mi),
            ino: info.lo_inode,
        })
    };
    Some((backing, info.lo_offset))
}
