//! The kernel's device events (uevents), read from its netlink socket: a
//! disk added or removed, a card put into a reader or pulled out of it
//! (`change` with `DISK_MEDIA_CHANGE=1`), a loop device resized. Read from
//! the kernel itself, not from udev, so a station needs no udev daemon:
//! `NETLINK_KOBJECT_UEVENT`, multicast group 1 (Linux kobject uevents;
//! docs/SOURCES.md).

use std::time::Duration;

use rustix::net::netlink::{self, SocketAddrNetlink};
use rustix::net::{self, AddressFamily, SocketType};

/// The kernel's own multicast group (udev rebroadcasts on group 2, which
/// needs its daemon).
const KERNEL_GROUP: u32 = 1;
/// The largest uevent the kernel sends is `UEVENT_BUFFER_SIZE` (2048)
/// bytes of `KEY=VALUE` text (Linux kobject uevents; docs/SOURCES.md);
/// twice that leaves room.
const EVENT_MAX: usize = 4096;

/// What happened to a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uevent {
    /// "add", "remove", "change", ...
    pub action: String,
    /// "block" for disks and partitions.
    pub subsystem: String,
    /// "disk" or "partition".
    pub devtype: String,
    /// The name under /dev: "sdb", "mmcblk0", "loop3".
    pub devname: String,
}

impl Uevent {
    /// One datagram: `ACTION@DEVPATH` then `KEY=VALUE` fields, each ended
    /// by a NUL. None for anything else (udev's own messages start with
    /// "libudev").
    pub fn parse(bytes: &[u8]) -> Option<Uevent> {
        let mut fields = bytes.split(|&b| b == 0).map(String::from_utf8_lossy);
        let head = fields.next()?;
        head.split_once('@')?;
        let mut e = Uevent {
            action: String::new(),
            subsystem: String::new(),
            devtype: String::new(),
            devname: String::new(),
        };
        for f in fields {
            if let Some((k, v)) = f.split_once('=') {
                let slot = match k {
                    "ACTION" => &mut e.action,
                    "SUBSYSTEM" => &mut e.subsystem,
                    "DEVTYPE" => &mut e.devtype,
                    "DEVNAME" => &mut e.devname,
                    _ => continue,
                };
                *slot = v.to_string();
            }
        }
        (!e.action.is_empty()).then_some(e)
    }

    /// A whole disk's event: the only ones a station acts on.
    pub fn is_disk(&self) -> bool {
        self.subsystem == "block" && self.devtype == "disk" && !self.devname.is_empty()
    }
}

/// The kernel's uevent socket.
pub struct Uevents {
    socket: rustix::fd::OwnedFd,
}

impl Uevents {
    /// Listen from now on. Fails where the kernel has no netlink (a
    /// container without it) or the caller may not listen.
    pub fn open() -> std::io::Result<Uevents> {
        let socket = net::socket_with(
            AddressFamily::NETLINK,
            SocketType::DGRAM,
            net::SocketFlags::CLOEXEC,
            Some(netlink::KOBJECT_UEVENT),
        )?;
        net::bind(&socket, &SocketAddrNetlink::new(0, KERNEL_GROUP))?;
        Ok(Uevents { socket })
    }

    /// The next event, waiting at most `wait`; None when none came.
    pub fn next(&self, wait: Duration) -> std::io::Result<Option<Uevent>> {
        net::sockopt::set_socket_timeout(&self.socket, net::sockopt::Timeout::Recv, Some(wait))?;
        let mut buf = [0u8; EVENT_MAX];
        match net::recv(&self.socket, &mut buf[..], net::RecvFlags::empty()) {
            Ok((n, _)) => Ok(Uevent::parse(&buf[..n.min(EVENT_MAX)])),
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A card put into a reader, as this kernel sent it for a loop device
    /// whose size changed.
    #[test]
    fn a_media_change_is_a_disk_event() {
        let raw = b"change@/devices/virtual/block/loop0\0ACTION=change\0DEVPATH=/devices/virtual/block/loop0\0\
SUBSYSTEM=block\0DISK_MEDIA_CHANGE=1\0MAJOR=7\0MINOR=0\0DEVNAME=loop0\0DEVTYPE=disk\0DISKSEQ=1232\0SEQNUM=5\0";
        let e = Uevent::parse(raw).unwrap();
        assert_eq!(
            (e.action.as_str(), e.devname.as_str(), e.is_disk()),
            ("change", "loop0", true)
        );
        let part = b"add@/devices/x/block/sdb/sdb1\0ACTION=add\0SUBSYSTEM=block\0DEVNAME=sdb1\0DEVTYPE=partition\0";
        assert!(!Uevent::parse(part).unwrap().is_disk());
        assert_eq!(Uevent::parse(b"libudev\0\xfe\xed"), None);
        assert_eq!(Uevent::parse(b""), None);
    }
}
