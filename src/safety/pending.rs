//! Finding pending journals: those in the directories a run names, in the
//! default one, and every one the registry ([`super::registry`]) knows of,
//! whoever made it and wherever it lies; each once, with its header or why
//! the header cannot be read, and the registry's copy of the header where
//! there is one. A journal whose own header is damaged or unreadable is
//! still pending: only the registry's copy can prove that it covers other
//! bytes than a run's.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::SafetyError;
use super::identity::Identity;
use super::journal::{EXTENSION, Header, Journal, open_regular};
use super::registry::{self, Registry};

/// One pending journal, as found.
#[derive(Debug)]
pub struct Found {
    /// The journal; for a registry entry that cannot be read (its journal
    /// unknown), the entry itself.
    pub path: PathBuf,
    /// The journal's own header, or why it cannot be read (damaged, not
    /// readable by this user, on a directory that is not there).
    pub header: Result<Header, SafetyError>,
    /// The registry's copy of the header (an intact entry).
    pub recorded: Option<Header>,
    /// Who made it, by the registry (None: no intact entry).
    pub uid: Option<u32>,
    /// The registry knows it, but its directory is not there (a drive not
    /// mounted). It does not stop a writing run: the run's own journal
    /// comes later in the order, so restoring both newest first still
    /// ends with this one's originals.
    pub out_of_reach: bool,
}

impl Found {
    /// The header to go by: the journal's own, else the registry's copy.
    pub fn best_header(&self) -> Option<&Header> {
        self.header.as_ref().ok().or(self.recorded.as_ref())
    }

    /// Whether this journal holds bytes of the target at `path` (whose
    /// identity now is `live`). A journal with no header to go by might
    /// cover any bytes, and so covers these.
    pub fn covers(&self, path: &Path, live: &Identity) -> bool {
        self.best_header().is_none_or(|h| belongs_to(h, path, live))
    }

    /// Whether its bytes or header were changed or cut (as opposed to
    /// unreadable by this user, or out of reach): it cannot be trusted.
    pub fn damaged(&self) -> bool {
        matches!(
            self.header,
            Err(SafetyError::Corrupt { .. } | SafetyError::NotAJournal { .. })
        )
    }

    /// Whether a running flashlab holds it (it restores its data itself).
    pub fn is_live(&self) -> bool {
        self.header.is_ok() && is_live(&self.path)
    }
}

/// Every pending journal a run can find: in `dirs` (the run's journal
/// directory and the default one) and wherever the system registry's
/// entries lead.
pub fn list_all(dirs: &[&Path]) -> Vec<Found> {
    list_in(dirs, &Registry::system())
}

/// [`list_all`] with a given registry.
pub fn list_in(dirs: &[&Path], registry: &Registry) -> Vec<Found> {
    let canon = |p: &Path| registry::located(p);
    let mut out: Vec<Found> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for d in dirs.iter().copied() {
        for (p, header) in list(d) {
            let c = canon(&p);
            if !seen.contains(&c) {
                seen.push(c);
                out.push(Found {
                    path: p,
                    header,
                    recorded: None,
                    uid: None,
                    out_of_reach: false,
                });
            }
        }
    }
    for (entry_path, entry) in registry.entries() {
        let entry = match entry {
            Ok(e) => e,
            Err(why) => {
                out.push(Found {
                    header: Err(SafetyError::Corrupt {
                        path: entry_path.display().to_string(),
                        region: format!("its registry entry ({why}); the journal it named is unknown"),
                    }),
                    path: entry_path,
                    recorded: None,
                    uid: None,
                    out_of_reach: false,
                });
                continue;
            }
        };
        let j = entry.journal.clone();
        if let Some(i) = seen.iter().position(|s| *s == canon(&j)) {
            out[i].recorded = Some(entry.header);
            out[i].uid = Some(entry.uid);
            continue;
        }
        let out_of_reach = registry::absent(&j);
        let header = if out_of_reach {
            match j.parent() {
                // The journal is gone (restored; a crash came between its
                // deletion and its entry's): the entry goes too.
                Some(dir) if !registry::absent(dir) => {
                    registry.remove(&entry_path);
                    continue;
                }
                // Its directory is not there (a drive not mounted): it is
                // pending, out of reach.
                _ => Err(SafetyError::Journal {
                    path: j.display().to_string(),
                    why: "out of reach: its directory is not there (a drive not mounted?)".into(),
                }),
            }
        } else {
            Journal::header_of(&j)
        };
        seen.push(canon(&j));
        out.push(Found {
            path: j,
            header,
            recorded: Some(entry.header),
            uid: Some(entry.uid),
            out_of_reach,
        });
    }
    out
}

/// The sequence a new journal takes: above every pending journal found
/// (by its own header or the registry's copy), so journals over the same
/// bytes have one order across every directory and user.
pub fn next_sequence(found: &[Found]) -> u64 {
    found
        .iter()
        .flat_map(|f| [f.header.as_ref().ok(), f.recorded.as_ref()])
        .flatten()
        .map(|h| h.sequence)
        .max()
        .map_or(1, |m| m.saturating_add(1))
}

/// Journals in `dir`, each with its header or why it could not be read.
pub fn list(dir: &Path) -> Vec<(PathBuf, Result<Header, SafetyError>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == EXTENSION))
        .filter_map(|p| match Journal::header_of(&p) {
            // Deleted since the listing (its run restored it): not pending.
            Err(_) if super::registry::absent(&p) => None,
            h => Some((p, h)),
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Whether the journal with header `h` holds bytes of the target at `path`
/// (whose identity now is `live`): its bytes rest on the same file or disk
/// (any name: another loop number, a hard link, a loop over a loop, the
/// backing file), or, for a journal of an earlier version, the same path,
/// the same backing file, or the same serial.
pub fn belongs_to(h: &Header, path: &Path, live: &Identity) -> bool {
    if !h.identity.layers.is_empty() {
        let same_serial = match (&h.identity.serial, &live.serial) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        return same_serial && h.identity.covers_bytes_of(&h.ranges, &live.layers);
    }
    let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if h.target == canon.display().to_string() {
        return true;
    }
    let same_file = h.identity.file.is_some() && h.identity.file == live.file;
    let same_serial = h.identity.serial.is_some() && h.identity.serial == live.serial;
    same_file || same_serial
}

/// Take a journal's lock before reading it, refusing one that a running
/// flashlab holds (it is still being written, and its run restores it).
pub fn lock(path: &Path) -> Result<File, SafetyError> {
    let f = open_regular(path)?;
    match rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(f),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Err(SafetyError::Live {
            path: path.display().to_string(),
            pid: Journal::header_of(path).map_or(0, |h| h.pid),
        }),
        Err(e) => Err(SafetyError::Journal {
            path: path.display().to_string(),
            why: e.to_string(),
        }),
    }
}

/// Whether a running flashlab holds the journal (its writer's lock).
pub fn is_live(path: &Path) -> bool {
    let Ok(f) = open_regular(path) else { return false };
    matches!(
        rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockShared),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK
    )
}

/// What setting a journal aside did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    /// Where it is now (where it was, when it was out of reach).
    pub now: PathBuf,
    /// The registry entries removed or set aside with it.
    pub entries: usize,
    /// Renamed and kept; false for a journal out of reach, of which only
    /// the registry entry went.
    pub kept: bool,
}

/// Set a pending journal (or a damaged registry entry) aside: renamed so
/// that no run counts it as pending any more, kept for a person to read,
/// and its registry entry removed. Its bytes are NOT put back: for a
/// journal that cannot be restored (damaged), once the user has decided.
/// A journal a running flashlab holds is refused.
pub fn set_aside(path: &Path, registry: &Registry) -> Result<SetAside, SafetyError> {
    if registry.holds(path) {
        let now = registry.set_aside(path)?;
        return Ok(SetAside {
            now,
            entries: 1,
            kept: true,
        });
    }
    if path.extension().is_none_or(|e| e != EXTENSION) {
        return Err(SafetyError::NotAJournal {
            path: path.display().to_string(),
        });
    }
    // Out of reach (its directory is gone: a drive not mounted, a temporary
    // directory deleted) and lost for good by the user's word: only its
    // registry entry can go. Should the drive come back, `flashlab restore`
    // finds the journal in its directory again.
    if registry::absent(path) {
        let entries = registry.unregister(path);
        if entries == 0 {
            return Err(SafetyError::NotAJournal {
                path: path.display().to_string(),
            });
        }
        return Ok(SetAside {
            now: path.to_path_buf(),
            entries,
            kept: false,
        });
    }
    let _lock = lock(path)?;
    let was = registry::located(path);
    let now = aside_name(path);
    let fail = |e: std::io::Error| SafetyError::Journal {
        path: path.display().to_string(),
        why: e.to_string(),
    };
    std::fs::hard_link(path, &now)
        .and_then(|()| std::fs::remove_file(path))
        .map_err(fail)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        super::journal::sync_dir(dir)?;
    }
    let entries = registry.unregister(&was);
    Ok(SetAside {
        now,
        entries,
        kept: true,
    })
}

/// `NAME.fljournal` -> `NAME.set-aside` (with a number when taken).
fn aside_name(path: &Path) -> PathBuf {
    let first = path.with_extension(registry::SET_ASIDE);
    (1..)
        .map(|n| match n {
            1 => first.clone(),
            n => path.with_extension(format!("{}.{n}", registry::SET_ASIDE)),
        })
        .find(|p| registry::absent(p))
        .unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safety::journal::Writer;

    fn header(ns: u64, sequence: u64) -> Header {
        crate::safety::header::sample(ns, sequence, &[[0, 4096]])
    }

    /// A journal being written is live and locked (its writer holds the
    /// lock); once the writer is gone, it is neither.
    #[test]
    fn a_live_journal_is_locked() {
        let dir = tempfile::tempdir().unwrap();
        let w = Writer::create(dir.path(), &header(0, 0), Registry::at(dir.path())).unwrap();
        assert!(is_live(&w.path));
        assert!(matches!(lock(&w.path), Err(SafetyError::Live { pid: 2, .. })));
        let path = w.path.clone();
        drop(w);
        assert!(!is_live(&path) && lock(&path).is_ok());
    }

    /// Two journals in two directories the runs named, one registry: each
    /// run finds the other's journal, the order is one order, and a
    /// journal whose header is damaged is still found, with the registry's
    /// copy of its header.
    #[test]
    fn journals_in_other_directories_are_found_through_the_registry() {
        let (a, c, reg) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let r = Registry::at(reg.path());
        let first = Writer::create(a.path(), &header(10, 1), r.clone()).unwrap();
        let found = list_in(&[c.path()], &r);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, first.path);
        assert_eq!(next_sequence(&found), 2);
        let second = Writer::create(c.path(), &header(20, next_sequence(&found)), r.clone()).unwrap();
        assert_eq!(list_in(&[a.path()], &r).len(), 2);
        // A flipped byte in the second journal's header.
        drop(second);
        let p = list(c.path()).remove(0).0;
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[30] ^= 0x10;
        std::fs::write(&p, &bytes).unwrap();
        let found = list_in(&[], &r);
        let damaged = found.iter().find(|f| f.path == p).expect("still found");
        assert!(damaged.damaged() && !damaged.out_of_reach);
        assert_eq!(damaged.best_header().map(|h| h.sequence), Some(2));
        // Set aside: no longer found, its entry gone, the file kept.
        let aside = set_aside(&p, &r).unwrap();
        assert_eq!(
            (aside.now.extension().unwrap(), aside.entries),
            ("set-aside".as_ref(), 1)
        );
        assert!(aside.now.is_file() && !p.exists());
        assert_eq!(list_in(&[c.path()], &r).len(), 1);
        // The first journal deleted: its entry goes with it.
        let j = Journal::from_writer(first).unwrap();
        j.delete().unwrap();
        assert!(list_in(&[a.path(), c.path()], &r).is_empty());
        assert!(r.entries().is_empty());
    }

    #[test]
    fn an_entry_whose_journal_is_gone_is_dropped_and_one_out_of_reach_stays() {
        let (a, reg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let r = Registry::at(reg.path());
        let gone = a.path().join("gone.fljournal");
        r.register(&gone, &header(1, 1)).unwrap();
        let away = a.path().join("unmounted/x.fljournal");
        r.register(&away, &header(2, 5)).unwrap();
        let found = list_in(&[], &r);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, away);
        assert!(found[0].out_of_reach && found[0].header.is_err() && found[0].recorded.is_some());
        assert_eq!(next_sequence(&found), 6);
        assert_eq!(r.entries().len(), 1);
        // A damaged entry is found as damaged, and set aside by its path.
        std::fs::write(r.dir().join("9-9.pending"), "flashlab-pending v1\n{}\ncrc32 0\n").unwrap();
        let found = list_in(&[], &r);
        let bad = found.iter().find(|f| f.path.ends_with("9-9.pending")).unwrap();
        assert!(bad.best_header().is_none() && bad.covers(Path::new("/dev/any"), &Identity::default()));
        set_aside(&bad.path, &r).unwrap();
        assert_eq!(list_in(&[], &r).len(), 1);
        // The one out of reach, lost for good by the user's word: its
        // entry goes, nothing else is touched, and it is found no more.
        let aside = set_aside(&away, &r).unwrap();
        assert_eq!(
            (aside.now.as_path(), aside.entries, aside.kept),
            (away.as_path(), 1, false)
        );
        assert!(list_in(&[], &r).is_empty() && r.entries().is_empty());
        assert!(matches!(set_aside(&away, &r), Err(SafetyError::NotAJournal { .. })));
    }
}
