//! The SQLite store's tables and their versions (`PRAGMA user_version`): a database of an
//! older version is upgraded in place when it is opened; one of a newer version is
//! refused. Priorities are kept as [`zkpipe_engine::Priority::rank`] and states as
//! [`zkpipe_engine::JobState::name`], as every version has written them.

use rusqlite::Connection;

/// The schema version this code reads and writes. Version 2 added
/// `partitions.witness_file`. The index `jobs_finished` (finished jobs by when they ended,
/// for forgetting them) is made by every open where it is missing: older versions' files
/// get it without a new version, and read the same with it.
pub(super) const SCHEMA_VERSION: i64 = 2;

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    key_id       TEXT    NOT NULL,
    priority     INTEGER NOT NULL,
    request_id   TEXT,
    fingerprint  BLOB    NOT NULL,
    state        TEXT    NOT NULL,
    error        TEXT,
    submitted_ms INTEGER NOT NULL,
    finished_ms  INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_request_id ON jobs (request_id)
    WHERE request_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_ms)
    WHERE finished_ms IS NOT NULL;
CREATE TABLE IF NOT EXISTS partitions (
    job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,
    witness     BLOB,
    witness_file TEXT,
    proof_json  TEXT,
    public_json TEXT,
    timings     TEXT,
    PRIMARY KEY (job_id, idx)
);
";

/// Creates the tables, or upgrades an older version's.
pub(super) fn apply(conn: &Connection) -> Result<(), String> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if version > SCHEMA_VERSION {
        return Err(format!(
            "schema version {version} is newer than this zkpipe understands ({SCHEMA_VERSION})"
        ));
    }
    conn.execute_batch(SCHEMA).map_err(|e| e.to_string())?;
    if version == 1 {
        conn.execute_batch("ALTER TABLE partitions ADD COLUMN witness_file TEXT")
            .map_err(|e| e.to_string())?;
    }
    conn.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(|e| e.to_string())
}
