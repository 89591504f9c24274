//! The fleet store: one PostgreSQL database that many test stations share
//! (`--db postgres://...`). A station keeps every run in its own SQLite
//! store first, as a single run does, and uploads afterwards: each run
//! keyed by (station, its local id), written with an upsert, so a retry
//! after a kill or a lost connection never makes a second row, and a
//! station cut off from the server keeps testing and uploads later
//! (`flashlab results upload`). The local store remembers which document
//! of which run went to which fleet.

use postgres::{Client, NoTls};

use super::{Store, StoreError};
use crate::document::RunDocument;
use crate::document::bodies::RunRow;

/// How long a connection attempt waits: a station cut off from the
/// server says so and goes on testing.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The fleet's one table; made by the first station that connects (under
/// an advisory lock, so stations connecting at once do not race).
const TABLE: &str = "CREATE TABLE IF NOT EXISTS flashlab_runs (
    id BIGSERIAL PRIMARY KEY,
    station TEXT NOT NULL,
    local_id BIGINT NOT NULL,
    host TEXT NOT NULL,
    batch TEXT,
    slot TEXT,
    label TEXT,
    identity TEXT NOT NULL,
    device TEXT NOT NULL,
    command TEXT NOT NULL,
    target TEXT NOT NULL,
    started_unix BIGINT NOT NULL,
    flashlab_version TEXT NOT NULL,
    document TEXT NOT NULL,
    UNIQUE (station, local_id)
)";

/// The advisory lock key that guards the table's creation ("flashlab"
/// in ASCII).
const LOCK: i64 = 0x666c_6173_686c_6162;

/// The URL without its password, for messages and for the local record
/// of where runs went.
pub fn shown(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, rest)), Some(at)) => {
            let user = rest[..at - scheme.len() - 3].split(':').next().unwrap_or("");
            format!("{scheme}://{user}@{}", &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

pub struct Fleet {
    client: Client,
    url: String,
}

impl Fleet {
    pub fn connect(url: &str) -> Result<Fleet, StoreError> {
        let fail = |why: String| StoreError::Layout { path: shown(url), why };
        let mut config: postgres::Config = url.parse().map_err(|e| fail(format!("not a PostgreSQL URL: {e}")))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        let mut client = config
            .connect(NoTls)
            .map_err(|e| fail(format!("cannot connect: {e}")))?;
        let mut tx = client.transaction().map_err(|e| fail(e.to_string()))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
            .and_then(|_| tx.batch_execute(TABLE))
            .map_err(|e| fail(e.to_string()))?;
        tx.commit().map_err(|e| fail(e.to_string()))?;
        Ok(Fleet {
            client,
            url: shown(url),
        })
    }

    fn fail(&self, e: postgres::Error) -> StoreError {
        StoreError::Layout {
            path: self.url.clone(),
            why: e.to_string(),
        }
    }

    /// Write one run of `station`, or replace it where it is there.
    pub fn upsert(&mut self, station: &str, local_id: i64, doc: &RunDocument, text: &str) -> Result<(), StoreError> {
        let d = crate::document::device::of(doc);
        let tag = doc.extras.batch.get();
        let host = doc.host.hostname.clone();
        let target = doc.target.as_ref().map_or(String::new(), |t| t.spec.clone());
        self.client
            .execute(
                "INSERT INTO flashlab_runs (station, local_id, host, batch, slot, label, identity, device, \
                 command, target, started_unix, flashlab_version, document) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
                 ON CONFLICT (station, local_id) DO UPDATE SET document = EXCLUDED.document, \
                 identity = EXCLUDED.identity, device = EXCLUDED.device",
                &[
                    &station,
                    &local_id,
                    &host,
                    &tag.map(|t| t.id.clone()),
                    &tag.map(|t| t.slot.clone()),
                    &tag.and_then(|t| t.label.clone()),
                    &d.key,
                    &d.name,
                    &doc.command.as_str(),
                    &target,
                    &(doc.started_unix as i64),
                    &doc.flashlab_version,
                    &text,
                ],
            )
            .map(|_| ())
            .map_err(|e| self.fail(e))
    }

    /// Runs, newest first: of host `host` and batch `batch` where given.
    pub fn list(&mut self, host: Option<&str>, batch: Option<&str>) -> Result<Vec<(RunRow, String)>, StoreError> {
        let rows = self
            .client
            .query(
                "SELECT id, started_unix, command, identity, device, target, host, flashlab_version, document \
                 FROM flashlab_runs WHERE ($1::TEXT IS NULL OR host = $1) AND ($2::TEXT IS NULL OR batch = $2) \
                 ORDER BY id DESC",
                &[&host, &batch],
            )
            .map_err(|e| self.fail(e))?;
        Ok(rows
            .iter()
            .map(|r| {
                let row = RunRow {
                    id: r.get(0),
                    started_unix: r.get::<_, i64>(1).max(0) as u64,
                    command: crate::document::CommandName::parse(r.get(2)),
                    device_key: r.get(3),
                    device: r.get(4),
                    target: r.get(5),
                    host: r.get(6),
                    flashlab_version: r.get(7),
                    verdict: String::new(),
                    label: None,
                };
                (row, r.get(8))
            })
            .collect())
    }

    /// The document of the fleet's run `id`.
    pub fn get(&mut self, id: i64) -> Result<RunDocument, StoreError> {
        let row = self
            .client
            .query_opt("SELECT document FROM flashlab_runs WHERE id = $1", &[&id])
            .map_err(|e| self.fail(e))?
            .ok_or(StoreError::NoSuchRun(id))?;
        let text: String = row.get(0);
        RunDocument::from_json(&text).map_err(|e| StoreError::Layout {
            path: self.url.clone(),
            why: format!("run {id}'s document does not read back: {e}"),
        })
    }

    /// Rows of the fleet in all: for the tests' "every row exactly once".
    pub fn count(&mut self) -> Result<i64, StoreError> {
        let r = self
            .client
            .query_one("SELECT count(*) FROM flashlab_runs", &[])
            .map_err(|e| self.fail(e))?;
        Ok(r.get(0))
    }
}

/// What an upload did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Uploaded {
    /// Runs written to the fleet now.
    pub sent: usize,
    /// Runs the fleet already had as they are.
    pub kept: usize,
}

/// Send every run of `local` the fleet at `url` does not have as it is
/// now. Each run is written, then marked sent in the local store: a kill
/// between the two writes it again next time, over itself.
pub fn upload(local: &mut Store, url: &str) -> Result<Uploaded, StoreError> {
    let mut fleet = Fleet::connect(url)?;
    let station = local.station()?;
    let key = fleet.url.clone();
    let mut done = Uploaded::default();
    for (id, text) in local.documents()? {
        let crc = i64::from(crc32fast::hash(text.as_bytes()));
        if local.uploaded_crc(id, &key)? == Some(crc) {
            done.kept += 1;
            continue;
        }
        let Ok(doc) = RunDocument::from_json(&text) else {
            continue;
        };
        fleet.upsert(&station, id, &doc, &text)?;
        crate::safety::signals::crash_point("fleet upload");
        local.mark_uploaded(id, &key, crc)?;
        done.sent += 1;
    }
    Ok(done)
}

/// Send a station's runs to the fleet and say so in `doc` (and on
/// stderr), or say why they wait: a station cut off from the server has
/// tested all the same, and `flashlab results upload` sends them later.
pub fn upload_and_say(local: &mut Store, url: &str, doc: &mut RunDocument) {
    let shown = shown(url);
    match upload(local, url) {
        Ok(u) => {
            let line = format!("uploaded {} run(s) to {shown} ({} there already)", u.sent, u.kept);
            crate::errln!("{line}");
            doc.note(crate::document::NoteKind::Store, line, None);
        }
        Err(e) => {
            // The URL as shown: a password is not printed, PGPASSWORD
            // gives it to the suggested command.
            let db = crate::places::db_option(&shown);
            let password = if shown == url {
                ""
            } else {
                " (its password from PGPASSWORD)"
            };
            let hint = format!(
                "the runs are kept in the local store; `flashlab results upload{db}` sends them later{password}"
            );
            crate::errln!("warning: not uploaded: {e}\nhint: {hint}");
            doc.warnings.push(crate::document::Note {
                kind: crate::document::NoteKind::Store,
                message: format!("not uploaded: {e}"),
                hint: Some(hint),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(shown("postgres://u:secret@h:5432/db"), "postgres://u@h:5432/db");
        assert_eq!(shown("postgresql://h/db"), "postgresql://h/db");
    }
}
