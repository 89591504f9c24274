//! A card pulled out of its reader and put back. A USB card reader keeps
//! its disk when the card goes: the disk shows 0 bytes and every request
//! fails with "no medium" until a card is put back, which is what a batch
//! station sees when a card is pulled mid-test: `/sys/block/<disk>/size`
//! reads 0 (Linux sysfs ABI; docs/SOURCES.md). The emulation does the same
//! on SIGUSR1 (pulled) and SIGUSR2 (put back), keeping the card's data, so
//! a test can pull a card and bring the same card back.

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use super::{EmulateError, Emulation, failed, fs};

/// `LOOP_SET_CAPACITY` from `<linux/loop.h>`: the loop device reads its
/// backing file's size again.
const LOOP_SET_CAPACITY: libc::c_ulong = 0x4C07;

impl Emulation {
    /// Pull the card out (`present` false) or put it back: the FUSE file's
    /// size changes, the kernel forgets the size it cached, and the loop
    /// device takes the new one (its size in sysfs with it).
    pub fn set_present(&self, present: bool) -> Result<(), EmulateError> {
        self.card.present.store(present, Ordering::SeqCst);
        let fix = "run `flashlab emulate --cleanup` once this emulation has stopped";
        if let Some(s) = &self.session {
            s.notifier()
                .inval_inode(fs::CARD_INO, 0, 0)
                .map_err(|e| failed(format!("cannot tell the kernel the card's size changed: {e}"), fix))?;
        }
        let dev = std::fs::File::open(&self.ready.device)
            .map_err(|e| failed(format!("cannot open {}: {e}", self.ready.device), fix))?;
        // SAFETY: LOOP_SET_CAPACITY takes no argument and reads no memory
        // of ours; `dev` is an open descriptor for the whole call.
        let rc = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_SET_CAPACITY, 0) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            return Err(failed(format!("cannot resize {}: {e}", self.ready.device), fix));
        }
        Ok(())
    }

    /// Whether the card is in its slot.
    pub fn present(&self) -> bool {
        self.card.present.load(Ordering::SeqCst)
    }
}
