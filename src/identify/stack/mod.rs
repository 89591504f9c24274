//! What sits on what. The same bytes can be reached under many names: a file
//! and every loop device over it, a loop device over that loop device, a
//! partition and its whole disk, a device-mapper or md volume and its members,
//! a hard link, a file that was deleted while a loop device still holds it.
//! A path is not an identity, so this module describes every block device
//! and file by what it *rests on*, down to the bottom ([`Stack::layers`]):
//! which node (a block device by number, a regular file by device and inode)
//! and where in it (an [`Extent`]). Two names show the same bytes exactly when
//! their layers share a node with overlapping extents. The write path asks
//! here before it claims a target, before it trusts a journal directory not
//! to rest on the target it protects, and to find a pending journal whatever
//! name the next run uses.
//!
//! Loop devices are read with the kernel's own `LOOP_GET_STATUS64` (the
//! backing file's device and inode, or the backing block device's number, and
//! the offset), never from the backing file's path text, which can name a
//! deleted file or a file that really ends in " (deleted)". Without the
//! permission to open a loop device (not root), the path text in sysfs is the
//! fallback.

mod loop_ioctl;
mod users;

pub use users::{Held, file_locked, mounts_of_device, mounts_of_file, persistent_writers, writers_of};

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use self::loop_ioctl::loop_status;
use super::sysfs::Roots;

/// A regular file by identity (device and inode), the way the kernel's loop
/// driver knows its backing file: a path can be renamed or hard-linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FileKey {
    pub dev: u64,
    pub ino: u64,
}

impl FileKey {
    pub fn of(path: &Path) -> Option<FileKey> {
        std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| FileKey {
            dev: m.dev(),
            ino: m.ino(),
        })
    }

    /// The filesystem's device number as `major:minor` (as /proc/PID/maps
    /// shows it).
    fn major_minor(self) -> (u32, u32) {
        (rustix::fs::major(self.dev), rustix::fs::minor(self.dev))
    }
}

/// Something bytes rest on: a block device by number, or a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Node {
    Device { major: u32, minor: u32 },
    File { dev: u64, ino: u64 },
}

impl Node {
    pub fn device(major: u32, minor: u32) -> Node {
        Node::Device { major, minor }
    }

    pub fn file(key: FileKey) -> Node {
        Node::File {
            dev: key.dev,
            ino: key.ino,
        }
    }

    pub fn file_key(self) -> Option<FileKey> {
        match self {
            Node::File { dev, ino } => Some(FileKey { dev, ino }),
            Node::Device { .. } => None,
        }
    }

    /// What `path` is: a regular file by key, a block device by number.
    pub fn of(path: &Path) -> Option<Node> {
        let meta = std::fs::metadata(path).ok()?;
        if meta.is_file() {
            return Some(Node::file(FileKey {
                dev: meta.dev(),
                ino: meta.ino(),
            }));
        }
        meta.file_type()
            .is_block_device()
            .then(|| Node::device(rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev())))
    }
}

/// Where a view's bytes lie in a node: `len` bytes from `start`, or from
/// `start` to wherever when the mapping is not known (a device-mapper or md
/// volume maps its members in ways sysfs does not show).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extent {
    pub start: u64,
    pub len: Option<u64>,
}

impl Extent {
    pub fn whole(len: u64) -> Extent {
        Extent {
            start: 0,
            len: Some(len),
        }
    }

    /// Anywhere in the node: what is not known overlaps everything.
    pub const ANYWHERE: Extent = Extent { start: 0, len: None };

    fn end(&self) -> Option<u64> {
        self.len.and_then(|l| self.start.checked_add(l))
    }

    pub fn overlaps(&self, other: &Extent) -> bool {
        self.end().is_none_or(|e| other.start < e) && other.end().is_none_or(|e| self.start < e)
    }

    /// `[offset, offset + len)` of the view, in the node's bytes.
    pub fn sub(&self, offset: u64, len: u64) -> Extent {
        match self.len {
            None => Extent::ANYWHERE,
            Some(_) => Extent {
                start: self.start.saturating_add(offset),
                len: Some(len),
            },
        }
    }
}

/// One layer of what a view rests on: the node and where the view's bytes
/// lie in it. `bottom` layers rest on nothing further (a regular file, a
/// disk): those are the identities that outlive a loop device's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layer {
    pub node: Node,
    pub extent: Extent,
    #[serde(default)]
    pub bottom: bool,
}

/// Whether two views share bytes: some node under both, with overlapping
/// extents.
pub fn share_bytes(a: &[Layer], b: &[Layer]) -> bool {
    a.iter()
        .any(|x| b.iter().any(|y| x.node == y.node && x.extent.overlaps(&y.extent)))
}

/// An attached loop device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopDevice {
    /// `/dev/loop3`.
    pub node: PathBuf,
    pub major: u32,
    pub minor: u32,
    /// What it shows: a regular file by key or a block device by number
    /// (None when neither the kernel nor sysfs would say).
    pub backing: Option<Node>,
    /// The backing path as the kernel shows it, for messages (it may name a
    /// deleted file).
    pub backing_path: Option<PathBuf>,
    /// Where in the backing its byte 0 lies (`losetup -o`).
    pub offset: u64,
}

/// A block device as sysfs shows it.
#[derive(Debug, Clone)]
struct Block {
    major: u32,
    minor: u32,
    node: PathBuf,
    size_bytes: u64,
    /// For a partition: its whole disk and where it starts in it.
    partition_of: Option<((u32, u32), u64)>,
    /// Members of a device-mapper or md volume.
    slaves: Vec<(u32, u32)>,
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim_end_matches('\n').to_string())
}

fn read_u64(path: &Path) -> Option<u64> {
    read_trimmed(path)?.trim().parse().ok()
}

fn major_minor(text: &str) -> Option<(u32, u32)> {
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// A snapshot of the block devices, loop devices and what they rest on.
#[derive(Debug, Clone)]
pub struct Stack {
    roots: Roots,
    blocks: Vec<Block>,
    pub loops: Vec<LoopDevice>,
}

/// Stacks are shallow; the bound only guards against a cycle in a damaged
/// or synthetic sysfs.
const MAX_LAYERS: usize = 256;

impl Stack {
    /// Read every block device (partitions included) and loop device.
    pub fn read(roots: &Roots) -> Stack {
        let mut blocks = Vec::new();
        let mut loops = Vec::new();
        let entries = std::fs::read_dir(roots.sys.join("dev/block"))
            .map(|d| d.filter_map(Result::ok).collect::<Vec<_>>())
            .unwrap_or_default();
        for e in entries {
            let Some((major, minor)) = major_minor(&e.file_name().to_string_lossy()) else {
                continue;
            };
            let Ok(dir) = std::fs::canonicalize(e.path()) else {
                continue;
            };
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let node = roots.dev.join(&name);
            let size_bytes = read_u64(&dir.join("size")).unwrap_or(0).saturating_mul(512);
            let partition_of = if dir.join("partition").exists() {
                dir.parent()
                    .and_then(|p| read_trimmed(&p.join("dev")))
                    .as_deref()
                    .and_then(major_minor)
                    .map(|whole| (whole, read_u64(&dir.join("start")).unwrap_or(0).saturating_mul(512)))
            } else {
                None
            };
            let slaves = std::fs::read_dir(dir.join("slaves"))
                .map(|d| {
                    d.filter_map(Result::ok)
                        .filter_map(|s| read_trimmed(&s.path().join("dev")).as_deref().and_then(major_minor))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(text) = read_trimmed(&dir.join("loop/backing_file")) {
                let (backing, offset) = match loop_status(&node) {
                    Some((b, o)) => (Some(b), o),
                    // Not root: the path text, which a deleted file or a
                    // name ending in " (deleted)" makes ambiguous.
                    None => (
                        Node::of(Path::new(&text)),
                        read_u64(&dir.join("loop/offset")).unwrap_or(0),
                    ),
                };
                loops.push(LoopDevice {
                    node: node.clone(),
                    major,
                    minor,
                    backing,
                    backing_path: Some(PathBuf::from(text)),
                    offset,
                });
            }
            blocks.push(Block {
                major,
                minor,
                node,
                size_bytes,
                partition_of,
                slaves,
            });
        }
        blocks.sort_by_key(|b| (b.major, b.minor));
        loops.sort_by(|a, b| a.node.cmp(&b.node));
        Stack {
            roots: roots.clone(),
            blocks,
            loops,
        }
    }

    fn block(&self, major: u32, minor: u32) -> Option<&Block> {
        self.blocks.iter().find(|b| (b.major, b.minor) == (major, minor))
    }

    /// What a node rests on directly, and where its byte 0 lies there
    /// (None: the mapping is not known).
    fn below(&self, node: Node) -> Vec<(Node, Option<u64>)> {
        let Node::Device { major, minor } = node else {
            return Vec::new();
        };
        let Some(b) = self.block(major, minor) else {
            return Vec::new();
        };
        if let Some(((ma, mi), start)) = b.partition_of {
            return vec![(Node::device(ma, mi), Some(start))];
        }
        if let Some(l) = self.loops.iter().find(|l| (l.major, l.minor) == (major, minor)) {
            return l.backing.map(|n| vec![(n, Some(l.offset))]).unwrap_or_default();
        }
        b.slaves.iter().map(|&(ma, mi)| (Node::device(ma, mi), None)).collect()
    }

    /// Everything a view of `node` (its first `len` bytes) rests on, the node
    /// itself first, each with where the view's bytes lie in it.
    pub fn layers(&self, node: Node, len: u64) -> Vec<Layer> {
        let mut out: Vec<Layer> = Vec::new();
        let mut todo = vec![(node, Extent::whole(len))];
        while let Some((n, e)) = todo.pop() {
            if out.len() >= MAX_LAYERS || out.iter().any(|l| l.node == n && l.extent == e) {
                continue;
            }
            let below = self.below(n);
            out.push(Layer {
                node: n,
                extent: e,
                bottom: below.is_empty(),
            });
            for (b, offset) in below {
                let ext = match offset {
                    Some(o) => Extent {
                        start: e.start.saturating_add(o),
                        len: e.len,
                    },
                    None => Extent::ANYWHERE,
                };
                todo.push((b, ext));
            }
        }
        out
    }

    /// The layers of the view at `path` (a block device or regular file).
    pub fn layers_of(&self, path: &Path) -> Vec<Layer> {
        match Node::of(path) {
            Some(n) => self.layers(n, self.size_of(n, path)),
            None => Vec::new(),
        }
    }

    fn size_of(&self, node: Node, path: &Path) -> u64 {
        match node {
            Node::Device { major, minor } => self.block(major, minor).map_or(0, |b| b.size_bytes),
            Node::File { .. } => std::fs::metadata(path).map_or(0, |m| m.len()),
        }
    }

    /// A name for a node: its device path, or the path the kernel shows for
    /// a loop device's backing file.
    pub fn name(&self, node: Node) -> String {
        match node {
            Node::Device { major, minor } => self.block(major, minor).map_or_else(
                || format!("block device {major}:{minor}"),
                |b| b.node.display().to_string(),
            ),
            Node::File { ino, .. } => self
                .loops
                .iter()
                .find(|l| l.backing == Some(node))
                .and_then(|l| l.backing_path.as_ref())
                .map_or_else(|| format!("a file (inode {ino})"), |p| p.display().to_string()),
        }
    }

    /// Every other name of the bytes at `path`: block devices whose layers
    /// share bytes with the target's, and the files under it.
    pub fn aliases(&self, path: &Path) -> Aliases {
        let Some(target) = Node::of(path) else {
            return Aliases::default();
        };
        let layers = self.layers(target, self.size_of(target, path));
        let mut others = Vec::new();
        for b in &self.blocks {
            let node = Node::device(b.major, b.minor);
            if node == target {
                continue;
            }
            let theirs = self.layers(node, b.size_bytes);
            if !share_bytes(&layers, &theirs) {
                continue;
            }
            let under = layers.iter().find(|l| l.node == node);
            others.push(Alias {
                node,
                path: Some(b.node.clone()),
                below: under.is_some(),
                // The target's bytes are all of it: a loop device or volume
                // under the target, not the whole disk of a partition.
                all_of_it: under.is_some_and(|l| l.extent == Extent::whole(b.size_bytes)),
            });
        }
        for l in layers.iter().skip(1) {
            if let Node::File { .. } = l.node {
                let path = self
                    .loops
                    .iter()
                    .find(|d| d.backing == Some(l.node))
                    .and_then(|d| d.backing_path.clone())
                    .filter(|p| Node::of(p) == Some(l.node));
                others.push(Alias {
                    node: l.node,
                    path,
                    below: true,
                    all_of_it: true,
                });
            }
        }
        Aliases {
            target: Some(target),
            target_path: Some(path.to_path_buf()),
            layers,
            others,
        }
    }

    /// What the filesystem holding `dir` rests on, through any stack of
    /// partitions, loop devices and volumes, and, for a loop device over a
    /// file or a FUSE filesystem serving an image, the file and then the
    /// filesystem that file lives on.
    pub fn under_dir(&self, dir: &Path) -> Vec<Layer> {
        let mut out: Vec<Layer> = Vec::new();
        // (a path whose filesystem is next to follow down)
        let mut todo: Vec<PathBuf> = vec![dir.to_path_buf()];
        let mut seen = 0;
        while let Some(p) = todo.pop() {
            seen += 1;
            if seen > 64 {
                break;
            }
            let mut found = Vec::new();
            if let Some((ma, mi)) = device_of_path(&self.roots, &p) {
                let len = self.block(ma, mi).map_or(0, |b| b.size_bytes);
                found.extend(self.layers(Node::device(ma, mi), len));
            }
            // A FUSE filesystem (fuse2fs IMAGE DIR) names its image as the source.
            if let Some(src) = mount_source(&self.roots, &p)
                && let Some(key) = FileKey::of(&src)
            {
                found.push(Layer {
                    node: Node::file(key),
                    extent: Extent::ANYWHERE,
                    bottom: true,
                });
                todo.push(src);
            }
            for l in found {
                if let Node::File { .. } = l.node
                    && let Some(f) = self
                        .loops
                        .iter()
                        .find(|d| d.backing == Some(l.node))
                        .and_then(|d| d.backing_path.clone())
                {
                    todo.push(f);
                }
                if !out.contains(&l) {
                    out.push(l);
                }
            }
        }
        out
    }
}

/// Another name of a target's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    pub node: Node,
    /// Its path: a device node, or the file a loop device shows (None for a
    /// deleted file).
    pub path: Option<PathBuf>,
    /// The target rests on it (a loop device's backing file or device, a
    /// partition's disk); otherwise it rests on the target's bytes (a loop
    /// device over the target, a partition, another loop over the same
    /// file).
    pub below: bool,
    /// Below, and the target is all of it (not a partition's whole disk,
    /// whose other partitions are not the target's).
    pub all_of_it: bool,
}

impl Alias {
    /// Part of it is the target and part is not: the whole disk of a
    /// partition target, whose other partitions are no business of the
    /// target's (they may be mounted; the disk is refused exclusively then).
    pub fn partly(&self) -> bool {
        self.below && !self.all_of_it
    }

    pub fn shown(&self) -> String {
        match (&self.path, self.node) {
            (Some(p), _) => p.display().to_string(),
            (None, Node::File { ino, .. }) => format!("a deleted file (inode {ino})"),
            (None, Node::Device { major, minor }) => format!("block device {major}:{minor}"),
        }
    }
}

/// The names of a target's bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Aliases {
    pub target: Option<Node>,
    pub target_path: Option<PathBuf>,
    /// What the target rests on, itself first.
    pub layers: Vec<Layer>,
    pub others: Vec<Alias>,
}

impl Aliases {
    /// The alias block devices, as paths.
    pub fn devices(&self) -> impl Iterator<Item = &Alias> {
        self.others.iter().filter(|a| matches!(a.node, Node::Device { .. }))
    }

    /// The regular files holding the bytes: the target itself when it is one,
    /// and every file under it.
    pub fn files(&self) -> Vec<(Option<PathBuf>, FileKey)> {
        let own = self
            .target
            .and_then(Node::file_key)
            .map(|k| (self.target_path.clone(), k));
        own.into_iter()
            .chain(
                self.others
                    .iter()
                    .filter_map(|a| a.node.file_key().map(|k| (a.path.clone(), k))),
            )
            .collect()
    }

    /// Whether the bytes rest, at any depth, on something in `under` (what a
    /// directory's filesystem rests on).
    pub fn rest_under(&self, under: &[Layer]) -> bool {
        share_bytes(&self.layers, under)
    }
}

/// The source of the mount holding `path`, as the mount table names it
/// (`/dev/sdb1`, or an image file for a FUSE filesystem such as fuse2fs).
pub fn mount_source(roots: &Roots, path: &Path) -> Option<PathBuf> {
    let canon = std::fs::canonicalize(path).ok()?;
    let mountinfo = std::fs::read_to_string(roots.proc.join("self/mountinfo")).ok()?;
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = left.split(' ').collect();
        let source = right.split(' ').nth(1).unwrap_or_default();
        let Some(point) = fields.get(4) else { continue };
        let point = super::mounts::unescape(point);
        if canon.starts_with(&point) && best.as_ref().is_none_or(|(n, _)| point.len() >= *n) {
            best = Some((point.len(), super::mounts::unescape(source)));
        }
    }
    best.map(|(_, s)| PathBuf::from(s))
}

/// The block device a path's filesystem lives on. `st_dev` names it for
/// ordinary filesystems; btrfs and overlays report an anonymous device
/// (major 0), so then the mount table's source is asked.
pub fn device_of_path(roots: &Roots, path: &Path) -> Option<(u32, u32)> {
    let dev = std::fs::metadata(path).ok()?.dev();
    let (ma, mi) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    if ma != 0 {
        return Some((ma, mi));
    }
    let meta = std::fs::metadata(mount_source(roots, path)?).ok()?;
    meta.file_type()
        .is_block_device()
        .then(|| (rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev())))
}

#[cfg(test)]
mod tests {
    use super::loop_ioctl::kernel_decode_dev;
    use super::*;
    use crate::identify::sysfs::fake_files;

    #[test]
    fn parses_device_numbers_and_keys_files() {
        assert_eq!(major_minor("7:3\n"), Some((7, 3)));
        assert_eq!(major_minor("7"), None);
        let f = tempfile::NamedTempFile::new().unwrap();
        let k = FileKey::of(f.path()).unwrap();
        assert_eq!(Some(k), FileKey::of(f.path()));
        assert_eq!(FileKey::of(Path::new("/")), None, "a directory is not a file");
        // The kernel's encoding: major 259, minor 0x12345.
        let enc = (0x45) | (259 << 8) | ((0x12300u64) << 12);
        assert_eq!(kernel_decode_dev(enc), (259, 0x12345));
    }

    #[test]
    fn extents_overlap_only_where_they_share_bytes() {
        let a = Extent {
            start: 1 << 20,
            len: Some(1 << 20),
        };
        let b = Extent {
            start: 2 << 20,
            len: Some(1 << 20),
        };
        assert!(!a.overlaps(&b) && !b.overlaps(&a), "adjacent partitions");
        assert!(a.overlaps(&Extent::ANYWHERE) && Extent::ANYWHERE.overlaps(&b));
        assert!(a.overlaps(&Extent {
            start: 0,
            len: Some((1 << 20) + 1)
        }));
    }

    /// A fake sysfs: loop2 over disk.img with partition loop2p1 (from 1 MiB),
    /// dm-0 over loop2p1; sda with two partitions.
    fn fake(tmp: &Path) -> (Roots, PathBuf) {
        let sys = tmp.join("sys");
        let backing = tmp.join("disk.img");
        std::fs::File::create(&backing).unwrap().set_len(4 << 20).unwrap();
        let loop2 = sys.join("devices/virtual/block/loop2");
        fake_files(
            &loop2,
            &[
                ("dev", "7:2\n"),
                ("size", "8192\n"),
                ("loop/backing_file", &format!("{}\n", backing.display())),
                ("loop2p1/dev", "259:0\n"),
                ("loop2p1/partition", "1\n"),
                ("loop2p1/start", "2048\n"),
                ("loop2p1/size", "4096\n"),
            ],
        );
        let dm = sys.join("devices/virtual/block/dm-0");
        fake_files(&dm, &[("dev", "253:0\n"), ("size", "4096\n")]);
        std::fs::create_dir_all(dm.join("slaves")).unwrap();
        std::os::unix::fs::symlink(loop2.join("loop2p1"), dm.join("slaves/loop2p1")).unwrap();
        let sda = sys.join("devices/pci/host0/block/sda");
        fake_files(&sda, &[("dev", "8:0\n"), ("size", "100000\n")]);
        for (p, start, dev) in [("sda1", "2048", "8:1"), ("sda2", "50000", "8:2")] {
            let files = [
                ("dev", &format!("{dev}\n")[..]),
                ("partition", "1\n"),
                ("start", &format!("{start}\n")),
                ("size", "40000\n"),
            ];
            fake_files(&sda.join(p), &files);
        }
        let links = sys.join("dev/block");
        std::fs::create_dir_all(&links).unwrap();
        for (l, t) in [
            ("7:2", loop2.clone()),
            ("259:0", loop2.join("loop2p1")),
            ("253:0", dm.clone()),
            ("8:0", sda.clone()),
            ("8:1", sda.join("sda1")),
            ("8:2", sda.join("sda2")),
        ] {
            std::os::unix::fs::symlink(t, links.join(l)).unwrap();
        }
        let proc = tmp.join("proc");
        fake_files(&proc, &[("self/mountinfo", "")]);
        (
            Roots {
                sys,
                proc,
                dev: tmp.join("dev"),
            },
            backing,
        )
    }

    #[test]
    fn a_fake_sysfs_resolves_loops_partitions_and_members() {
        let tmp = tempfile::tempdir().unwrap();
        let (roots, backing) = fake(tmp.path());
        let s = Stack::read(&roots);
        assert_eq!(s.loops.len(), 1);
        assert_eq!(s.loops[0].node, roots.dev.join("loop2"));
        let file = Node::file(FileKey::of(&backing).unwrap());
        assert_eq!(s.loops[0].backing, Some(file));
        // dm-0 rests on loop2p1, which starts 1 MiB into loop2, which is disk.img.
        let l = s.layers(Node::device(253, 0), 2 << 20);
        assert!(
            l.iter()
                .any(|l| l.node == Node::device(259, 0) && l.extent == Extent::ANYWHERE)
        );
        assert!(l.iter().any(|l| l.node == file && l.bottom), "{l:?}");
        let p = s.layers(Node::device(259, 0), 2 << 20);
        assert_eq!(
            p.iter().find(|l| l.node == file).unwrap().extent,
            Extent {
                start: 1 << 20,
                len: Some(2 << 20)
            }
        );
        // The file's aliases: the loop device, its partition and the volume.
        let a = s.aliases(&backing);
        let names: Vec<String> = a.others.iter().map(Alias::shown).collect();
        assert_eq!(a.others.len(), 3, "{names:?}");
        assert!(a.others.iter().all(|a| !a.below));
        // sda1 and sda2 share sda but not bytes; sda is under sda1, partly.
        let sda1 = s.layers(Node::device(8, 1), 40000 * 512);
        let sda2 = s.layers(Node::device(8, 2), 40000 * 512);
        assert!(!share_bytes(&sda1, &sda2));
        assert!(share_bytes(&sda1, &s.layers(Node::device(8, 0), 100000 * 512)));
    }
}
