//! The one place every run looks for pending journals, whoever runs it and
//! whatever journal directory it names.
//!
//! A journal lives where its run put it: root's default directory, a user's
//! state directory, `FLASHLAB_JOURNAL_DIR` or `--journal-dir`. A later run
//! under another user or another directory would not look there, would not
//! see the crashed run's bytes pending, and would journal that run's pattern
//! as the "original"; restoring the two journals in the wrong order then
//! writes the pattern back. So before a journal exists, its run leaves an
//! entry here: the journal's path, who made it, and a copy of its header
//! (the bytes it covers, by identity, and its place in the order of
//! journals). Every writing run and every restore reads every entry.
//!
//! The place is [`SYSTEM`], under /var/tmp: the Filesystem Hierarchy
//! Standard 3.0, section 5.15, has /var/tmp preserved across reboots (a
//! journal must outlive a power cut) and writable by every user. flashlab's
//! two directories there are made sticky and world-writable (mode 1777, as
//! /var/tmp itself), so any user can leave an entry and only its owner (or
//! root) can remove it; they are opened without following symbolic links,
//! so nobody can point a root run's entry at a directory of their choosing.
//!
//! An entry carries a CRC-32: a damaged one proves nothing about the bytes
//! it covered, and is reported as damaged where journals are listed.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, Mode, OFlags, RenameFlags};
use serde::{Deserialize, Serialize};

use super::SafetyError;
use super::header::Header;

/// Where every run looks (see the module documentation for why there).
pub const SYSTEM: &str = "/var/tmp/flashlab/pending";
/// What an entry's name ends with.
const EXTENSION: &str = "pending";
/// What a set-aside entry's name ends with: kept for a person to read,
/// no longer counted.
pub const SET_ASIDE: &str = "set-aside";
const MAGIC: &str = "flashlab-pending v1\n";
/// Largest entry read: a journal header may be 4 MiB (its declared ranges),
/// plus the entry's own fields.
const MAX_ENTRY: u64 = (4 << 20) + (64 << 10);

/// What the registry holds of one journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The journal's absolute path.
    pub journal: PathBuf,
    /// Who made it (a journal another user made may be unreadable here;
    /// its entry still says which bytes it covers).
    pub uid: u32,
    /// A copy of the journal's header.
    pub header: Header,
}

/// The registry: [`Registry::system`] for every run; unit tests give one
/// of their own, so they neither leave entries behind nor see other runs'.
#[derive(Debug, Clone)]
pub struct Registry {
    /// An existing directory, opened as it is.
    base: PathBuf,
    /// The directories under `base` flashlab makes and checks, outermost
    /// first; the last one holds the entries.
    own: Vec<&'static str>,
}

fn refuse(dir: &Path, why: impl std::fmt::Display) -> SafetyError {
    SafetyError::Registry {
        dir: dir.display().to_string(),
        why: why.to_string(),
    }
}

impl Registry {
    pub fn system() -> Registry {
        Registry {
            base: PathBuf::from("/var/tmp"),
            own: vec!["flashlab", "pending"],
        }
    }

    /// A registry of its own under `base` (which must exist).
    pub fn at(base: &Path) -> Registry {
        Registry {
            base: base.to_path_buf(),
            own: vec!["pending"],
        }
    }

    /// The directory holding the entries.
    pub fn dir(&self) -> PathBuf {
        self.own.iter().fold(self.base.clone(), |p, n| p.join(n))
    }

    /// Open the entries' directory, making flashlab's directories (mode
    /// 1777) when `create`. Each is opened without following a symbolic
    /// link and must be a directory that is either not writable by others
    /// or sticky; root takes back one that another user made.
    fn open(&self, create: bool) -> Result<OwnedFd, SafetyError> {
        let dir = self.dir();
        let mut fd = rustix::fs::open(&self.base, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| refuse(&dir, format!("{}: {e}", self.base.display())))?;
        let mut path = self.base.clone();
        for name in &self.own {
            path.push(name);
            let made = create && rustix::fs::mkdirat(&fd, *name, Mode::from_bits_truncate(0o1777)).is_ok();
            let next = rustix::fs::openat(
                &fd,
                *name,
                OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY,
                Mode::empty(),
            )
            .map_err(|e| refuse(&path, e))?;
            let st = rustix::fs::fstat(&next).map_err(|e| refuse(&path, e))?;
            let root = rustix::process::geteuid().is_root();
            let mode = st.st_mode & 0o7777;
            let unsticky = mode & 0o002 != 0 && mode & 0o1000 == 0;
            if made || (root && (st.st_uid != 0 || unsticky)) {
                // The umask took bits off mkdir's mode; root takes back a
                // directory another user made (its owner could delete
                // every other user's entries) or left open without the
                // sticky bit.
                if st.st_uid != 0 && root {
                    rustix::fs::fchown(&next, Some(rustix::process::Uid::ROOT), None).map_err(|e| refuse(&path, e))?;
                }
                rustix::fs::fchmod(&next, Mode::from_bits_truncate(0o1777)).map_err(|e| refuse(&path, e))?;
            } else if unsticky {
                return Err(refuse(
                    &path,
                    format!("it is writable by everyone but not sticky (mode {mode:o}): anyone could remove entries"),
                ));
            }
            fd = next;
        }
        Ok(fd)
    }

    /// Record that a journal is about to be made at `journal`, durably,
    /// before it exists: an entry for a journal that never came to be is
    /// passed over ([`super::pending`]), a journal without an entry could
    /// be missed.
    pub fn register(&self, journal: &Path, header: &Header) -> Result<PathBuf, SafetyError> {
        let dir = self.dir();
        let fd = self.open(true)?;
        let entry = Entry {
            journal: located(journal),
            uid: rustix::process::geteuid().as_raw(),
            header: header.clone(),
        };
        let json = serde_json::to_string(&entry).expect("an entry serialises");
        let text = format!("{MAGIC}{json}\ncrc32 {:08x}\n", crc32fast::hash(json.as_bytes()));
        let base = format!("{}-{}", header.created_ns, header.pid);
        let tmp = format!(".{base}.tmp");
        let made = rustix::fs::openat(
            &fd,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_bits_truncate(0o644),
        )
        .map_err(std::io::Error::from)
        .and_then(|f| {
            let mut f = std::fs::File::from(f);
            f.write_all(text.as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| {
            // A name of its own: never over another journal's entry (two
            // journals of one process made in the same nanosecond, or
            // headers that carry no time).
            for k in 0u32.. {
                let name = format!("{base}-{k}.{EXTENSION}");
                match rustix::fs::renameat_with(&fd, tmp.as_str(), &fd, name.as_str(), RenameFlags::NOREPLACE) {
                    Ok(()) => {
                        rustix::fs::fsync(&fd)?;
                        return Ok(name);
                    }
                    Err(rustix::io::Errno::EXIST) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            unreachable!("u32 names run out only after 2^32 entries of one nanosecond")
        });
        match made {
            Ok(name) => Ok(dir.join(name)),
            Err(e) => {
                let _ = rustix::fs::unlinkat(&fd, tmp.as_str(), AtFlags::empty());
                Err(refuse(&dir, e))
            }
        }
    }

    /// Remove every entry of the journal at `journal` (it is gone:
    /// restored, or set aside); returns how many. An entry left behind by a
    /// failure here is removed by the next listing, which finds its journal
    /// gone.
    pub fn unregister(&self, journal: &Path) -> usize {
        let was = located(journal);
        let mine: Vec<PathBuf> = self
            .entries()
            .into_iter()
            .filter(|(_, e)| e.as_ref().is_ok_and(|e| located(&e.journal) == was))
            .map(|(p, _)| p)
            .collect();
        mine.iter().for_each(|p| self.remove(p));
        mine.len()
    }

    /// Remove an entry by its path (one whose journal is gone). Best
    /// effort: another user's entry in the sticky directory stays, and is
    /// passed over the same way next time.
    pub fn remove(&self, entry: &Path) {
        if let (Ok(fd), Some(name)) = (self.open(false), entry.file_name()) {
            let _ = rustix::fs::unlinkat(&fd, name, AtFlags::empty());
            let _ = rustix::fs::fsync(&fd);
        }
    }

    /// Set an entry aside (renamed to `.set-aside`, no longer counted): for
    /// a damaged entry, whose journal is unknown. Returns the new path.
    pub fn set_aside(&self, entry: &Path) -> Result<PathBuf, SafetyError> {
        let dir = self.dir();
        let fd = self.open(false)?;
        let name = entry
            .file_name()
            .ok_or_else(|| refuse(&dir, "no entry named"))?
            .to_string_lossy()
            .into_owned();
        let aside = format!("{}.{SET_ASIDE}", name.trim_end_matches(&format!(".{EXTENSION}")));
        rustix::fs::renameat(&fd, name.as_str(), &fd, aside.as_str()).map_err(|e| refuse(&dir, e))?;
        rustix::fs::fsync(&fd).map_err(|e| refuse(&dir, e))?;
        Ok(dir.join(aside))
    }

    /// Whether `path` names an entry of this registry.
    pub fn holds(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == EXTENSION)
            && path.parent().is_some_and(|p| {
                let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
                canon(p) == canon(&self.dir())
            })
    }

    /// Every entry, each read and checked, or why it could not be: by name,
    /// so the order is stable.
    pub fn entries(&self) -> Vec<(PathBuf, Result<Entry, String>)> {
        let dir = self.dir();
        let Ok(fd) = self.open(false) else {
            return Vec::new();
        };
        let Ok(read) = rustix::fs::Dir::read_from(fd.as_fd()) else {
            return Vec::new();
        };
        let mut names: Vec<String> = read
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.') && n.ends_with(&format!(".{EXTENSION}")))
            .collect();
        names.sort();
        names.into_iter().filter_map(|n| listed(dir.join(n))).collect()
    }
}

/// An entry listed a moment ago, read; None where it is gone by then: its
/// run ended, or another run dropped it (its journal restored and deleted,
/// `pending::list_in`). Such an entry is not damage: read as unreadable, a
/// run killed between its journal's deletion and its entry's, the entry
/// then dropped by a test running beside, made `restore` refuse ("corrupted
/// at its registry entry (No such file or directory)": CI, the io_uring
/// crash trials).
fn listed(path: PathBuf) -> Option<(PathBuf, Result<Entry, String>)> {
    match read_entry(&path) {
        Err(_) if absent(&path) => None,
        e => Some((path, e)),
    }
}

/// Read and check one entry.
fn read_entry(path: &Path) -> Result<Entry, String> {
    let text = crate::files::read_small(path, MAX_ENTRY)?;
    let body = text.strip_prefix(MAGIC).ok_or("not a flashlab registry entry")?;
    let (json, crc) = body
        .trim_end_matches('\n')
        .rsplit_once("\ncrc32 ")
        .ok_or("cut short: no checksum line")?;
    let crc = u32::from_str_radix(crc, 16).map_err(|_| "its checksum line is damaged".to_string())?;
    if crc32fast::hash(json.as_bytes()) != crc {
        return Err("checksum does not match: the entry was changed".into());
    }
    serde_json::from_str(json).map_err(|e| format!("unreadable: {e}"))
}

/// A file's absolute path through its directory's real path (symbolic
/// links in the directories resolved), whether the file exists or not: one
/// spelling per journal, for matching an entry with its journal.
pub fn located(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (abs.parent(), abs.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir).map_or(abs.clone(), |d| d.join(name)),
        _ => abs,
    }
}

/// Whether `path` is absent (not merely unreadable).
pub(super) fn absent(path: &Path) -> bool {
    matches!(
        rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW),
        Err(rustix::io::Errno::NOENT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(ns: u64) -> Header {
        crate::safety::header::sample(ns, 3, &[[0, 4096]])
    }

    #[test]
    fn an_entry_reads_back_and_a_flipped_byte_is_damage() {
        let base = tempfile::tempdir().unwrap();
        let r = Registry::at(base.path());
        let p = r.register(Path::new("/j/x.fljournal"), &header(7)).unwrap();
        let mode = std::fs::metadata(r.dir()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.permissions().mode() & 0o7777, 0o1777);
        let found = r.entries();
        assert_eq!(found.len(), 1);
        let e = found[0].1.as_ref().unwrap();
        assert_eq!(
            (e.journal.as_path(), e.header.created_ns),
            (Path::new("/j/x.fljournal"), 7)
        );
        let mut bytes = std::fs::read(&p).unwrap();
        for i in MAGIC.len()..bytes.len() - 1 {
            bytes[i] ^= 0x04;
            std::fs::write(&p, &bytes).unwrap();
            assert!(read_entry(&p).is_err(), "byte {i} flipped");
            bytes[i] ^= 0x04;
        }
        // Two entries of the same process and nanosecond keep both.
        r.register(Path::new("/j/y.fljournal"), &header(7)).unwrap();
        assert_eq!(r.entries().len(), 2);
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(r.unregister(Path::new("/j/x.fljournal")), 1);
        assert_eq!(r.entries().len(), 1);
        // Gone between the listing and the read: not listed, not damage;
        // there but unreadable: damage.
        assert!(listed(p.clone()).is_none());
        std::fs::write(&p, b"not an entry").unwrap();
        assert!(listed(p).is_some_and(|(_, e)| e.is_err()));
    }

    #[test]
    fn a_registry_through_a_symbolic_link_or_open_to_all_without_sticky_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), base.path().join("pending")).unwrap();
        let r = Registry::at(base.path());
        assert!(matches!(
            r.register(Path::new("/j/x.fljournal"), &header(1)),
            Err(SafetyError::Registry { .. })
        ));
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        std::fs::remove_file(base.path().join("pending")).unwrap();
        std::fs::create_dir(base.path().join("pending")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(base.path().join("pending"), std::fs::Permissions::from_mode(0o777)).unwrap();
        // Root takes it back (mode 1777); anyone else refuses it.
        let made = r.register(Path::new("/j/x.fljournal"), &header(1));
        assert_eq!(made.is_ok(), rustix::process::geteuid().is_root());
    }
}
