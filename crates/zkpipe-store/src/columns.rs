//! How both stores write the engine's values into columns and read them back: states by
//! [`JobState::name`], priorities by [`Priority::rank`], times as milliseconds, a proof's
//! timings as a JSON array. A priority or state that names nothing this version knows is
//! a [`StoreError::Unknown`]: a job is never silently given another priority or state.

use std::time::{Duration, SystemTime};
use zkpipe_engine::job::UnknownName;
use zkpipe_engine::{JobId, JobState, Priority, ProofTimings, StoreError};

/// A job's state from its column; `path` names the database in the error.
pub(crate) fn state(path: &str, job: JobId, column: &str) -> Result<JobState, StoreError> {
    column.parse().map_err(|e| unknown(path, job, e))
}

/// A job's priority from its column ([`Priority::rank`]).
pub(crate) fn priority(path: &str, job: JobId, column: i64) -> Result<Priority, StoreError> {
    Priority::from_rank(column).map_err(|e| unknown(path, job, e))
}

fn unknown(path: &str, job: JobId, source: UnknownName) -> StoreError {
    StoreError::Unknown {
        path: path.into(),
        job,
        source,
    }
}

/// A proof's timings as the stores keep them: milliseconds, in a JSON array.
pub(crate) fn timings_text(t: &ProofTimings) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    serde_json::to_string(&[
        ms(t.queue_wait),
        ms(t.key_load),
        ms(t.reduce),
        ms(t.device_wait),
        ms(t.device),
        ms(t.tail),
        ms(t.total),
        ms(t.synthesize),
    ])
    .unwrap_or_default()
}

/// The inverse of [`timings_text`].
pub(crate) fn timings_from(s: &str) -> ProofTimings {
    let v: Vec<f64> = serde_json::from_str(s).unwrap_or_default();
    let d = |i: usize| Duration::from_secs_f64(v.get(i).copied().unwrap_or(0.0).max(0.0) / 1e3);
    ProofTimings {
        queue_wait: d(0),
        key_load: d(1),
        reduce: d(2),
        device_wait: d(3),
        device: d(4),
        tail: d(5),
        total: d(6),
        // Added after the others: rows written before it read as zero.
        synthesize: d(7),
    }
}

/// A time as whole milliseconds since the Unix epoch, for the stores' columns.
pub(crate) fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The inverse of [`unix_ms`].
pub(crate) fn from_unix_ms(ms: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}
