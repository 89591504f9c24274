//! blktrace's way in: `BLKTRACESETUP` on the device names a directory under
//! debugfs (`block/NAME/`) with one relay file per CPU (`trace0`..),
//! `BLKTRACESTART` starts the events; `BLKTRACESTOP` and `BLKTRACETEARDOWN`
//! end them (the kernel's `include/uapi/linux/blktrace_api.h`,
//! `kernel/trace/blktrace.c`).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::{DEBUGFS, mount_if_missing, per_cpu};

/// `struct blk_user_trace_setup` of `<linux/blktrace_api.h>` (72 bytes:
/// checked against the C header on this machine).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct Setup {
    name: [u8; 32],
    act_mask: u16,
    buf_size: u32,
    buf_nr: u32,
    start_lba: u64,
    end_lba: u64,
    pid: u32,
}

/// The ioctls of `<linux/fs.h>`: `_IOWR(0x12, 115, struct
/// blk_user_trace_setup)` and `_IO(0x12, 116..118)`, as the C header
/// expands them here.
const BLKTRACESETUP: libc::c_ulong = 0xc048_1273;
const BLKTRACESTART: libc::c_ulong = 0x1274;
const BLKTRACESTOP: libc::c_ulong = 0x1275;
const BLKTRACETEARDOWN: libc::c_ulong = 0x1276;

/// Relay buffers: blktrace's defaults (512 KiB, 4 of them a CPU), enough
/// for a busy card between two drains a tenth of a second apart.
const BUF_SIZE: u32 = 512 << 10;
const BUF_NR: u32 = 4;

/// `ioctl(fd, request)` with no argument, or its error.
fn plain_ioctl(device: &File, request: libc::c_ulong) -> std::io::Result<()> {
    // SAFETY: the descriptor is open for the call (borrowed from `device`);
    // these requests take no argument and touch no memory of ours.
    let rc = unsafe { libc::ioctl(device.as_raw_fd(), request) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A trace set up on a device; dropped, it is stopped and torn down, and
/// debugfs unmounted if it mounted it.
pub(super) struct Relay {
    device: File,
    mounted: bool,
}

impl Relay {
    /// Set up and start; each CPU's relay file, by CPU number.
    pub(super) fn start(device: File, shown: &str) -> Result<(Relay, Vec<(u32, File)>), String> {
        let mounted = mount_if_missing("debugfs", DEBUGFS, "block").map_err(|e| format!("mounting debugfs: {e}"))?;
        let mut relay = Relay { device, mounted };
        let mut setup = Setup {
            name: [0; 32],
            // Every category: the reader picks the events it wants.
            act_mask: u16::MAX,
            buf_size: BUF_SIZE,
            buf_nr: BUF_NR,
            start_lba: 0,
            end_lba: 0,
            pid: 0,
        };
        // SAFETY: `setup` is an owned, initialised `struct
        // blk_user_trace_setup` of the kernel's layout, valid for reads and
        // writes for the whole call (the kernel writes the name back); the
        // descriptor is open for the call. On failure `setup` is unused.
        let rc = unsafe { libc::ioctl(relay.device.as_raw_fd(), BLKTRACESETUP, &mut setup as *mut Setup) };
        if rc != 0 {
            let why = std::io::Error::last_os_error();
            // Nothing to tear down: only the mount.
            relay.unmount();
            return Err(format!("{shown}: BLKTRACESETUP: {why}"));
        }
        // From here the drop tears the trace down, on every path.
        let len = setup.name.iter().position(|&b| b == 0).unwrap_or(32);
        let name = String::from_utf8_lossy(&setup.name[..len]).into_owned();
        let dir = Path::new(DEBUGFS).join("block").join(&name);
        let files = per_cpu(&dir, "trace", |cpu| dir.join(format!("trace{cpu}")))
            .map_err(|(path, e)| format!("{}: {e}", path.display()))?;
        plain_ioctl(&relay.device, BLKTRACESTART).map_err(|e| format!("BLKTRACESTART: {e}"))?;
        Ok((relay, files))
    }

    /// Stop the events; what is traced stays readable until the drop.
    pub(super) fn stop_events(&self) {
        let _ = plain_ioctl(&self.device, BLKTRACESTOP);
    }

    fn unmount(&mut self) {
        if std::mem::take(&mut self.mounted) {
            let _ = rustix::mount::unmount(DEBUGFS, rustix::mount::UnmountFlags::empty());
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop_events();
        let _ = plain_ioctl(&self.device, BLKTRACETEARDOWN);
        self.unmount();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setup_struct_has_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<Setup>(), 72);
        assert_eq!(std::mem::offset_of!(Setup, act_mask), 32);
        assert_eq!(std::mem::offset_of!(Setup, buf_size), 36);
        assert_eq!(std::mem::offset_of!(Setup, start_lba), 48);
        assert_eq!(std::mem::offset_of!(Setup, pid), 64);
    }
}
