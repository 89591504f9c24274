//! The store's schema, by version (SQLite's `user_version`), with one
//! migration per step, each in its own transaction: a store made by any
//! earlier flashlab opens, and one from a newer flashlab is refused
//! rather than written in a layout this one does not know; so is a version
//! below 0 (no flashlab writes one) and another program's database (tables
//! at version 0), each before anything is written to the file.
//!
//! - 1: runs (id, started_unix, command, target, document).
//! - 2: the device (key and name), host and flashlab version as columns,
//!   filled in from each stored document, and an index on the device, for
//!   `results list --device`.
//! - 3: this station's own facts (`meta`: its name in a fleet store), and
//!   which runs went to which fleet store with which document (`uploads`),
//!   so an upload sends each run once and again only when it changed.

use rusqlite::{Connection, params};

pub const VERSION: i64 = 3;

pub enum MigrateError {
    Sqlite(rusqlite::Error),
    /// Made by a newer flashlab.
    Newer(i64),
    /// A version below 0: no flashlab writes one, so the file is another
    /// program's or damaged, and no step leads from it.
    Unknown(i64),
    /// Version 0 with tables in it: another program's database, which a
    /// first step would write flashlab's table into.
    Foreign,
}

impl MigrateError {
    /// Why the store is refused, for the store's error.
    pub fn why(&self) -> String {
        match self {
            MigrateError::Sqlite(e) => e.to_string(),
            MigrateError::Newer(v) => format!(
                "schema version {v} is newer than this flashlab reads (0 to {VERSION}): a newer flashlab made it; \
                 use that one"
            ),
            MigrateError::Unknown(v) => format!(
                "schema version {v} is not one flashlab writes (0 to {VERSION}): another program's file, or a \
                 damaged one"
            ),
            MigrateError::Foreign => "it holds tables but no schema version: another program's database".into(),
        }
    }
}

impl From<rusqlite::Error> for MigrateError {
    fn from(e: rusqlite::Error) -> Self {
        MigrateError::Sqlite(e)
    }
}

/// Version 1's table, as the first store was made.
pub const V1: &str = "CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    started_unix INTEGER NOT NULL,
    command TEXT NOT NULL,
    target TEXT NOT NULL,
    document TEXT NOT NULL
)";

/// The store's version, read without writing anything, or why this
/// flashlab cannot read it: a file that is not SQLite fails here too. The
/// store calls it before anything that writes (even switching to WAL
/// rewrites the file's header), so a refused file is left as it was.
pub fn readable(conn: &Connection) -> Result<i64, MigrateError> {
    // One statement, so one snapshot: read as two, another run creating
    // the store between them shows version 0 beside its new tables, which
    // looked like another program's database (seen in CI with two runs
    // saving at once).
    let (v, tables): (i64, i64) = conn.query_row(
        "SELECT (SELECT user_version FROM pragma_user_version),
                (SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%')",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if v > VERSION {
        return Err(MigrateError::Newer(v));
    }
    if v < 0 {
        return Err(MigrateError::Unknown(v));
    }
    if v == 0 && tables > 0 {
        return Err(MigrateError::Foreign);
    }
    Ok(v)
}

pub fn migrate(conn: &mut Connection) -> Result<(), MigrateError> {
    loop {
        let v = readable(conn)?;
        if v == VERSION {
            return Ok(());
        }
        // IMMEDIATE: the write lock first, so two runs never migrate at once.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // Another run may have migrated (or spoilt the file) between our
        // read and our lock.
        let now = readable(&tx)?;
        if now == v {
            match v {
                0 => tx.execute_batch(V1)?,
                1 => to_v2(&tx)?,
                2 => tx.execute_batch(V3)?,
                // readable() let through 0 to VERSION only; a version with
                // no step is refused, never a panic.
                other => return Err(MigrateError::Unknown(other)),
            }
            tx.pragma_update(None, "user_version", v + 1)?;
        }
        tx.commit()?;
    }
}

/// Version 3's tables.
const V3: &str = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE uploads (
    run_id INTEGER NOT NULL,
    fleet TEXT NOT NULL,
    document_crc INTEGER NOT NULL,
    PRIMARY KEY (run_id, fleet)
)";

fn to_v2(tx: &rusqlite::Transaction) -> Result<(), MigrateError> {
    tx.execute_batch(
        "ALTER TABLE runs ADD COLUMN device_key TEXT NOT NULL DEFAULT '';
         ALTER TABLE runs ADD COLUMN device TEXT NOT NULL DEFAULT '';
         ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';
         ALTER TABLE runs ADD COLUMN flashlab_version TEXT NOT NULL DEFAULT '';
         CREATE INDEX runs_device ON runs (device_key);",
    )?;
    let rows: Vec<(i64, String)> = {
        let mut st = tx.prepare("SELECT id, document FROM runs")?;
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?
    };
    for (id, text) in rows {
        // A document that no longer reads keeps empty columns: it is still
        // listed and exported as it is.
        let Ok(doc) = serde_json::from_str::<crate::document::RunDocument>(&text) else {
            continue;
        };
        let d = crate::document::device::of(&doc);
        tx.execute(
            "UPDATE runs SET device_key = ?1, device = ?2, host = ?3, flashlab_version = ?4 WHERE id = ?5",
            params![
                d.key,
                d.name,
                format!("{} ({} {})", doc.host.hostname, doc.host.kernel, doc.host.arch),
                doc.flashlab_version,
                id
            ],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store as version 1 left it, with one run, opens as version 2 with
    /// the run's device filled in.
    #[test]
    fn a_version_1_store_is_migrated_and_keeps_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        let mut doc = crate::document::RunDocument::new(crate::document::CommandName::Probe, None);
        doc.extras.device.set(crate::document::DeviceId {
            key: "target:sim:kingston-sa04g:3904897024".into(),
            name: "flashlab simulator kingston-sa04g, 3.64 GiB (sim)".into(),
        });
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(V1).unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
            c.execute(
                "INSERT INTO runs (started_unix, command, target, document) VALUES (5, 'probe', 'sim:x', ?1)",
                params![serde_json::to_string(&doc).unwrap()],
            )
            .unwrap();
            c.execute(
                "INSERT INTO runs (started_unix, command, target, document) VALUES (6, 'info', 'y', 'not json')",
                [],
            )
            .unwrap();
        }
        let s = super::super::Store::open(&path).unwrap();
        let rows = s.list(None).unwrap();
        assert_eq!(rows.len(), 2);
        assert!(rows[1].device.contains("kingston-sa04g"), "{:?}", rows[1]);
        assert_eq!(rows[0].device, "", "an unreadable document keeps its row");
        assert_eq!(s.list(Some("kingston")).unwrap().len(), 1);
        let v: i64 = Connection::open(&path)
            .unwrap()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, VERSION);
        drop(s);
        // And a newer store is refused, not rewritten.
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", VERSION + 1)
            .unwrap();
        assert!(super::super::Store::open(&path).is_err());
    }

    /// Runs creating a store at once all open it: none may see the
    /// tables of another's first step before its version (CI saw "another
    /// program's database" when the two were read apart).
    #[test]
    fn stores_created_at_once_all_open() {
        for round in 0..30 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("c.sqlite");
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
            let opens: Vec<_> = (0..6)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        super::super::Store::open(&path).map(|_| ())
                    })
                })
                .collect();
            for o in opens {
                if let Err(e) = o.join().unwrap() {
                    panic!("round {round}: {e}");
                }
            }
        }
    }
}
