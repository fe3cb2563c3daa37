//! How both stores write the engine's values into columns and read them back: states by
//! [`JobState::name`], priorities by [`Priority::rank`], times as milliseconds, a proof's
//! timings as a JSON object keyed by stage name. A priority or state that names nothing this version knows is
//! a [`StoreError::Unknown`]: a job is never silently given another priority or state.

use std::time::{Duration, SystemTime};
use zkpipe_engine::job::UnknownName;
use zkpipe_engine::{JobId, JobState, Priority, ProofTimings, Stage, StoreError};

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

/// A proof's timings as the stores keep them: a JSON object of milliseconds keyed by stage
/// name ([`Stage::name`]; stages without time left out), and `total`.
pub(crate) fn timings_text(t: &ProofTimings) -> String {
    let ms = |d: Duration| serde_json::Value::from(d.as_secs_f64() * 1e3);
    let mut m: serde_json::Map<String, serde_json::Value> =
        t.stages().map(|(s, d)| (s.name().into(), ms(d))).collect();
    m.insert("total".into(), ms(t.total));
    serde_json::Value::Object(m).to_string()
}

/// The inverse of [`timings_text`]. It also reads the positional array rows were written
/// with before stages had names (queue_wait, key_load, reduce, device_wait, device, tail,
/// total, then synthesize, which the oldest rows lack). What it cannot read is zero.
pub(crate) fn timings_from(s: &str) -> ProofTimings {
    const POSITIONAL: [Option<Stage>; 8] = [
        Some(Stage::QueueWait),
        Some(Stage::KeyLoad),
        Some(Stage::Reduce),
        Some(Stage::DeviceWait),
        Some(Stage::Device),
        Some(Stage::Tail),
        None,
        Some(Stage::Synthesize),
    ];
    let mut t = ProofTimings::default();
    // `None` is the total.
    let mut put = |stage: Option<Stage>, ms: Option<f64>| {
        let d = Duration::try_from_secs_f64(ms.unwrap_or(0.0).max(0.0) / 1e3).unwrap_or_default();
        match stage {
            Some(s) => t.set(s, d),
            None => t.total = d,
        }
    };
    match serde_json::from_str(s) {
        Ok(serde_json::Value::Object(m)) => {
            for (name, ms) in m {
                match name.as_str() {
                    "total" => put(None, ms.as_f64()),
                    n => {
                        if let Ok(stage) = n.parse() {
                            put(Some(stage), ms.as_f64());
                        }
                    }
                }
            }
        }
        Ok(serde_json::Value::Array(v)) => {
            for (stage, ms) in POSITIONAL.into_iter().zip(v) {
                put(stage, ms.as_f64());
            }
        }
        _ => {}
    }
    t
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(m: u64) -> Duration {
        Duration::from_millis(m)
    }

    #[test]
    fn timings_round_trip_by_stage_name() {
        let mut t = ProofTimings {
            total: ms(40),
            ..ProofTimings::default()
        };
        t.set(Stage::QueueWait, ms(1));
        t.set(Stage::Synthesize, ms(2));
        t.set(Stage::ReduceWait, ms(3));
        t.set(Stage::Tail, ms(4));
        let text = timings_text(&t);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["queue_wait"], 1.0);
        assert_eq!(v["reduce_wait"], 3.0);
        assert_eq!(v["total"], 40.0);
        assert!(v.get("device").is_none(), "{text}");
        assert_eq!(timings_from(&text), t);
    }

    #[test]
    fn rows_written_as_positional_arrays_still_read() {
        let t = timings_from("[1.5,2,3,4,5,6,70,8]");
        assert_eq!(t.get(Stage::QueueWait), Duration::from_micros(1500));
        assert_eq!(t.get(Stage::KeyLoad), ms(2));
        assert_eq!(t.get(Stage::Reduce), ms(3));
        assert_eq!(t.get(Stage::DeviceWait), ms(4));
        assert_eq!(t.get(Stage::Device), ms(5));
        assert_eq!(t.get(Stage::Tail), ms(6));
        assert_eq!(t.total, ms(70));
        assert_eq!(t.get(Stage::Synthesize), ms(8));
        // The oldest rows have no synthesize.
        let old = timings_from("[1,2,3,4,5,6,70]");
        assert_eq!(old.get(Stage::Synthesize), Duration::ZERO);
        assert_eq!(old.total, ms(70));
        assert_eq!(timings_from(""), ProofTimings::default());
    }
}
