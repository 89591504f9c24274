//! The results store: every run's document in SQLite (rusqlite, bundled),
//! so a card can be compared with the next one and drawn later.
//!
//! One table, one row per run, the whole run document as JSON beside the
//! columns a listing needs (when, what command, which device, which host,
//! which flashlab). WAL and a busy timeout let two runs write at once; the
//! schema version lives in SQLite's `user_version` and is migrated step by
//! step (`schema`). A run is saved as each of its steps lands (the runner's
//! listener), so a late failure keeps what completed; a store that cannot
//! be opened or written costs a warning, never the run.

pub mod fleet;
mod schema;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use crate::document::RunDocument;

/// How long a writer waits for another run's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest document `import` reads: a run with every test and a full
/// scatter map is a few MiB.
pub const MAX_IMPORT: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("results store {path}: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("results store {path}: {why}")]
    Layout { path: String, why: String },
    #[error("no run {0} in the results store")]
    NoSuchRun(i64),
}

pub use crate::document::bodies::RunRow;

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating it and its directory if need be) and migrate.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let shown = path.display().to_string();
        let sql = |source| StoreError::Sqlite {
            path: shown.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Layout {
                path: shown.clone(),
                why: format!("cannot create {}: {e}", dir.display()),
            })?;
        }
        if let Ok(m) = std::fs::metadata(path)
            && !m.is_file()
        {
            return Err(StoreError::Layout {
                path: shown,
                why: "not a regular file".into(),
            });
        }
        let conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        // A file this flashlab cannot read (not SQLite, another program's
        // database, a schema version below 0 or from a newer flashlab) is
        // refused before the first write below: it is left byte for byte.
        let refused = |e| match e {
            schema::MigrateError::Sqlite(source) => StoreError::Sqlite {
                path: shown.clone(),
                source,
            },
            other @ (schema::MigrateError::Newer(_)
            | schema::MigrateError::Unknown(_)
            | schema::MigrateError::Foreign) => StoreError::Layout {
                path: shown.clone(),
                why: other.why(),
            },
        };
        schema::readable(&conn).map_err(refused)?;
        // WAL: readers never block the writer, and two runs saving at once
        // take turns instead of failing.
        // Switching a new store to WAL needs it alone, and SQLite answers
        // "database is locked" at once rather than wait for the busy
        // handler when runs open a new store together (one of four probes
        // saving to a new store at once lost its run, about one time in
        // six): so try again until the busy timeout.
        let started = std::time::Instant::now();
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                r => break r.map_err(sql)?,
            }
        }
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(sql)?;
        let mut s = Store {
            conn,
            path: path.to_path_buf(),
        };
        schema::migrate(&mut s.conn).map_err(refused)?;
        Ok(s)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Save a run: a new row when `id` is None, else that row replaced.
    /// Returns the row's id.
    pub fn save(&mut self, id: Option<i64>, doc: &RunDocument) -> Result<i64, StoreError> {
        let text = canonical(doc);
        let d = crate::document::device::of(doc);
        let host = format!("{} ({} {})", doc.host.hostname, doc.host.kernel, doc.host.arch);
        let target = doc.target.as_ref().map_or(String::new(), |t| t.spec.clone());
        match id {
            Some(id) => {
                self.conn
                    .execute(
                        "UPDATE runs SET document = ?1, device_key = ?2, device = ?3 WHERE id = ?4",
                        params![text, d.key, d.name, id],
                    )
                    .map_err(|e| self.sql(e))?;
                Ok(id)
            }
            None => {
                self.conn
                    .execute(
                        "INSERT INTO runs (started_unix, command, target, device_key, device, host, \
                         flashlab_version, document) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                        params![
                            doc.started_unix as i64,
                            doc.command.as_str(),
                            target,
                            d.key,
                            d.name,
                            host,
                            doc.flashlab_version,
                            text
                        ],
                    )
                    .map_err(|e| self.sql(e))?;
                Ok(self.conn.last_insert_rowid())
            }
        }
    }

    /// This station's name in a fleet store: the host's name and a
    /// random part, made once and kept (two stations may share a
    /// hostname).
    pub fn station(&mut self) -> Result<String, StoreError> {
        let kept: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'station'", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?;
        if let Some(s) = kept {
            return Ok(s);
        }
        let host = crate::document::HostInfo::this().hostname;
        let made = format!("{host}-{:08x}", crate::random::nonce() as u32);
        self.conn
            .execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('station', ?1)",
                params![made],
            )
            .map_err(|e| self.sql(e))?;
        self.conn
            .query_row("SELECT value FROM meta WHERE key = 'station'", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    /// Every run's id and stored text, oldest first.
    pub fn documents(&self) -> Result<Vec<(i64, String)>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT id, document FROM runs ORDER BY id")
            .map_err(|e| self.sql(e))?;
        let rows = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// The checksum of the document of run `id` last sent to `fleet`.
    pub fn uploaded_crc(&self, id: i64, fleet: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT document_crc FROM uploads WHERE run_id = ?1 AND fleet = ?2",
                params![id, fleet],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))
    }

    pub fn mark_uploaded(&mut self, id: i64, fleet: &str, crc: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO uploads (run_id, fleet, document_crc) VALUES (?1, ?2, ?3)                  ON CONFLICT (run_id, fleet) DO UPDATE SET document_crc = excluded.document_crc",
                params![id, fleet, crc],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// Store a document from elsewhere (`results import`): the id of the
    /// new row, or of the stored run it duplicates.
    pub fn import(&mut self, doc: &RunDocument) -> Result<Imported, StoreError> {
        let text = canonical(doc);
        let existing: Option<i64> = self
            .conn
            .query_row("SELECT id FROM runs WHERE document = ?1", params![text], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(match existing {
            Some(id) => Imported::Duplicate(id),
            None => Imported::New(self.save(None, doc)?),
        })
    }

    /// Runs, newest first; `device` keeps those whose key or name contains it.
    pub fn list(&self, device: Option<&str>) -> Result<Vec<RunRow>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, started_unix, command, device_key, device, target, host, flashlab_version \
                 FROM runs WHERE ?1 IS NULL OR instr(lower(device_key), lower(?1)) > 0 \
                 OR instr(lower(device), lower(?1)) > 0 OR instr(lower(target), lower(?1)) > 0 \
                 ORDER BY id DESC",
            )
            .map_err(|e| self.sql(e))?;
        let rows = st
            .query_map(params![device], |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    started_unix: r.get::<_, i64>(1)?.max(0) as u64,
                    command: crate::document::CommandName::parse(&r.get::<_, String>(2)?),
                    device_key: r.get(3)?,
                    device: r.get(4)?,
                    target: r.get(5)?,
                    host: r.get(6)?,
                    flashlab_version: r.get(7)?,
                    verdict: String::new(),
                    label: None,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// A stored run's document.
    pub fn get(&self, id: i64) -> Result<RunDocument, StoreError> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT document FROM runs WHERE id = ?1", params![id], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?;
        let text = text.ok_or(StoreError::NoSuchRun(id))?;
        RunDocument::from_json(&text).map_err(|e| StoreError::Layout {
            path: self.path.display().to_string(),
            why: format!("run {id}'s document does not read back: {e}"),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imported {
    New(i64),
    Duplicate(i64),
}

/// The one text a document is stored as: compact JSON in the document's
/// own field order, so an exported run imported again is recognised.
pub fn canonical(doc: &RunDocument) -> String {
    serde_json::to_string(doc).unwrap_or_default()
}

impl std::fmt::Debug for Saver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Saver")
            .field("path", &self.path)
            .field("id", &self.id)
            .finish()
    }
}

/// Saves one run as its steps land, keeping its row id; the first failure
/// is reported once on stderr and the run goes on without the store. The
/// store is opened (and made, where there is none) at the first save, so
/// a run refused before any result lands writes nothing: no empty store
/// is left behind by bad input.
pub struct Saver {
    path: PathBuf,
    store: Option<Store>,
    id: Option<i64>,
    failed: Option<String>,
    /// The user chose this store (`--db`, `FLASHLAB_DB`): the line that
    /// says where the run went names it.
    pub named: bool,
    /// The fleet store the run goes to once saved here.
    pub fleet: Option<String>,
}

impl Saver {
    /// A saver into the store at `path`, opened at the first save; a store
    /// that cannot be opened then is a warning, and no saving later.
    pub fn at(path: &Path) -> Saver {
        Saver {
            path: path.to_path_buf(),
            store: None,
            id: None,
            failed: None,
            named: false,
            fleet: None,
        }
    }

    fn warn(&mut self, e: &StoreError) {
        if self.failed.is_none() {
            crate::errln!(
                "warning: the run is not saved: {e}\nhint: --db PATH or FLASHLAB_DB chooses another store, \
                 --no-store skips it; the results below are complete"
            );
            self.failed = Some(e.to_string());
        }
    }

    /// Send the saved runs to the fleet store, if there is one, and say
    /// so in `doc` (local first: a run not saved here is not sent).
    pub fn upload(&mut self, doc: &mut RunDocument) {
        if let (Some(url), Some(s), Some(_)) = (&self.fleet, self.store.as_mut(), self.id) {
            fleet::upload_and_say(s, url, doc);
        }
    }

    pub fn save(&mut self, doc: &RunDocument) {
        if self.failed.is_some() {
            return;
        }
        if self.store.is_none() {
            match Store::open(&self.path) {
                Ok(s) => self.store = Some(s),
                Err(e) => return self.warn(&e),
            }
        }
        let Some(s) = self.store.as_mut() else { return };
        match s.save(self.id, doc) {
            Ok(id) => self.id = Some(id),
            Err(e) => {
                self.store = None;
                self.warn(&e);
            }
        }
    }

    /// Why the store could not save the run, if it could not.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// The run's id once saved, and where.
    pub fn saved(&self) -> Option<(i64, PathBuf)> {
        Some((self.id?, self.store.as_ref()?.path().to_path_buf()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(command: &str, spec: &str) -> RunDocument {
        let mut d = RunDocument::new(crate::document::CommandName::parse(command), None);
        d.target = Some(crate::targets::TargetDescription {
            spec: spec.into(),
            kind: crate::targets::TargetKind::Sim,
            size_bytes: 1 << 30,
            logical_block_size: 512,
            physical_block_size: 512,
        });
        d
    }

    #[test]
    fn a_run_is_saved_updated_listed_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("r.sqlite")).unwrap();
        let mut d = doc("probe", "sim:demo");
        let id = s.save(None, &d).unwrap();
        d.results.scatter.set(crate::measure::scatter::ScatterResult {
            offset_bytes: 0,
            length_bytes: 4096,
            block_size: 4096,
            points: Vec::new(),
        });
        assert_eq!(s.save(Some(id), &d).unwrap(), id, "the same row");
        let other = s.save(None, &doc("bench", "sim:kingston-sa04g")).unwrap();
        let all = s.list(None).unwrap();
        assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), [other, id]);
        assert_eq!(s.list(Some("KINGSTON")).unwrap().len(), 1);
        let same =
            |a: &RunDocument, b: &RunDocument| serde_json::to_string(a).unwrap() == serde_json::to_string(b).unwrap();
        assert!(same(&s.get(id).unwrap(), &d));
        assert!(matches!(s.get(999), Err(StoreError::NoSuchRun(999))));
        assert_eq!(s.import(&d).unwrap(), Imported::Duplicate(id));
        assert!(matches!(s.import(&doc("info", "x")).unwrap(), Imported::New(_)));
    }
}
