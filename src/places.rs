//! Where flashlab keeps things on this machine: the results store, the
//! journal directory and the emulations' records. Read from the environment once, by the CLI
//! ([`Places::from_env`]), and handed down with the resolved arguments;
//! nothing below the CLI reads these variables (ripgrep's flags: validate,
//! then resolve once).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A PostgreSQL URL (`postgres://` or `postgresql://`), as `--db` and
/// `FLASHLAB_DB` take one to name a fleet store.
pub fn is_fleet_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// The `--db` a suggested command carries for a store the user named
/// (` --db 'PATH'`, quoted for the shell): without it, the command would
/// read the default store. `store` is the store as shown (a fleet's URL
/// without its password).
pub fn db_option(store: &str) -> String {
    format!(" --db {}", crate::console::shell_word(store))
}

/// The commands that show stored run `id` and draw its report, each in
/// backquotes, `db` ([`db_option`], or empty) after each: what a saved
/// or imported run's line suggests.
pub fn run_commands(id: i64, db: &str) -> String {
    format!("(`flashlab results show {id}{db}`, `flashlab report {id}{db}`)")
}

/// The machine's places, as the environment gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The results store when `--db` does not say: `FLASHLAB_DB`, else
    /// `$XDG_DATA_HOME/flashlab/results.sqlite` (XDG Base Directory spec:
    /// `~/.local/share` when unset). None without either or HOME.
    pub store: Option<PathBuf>,
    /// `FLASHLAB_DB` chose the store: the line that says where a run was
    /// saved names it (the default store goes unnamed, to fit 80x24).
    pub store_named: bool,
    /// Journals unless `--journal-dir` says otherwise:
    /// `FLASHLAB_JOURNAL_DIR` (absolute) when set, else
    /// `/var/lib/flashlab/journals` for root, else the XDG state
    /// directory. Every journal, wherever it is made, leaves an entry in
    /// the one register every run reads (`safety::registry`), so a pending
    /// journal is found whichever directory or user the next run has.
    pub journals: PathBuf,
    /// Where emulations record themselves and mount their cards:
    /// `FLASHLAB_EMULATE_DIR`, else `/run/flashlab/emulate` (emulate runs
    /// as root). Identification never needs it: an emulated card is found
    /// through its loop device's backing file, beside its record.
    pub emulations: PathBuf,
    /// `FLASHLAB_DB` named a PostgreSQL fleet store (`postgres://...`):
    /// runs are kept in [`Places::store`] first, then uploaded there.
    pub fleet: Option<String>,
}

impl Places {
    /// From this process's environment (the CLI's, once).
    pub fn from_env() -> Places {
        Places::from_vars(|name| std::env::var_os(name), rustix::process::geteuid().is_root())
    }

    /// From variables looked up by `var`, for a user who is `root` or not.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>, root: bool) -> Places {
        let set = |name: &str| var(name).filter(|v| !v.is_empty());
        let absolute = |name: &str| set(name).map(PathBuf::from).filter(|p| p.is_absolute());
        let home = |under: &str| set("HOME").map(|h| PathBuf::from(h).join(under));
        let db = set("FLASHLAB_DB");
        let fleet = db
            .as_ref()
            .and_then(|v| v.to_str())
            .filter(|v| is_fleet_url(v))
            .map(str::to_string);
        let named = db.filter(|_| fleet.is_none()).map(PathBuf::from);
        let store = named.clone().or_else(|| {
            absolute("XDG_DATA_HOME")
                .or_else(|| home(".local/share"))
                .map(|base| base.join("flashlab").join("results.sqlite"))
        });
        let journals = absolute("FLASHLAB_JOURNAL_DIR").unwrap_or_else(|| {
            if root {
                PathBuf::from("/var/lib/flashlab/journals")
            } else {
                absolute("XDG_STATE_HOME")
                    .or_else(|| home(".local/state"))
                    .unwrap_or_else(|| PathBuf::from("/tmp"))
                    .join("flashlab/journals")
            }
        });
        Places {
            store_named: named.is_some(),
            store,
            journals,
            emulations: set("FLASHLAB_EMULATE_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/run/flashlab/emulate")),
            fleet,
        }
    }

    /// The local store a command saves in: `--db` when it names a file,
    /// else [`Places::store`] (also when `--db` names a fleet: runs are
    /// kept here first).
    pub fn store_or(&self, db: Option<&Path>) -> Option<PathBuf> {
        db.filter(|p| !p.to_str().is_some_and(is_fleet_url))
            .map(Path::to_path_buf)
            .or_else(|| self.store.clone())
    }

    /// Whether the user named the local store (`--db`, or `FLASHLAB_DB`):
    /// the line that says where a run was saved then names it, and the
    /// commands it suggests take it.
    pub fn store_named_by(&self, db: Option<&Path>) -> bool {
        db.is_some() || self.store_named
    }

    /// The fleet store: `--db` when it is a PostgreSQL URL, else
    /// `FLASHLAB_DB`'s when that is one (a `--db` file wins over it).
    pub fn fleet_or(&self, db: Option<&Path>) -> Option<String> {
        match db.map(|p| p.to_str().filter(|t| is_fleet_url(t))) {
            Some(Some(url)) => Some(url.to_string()),
            Some(None) => None,
            None => self.fleet.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(vars: &[(&str, &str)], root: bool) -> Places {
        let vars: Vec<(String, OsString)> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        Places::from_vars(
            |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
            root,
        )
    }

    #[test]
    fn each_place_comes_from_its_variable_else_its_default() {
        let p = places(&[("HOME", "/home/u")], false);
        assert_eq!(
            p.store.as_deref(),
            Some(Path::new("/home/u/.local/share/flashlab/results.sqlite"))
        );
        assert!(!p.store_named);
        assert_eq!(p.journals, Path::new("/home/u/.local/state/flashlab/journals"));
        assert_eq!(
            places(&[("HOME", "/home/u")], true).journals,
            Path::new("/var/lib/flashlab/journals")
        );
        let p = places(
            &[
                ("HOME", "/home/u"),
                ("FLASHLAB_DB", "db.sqlite"),
                ("FLASHLAB_JOURNAL_DIR", "/j"),
                ("XDG_STATE_HOME", "/s"),
            ],
            true,
        );
        assert_eq!(
            (p.store.as_deref(), p.store_named),
            (Some(Path::new("db.sqlite")), true)
        );
        assert_eq!(p.journals, Path::new("/j"));
        assert_eq!(p.emulations, Path::new("/run/flashlab/emulate"));
        let p = places(&[("FLASHLAB_EMULATE_DIR", "/e")], true);
        assert_eq!(p.emulations, Path::new("/e"));
        // Relative XDG directories are ignored (the spec says so), as is a
        // relative journal directory; empty variables count as unset.
        let p = places(
            &[
                ("XDG_DATA_HOME", "rel"),
                ("XDG_STATE_HOME", "/s"),
                ("FLASHLAB_JOURNAL_DIR", "rel"),
                ("FLASHLAB_DB", ""),
            ],
            false,
        );
        assert_eq!((p.store, p.store_named), (None, false));
        assert_eq!(p.journals, Path::new("/s/flashlab/journals"));
        assert_eq!(places(&[], false).journals, Path::new("/tmp/flashlab/journals"));
        let env = places(&[("FLASHLAB_DB", "/env")], false);
        assert_eq!(env.store_or(Some(Path::new("/given"))), Some(PathBuf::from("/given")));
        assert_eq!(env.store_or(None), Some(PathBuf::from("/env")));
        assert_eq!(env.fleet_or(None), None);
    }

    /// A PostgreSQL URL names the fleet; the runs are kept in the local
    /// store first, which a URL never becomes.
    #[test]
    fn a_fleet_url_is_the_fleet_and_never_a_local_path() {
        let url = "postgres://lab@db.example/flashlab";
        let p = places(&[("HOME", "/h"), ("FLASHLAB_DB", url)], false);
        assert_eq!(p.fleet.as_deref(), Some(url));
        assert_eq!(
            (p.store.as_deref(), p.store_named),
            (Some(Path::new("/h/.local/share/flashlab/results.sqlite")), false)
        );
        assert_eq!(p.fleet_or(None).as_deref(), Some(url));
        assert_eq!(p.fleet_or(Some(Path::new("/x.sqlite"))), None, "a --db file wins");
        let other = "postgresql://b/db";
        assert_eq!(p.fleet_or(Some(Path::new(other))).as_deref(), Some(other));
        assert_eq!(p.store_or(Some(Path::new(other))), p.store);
        assert!(is_fleet_url("postgres://h/db") && !is_fleet_url("/tmp/postgres://x"));
    }
}
