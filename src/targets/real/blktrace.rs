//! The kernel's block tracing of a real device, as blktrace drives it:
//! `BLKTRACESETUP` on the device names a directory under debugfs
//! (`block/NAME/`) with one relay file per CPU (`trace0`..), `BLKTRACESTART`
//! starts the events, and the relay files hold them in blktrace's binary
//! format, which is copied as it is to `PREFIX.blktrace.CPU`: blkparse reads
//! the copy, and so does `life`. `BLKTRACESTOP` and `BLKTRACETEARDOWN` end
//! it; [`Tracing`]'s drop does too, so no path out of a capture leaves the
//! kernel tracing. The device is opened read-only: tracing never writes it.
//! Facts: `docs/notes/trace-formats.md` ("blktrace binary"), the kernel's
//! `include/uapi/linux/blktrace_api.h` and `kernel/trace/blktrace.c`.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where debugfs is mounted on every distribution that mounts it.
pub const DEBUGFS: &str = "/sys/kernel/debug";

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

/// Why a capture could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot open {path} read-only: {why}")]
    Open { path: String, why: std::io::Error },
    #[error("{path} cannot be traced: {why}")]
    Setup { path: String, why: std::io::Error },
    #[error("debugfs is not mounted at {DEBUGFS} and could not be: {0}")]
    Debugfs(std::io::Error),
    #[error("{path}: {why}")]
    Output { path: String, why: std::io::Error },
    #[error("reading the kernel's trace: {0}")]
    Relay(std::io::Error),
}

impl CaptureError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        let other = "blktrace (Debian's package blktrace) or biosnoop (bpfcc-tools) record the same; \
                     flashlab life reads both";
        match self {
            CaptureError::Open { .. } => format!("run it as root, on a block device; or use {other}"),
            CaptureError::Setup { why, .. } => match why.raw_os_error() {
                Some(libc::EBUSY) => "another trace of this device is running (blktrace?): stop it first".into(),
                Some(libc::ENOTTY) | Some(libc::EINVAL) => {
                    "give a block device (/dev/mmcblk0, /dev/sdb), not a file or a partition's mount point".into()
                }
                _ => format!("the kernel needs CONFIG_BLK_DEV_IO_TRACE; or use {other}"),
            },
            CaptureError::Debugfs(_) => format!("mount it (`mount -t debugfs none {DEBUGFS}`) as root; or use {other}"),
            CaptureError::Output { .. } => "give -o a path in a directory you can write".into(),
            CaptureError::Relay(_) => "the capture so far is kept; run it again to go on".into(),
        }
    }
}

/// One CPU's relay file and the copy it goes to.
struct Cpu {
    relay: File,
    out: File,
}

/// A running capture.
pub struct Tracing {
    device: File,
    cpus: Vec<Cpu>,
    /// Output files, in CPU order.
    pub outputs: Vec<PathBuf>,
    /// debugfs was mounted by this capture, and is unmounted after it.
    mounted: bool,
    /// Bytes copied so far.
    pub bytes: u64,
    done: bool,
}

fn debugfs_mounted() -> bool {
    std::fs::read_to_string("/proc/mounts").is_ok_and(|m| {
        m.lines()
            .any(|l| l.split_whitespace().nth(1) == Some(DEBUGFS) && l.starts_with("debugfs "))
    }) || Path::new(DEBUGFS).join("block").is_dir()
}

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

impl Tracing {
    /// Start tracing `path` (a block device), copying to
    /// `PREFIX.blktrace.CPU`. Mounts debugfs where it is not mounted.
    pub fn start(path: &Path, prefix: &Path) -> Result<Tracing, CaptureError> {
        let shown = path.display().to_string();
        let device = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|why| CaptureError::Open {
                path: shown.clone(),
                why,
            })?;
        let mut mounted = false;
        if !debugfs_mounted() {
            rustix::mount::mount("debugfs", DEBUGFS, "debugfs", rustix::mount::MountFlags::empty(), None)
                .map_err(|e| CaptureError::Debugfs(e.into()))?;
            mounted = true;
        }
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
        let rc = unsafe { libc::ioctl(device.as_raw_fd(), BLKTRACESETUP, &mut setup as *mut Setup) };
        let mut tracing = Tracing {
            device,
            cpus: Vec::new(),
            outputs: Vec::new(),
            mounted,
            bytes: 0,
            done: rc != 0,
        };
        if rc != 0 {
            let why = std::io::Error::last_os_error();
            tracing.unmount();
            return Err(CaptureError::Setup { path: shown, why });
        }
        let name_len = setup.name.iter().position(|&b| b == 0).unwrap_or(32);
        let name = String::from_utf8_lossy(&setup.name[..name_len]).into_owned();
        let dir = Path::new(DEBUGFS).join("block").join(&name);
        tracing.open_cpus(&dir, prefix)?;
        plain_ioctl(&tracing.device, BLKTRACESTART).map_err(|why| CaptureError::Setup { path: shown, why })?;
        Ok(tracing)
    }

    fn open_cpus(&mut self, dir: &Path, prefix: &Path) -> Result<(), CaptureError> {
        let mut cpus: Vec<u32> = std::fs::read_dir(dir)
            .map_err(CaptureError::Relay)?
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("trace")?.parse().ok())
            .collect();
        cpus.sort_unstable();
        for cpu in cpus {
            let relay = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(dir.join(format!("trace{cpu}")))
                .map_err(CaptureError::Relay)?;
            let path = PathBuf::from(format!("{}.blktrace.{cpu}", prefix.display()));
            if let Some(what) = crate::files::not_a_regular_file(&path) {
                return Err(CaptureError::Output {
                    path: path.display().to_string(),
                    why: std::io::Error::other(format!("is {what}, not a regular file")),
                });
            }
            let out = File::create(&path).map_err(|why| CaptureError::Output {
                path: path.display().to_string(),
                why,
            })?;
            self.cpus.push(Cpu { relay, out });
            self.outputs.push(path);
        }
        Ok(())
    }

    /// Copy what the kernel has traced since the last drain: the new bytes
    /// of each CPU, in CPU order.
    pub fn drain(&mut self, mut seen: impl FnMut(usize, &[u8])) -> Result<u64, CaptureError> {
        let mut buf = vec![0u8; 256 << 10];
        let mut total = 0;
        for (i, cpu) in self.cpus.iter_mut().enumerate() {
            loop {
                let n = match cpu.relay.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(CaptureError::Relay(e)),
                };
                cpu.out.write_all(&buf[..n]).map_err(CaptureError::Relay)?;
                seen(i, &buf[..n]);
                total += n as u64;
            }
        }
        self.bytes += total;
        Ok(total)
    }

    /// Stop tracing, copy the rest, and tear the trace down.
    pub fn stop(mut self, seen: impl FnMut(usize, &[u8])) -> Result<u64, CaptureError> {
        let _ = plain_ioctl(&self.device, BLKTRACESTOP);
        let rest = self.drain(seen);
        let synced = self.cpus.iter().try_for_each(|c| c.out.sync_all());
        self.finish();
        rest?;
        synced.map_err(CaptureError::Relay)?;
        Ok(self.bytes)
    }

    fn finish(&mut self) {
        if !self.done {
            let _ = plain_ioctl(&self.device, BLKTRACESTOP);
            let _ = plain_ioctl(&self.device, BLKTRACETEARDOWN);
            self.done = true;
        }
        self.unmount();
    }

    fn unmount(&mut self) {
        if self.mounted {
            self.cpus.clear();
            let _ = rustix::mount::unmount(DEBUGFS, rustix::mount::UnmountFlags::empty());
            self.mounted = false;
        }
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        self.finish();
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
