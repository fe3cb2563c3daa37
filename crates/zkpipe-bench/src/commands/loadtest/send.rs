//! One load job's round trip, the way `--stream` says: as one `Prove` message, or
//! streamed (`SubmitProofStream`, then `AwaitProof`) as `zkpipe submit` streams a large
//! job, so that a job above the daemon's `server.max_request_bytes` still reaches it. The
//! streamed chunks are read from the run's one copy of the witness: a client holds a few
//! chunks at a time, never a copy of the job.
//!
//! A submission the daemon refuses with "retry later" (RESOURCE_EXHAUSTED: its
//! `server.max_inflight_request_bytes`; UNAVAILABLE: its `pipeline.max_pending_partitions`,
//! or it is starting or stopping) is sent again after a capped exponential backoff, as a
//! well-behaved client does, until the job's timeout runs out ([`next_attempt`]). Any other
//! refusal, and any failure once the daemon accepted the job, fails the job at once.

use super::Load;
use std::io::Cursor;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkpipe_proto::upload::{submit_streamed_response, StreamMode, UploadError, WitnessSource};
use zkpipe_server::{pb, protocol::priority_to_wire, server_timing};

pub use zkpipe_cli::client::Stream;

/// How the daemon's gRPC layer words a message above its `server.max_request_bytes`.
const TOO_LARGE: &str = "message length too large";
/// What a job refused for its size could do instead.
const HINT: &str = "the daemon's server.max_request_bytes bounds one message: \
                    --stream auto or always sends a large job in chunks";

/// gRPC's RESOURCE_EXHAUSTED (the protocol fixes the numbers).
const RESOURCE_EXHAUSTED: i32 = 8;
/// gRPC's UNAVAILABLE.
const UNAVAILABLE: i32 = 14;
/// The wait after a job's first refusal; it doubles with each refusal in a row.
const FIRST_WAIT: Duration = Duration::from_millis(50);
/// The longest wait between two attempts.
const MAX_WAIT: Duration = Duration::from_secs(2);
/// Each wait is shortened by up to this share, at random, so that clients refused
/// together do not all come back together.
const JITTER: f64 = 0.1;

/// A job's reply: its result and the daemon's parts of its latency (one entry per part;
/// a streamed job's two calls each have a `receive`, added together).
pub struct Reply {
    /// The job as it ended (or as it stood when the wait ran out).
    pub result: pb::JobResult,
    /// The `server-timing` parts, in order.
    pub server_timing: Vec<(String, f64)>,
}

/// What became of one job: its reply, or the failure as one line (`Code: message`), and
/// how many times its submission was sent again after a "retry later" refusal.
pub struct Sent {
    /// The reply, or why there is none.
    pub reply: Result<Reply, String>,
    /// Submissions sent again.
    pub retries: usize,
}

/// Why one attempt failed.
enum Failed {
    /// The daemon refused the submission (or the call failed); `later`: with one of its
    /// "retry later" refusals ([`retry_later`]).
    Refused { later: bool, line: String },
    /// Anything else: the job was accepted and its wait failed, or the witness could not
    /// be read.
    Other(String),
}

/// Whether a submission refused with gRPC status `code` and `message` is worth sending
/// again: the daemon's "retry later" refusals. UNAVAILABLE always (pending partitions, a
/// daemon starting or stopping); RESOURCE_EXHAUSTED where its message says "retry later"
/// (bytes in flight), not where a job can never fit the daemon's memory, which shares
/// the code.
pub fn retry_later(code: i32, message: &str) -> bool {
    code == UNAVAILABLE || (code == RESOURCE_EXHAUSTED && message.contains("retry later"))
}

/// The wait after the `n`th refusal in a row (from 1), before jitter: [`FIRST_WAIT`],
/// doubled for each refusal after the first, at most [`MAX_WAIT`].
fn backoff(n: u32) -> Duration {
    let doublings = n.saturating_sub(1).min(16);
    FIRST_WAIT.saturating_mul(1 << doublings).min(MAX_WAIT)
}

/// After the `n`th refusal in a row (from 1) of a job at `now`, `later` where it was a
/// "retry later" refusal ([`retry_later`]): how long to wait before sending it again, or
/// `None` where it is not sent again (not such a refusal, or the wait would reach the
/// job's `deadline`). `jitter`, in [0, 1), shortens the wait by up to [`JITTER`] of it.
pub fn next_attempt(
    later: bool,
    n: u32,
    now: Instant,
    deadline: Instant,
    jitter: f64,
) -> Option<Duration> {
    if !later {
        return None;
    }
    let wait = backoff(n).mul_f64(1.0 - JITTER * jitter.clamp(0.0, 1.0));
    (now + wait < deadline).then_some(wait)
}

/// One job of `load.partitions` copies of its witness for its key, sent as `load.stream`
/// says and awaited, within `load.timeout` from now in all. A "retry later" refusal is
/// sent again until then (unless `load.retry` is off); the job then fails on the last
/// refusal.
pub async fn prove(c: &mut zkpipe_proto::Client, load: &Load) -> Sent {
    let deadline = Instant::now() + load.timeout;
    let mut retries = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (later, line) = match attempt(c, load, left).await {
            Ok(reply) => {
                return Sent {
                    reply: Ok(reply),
                    retries,
                }
            }
            Err(Failed::Refused { later, line }) => (later, line),
            Err(Failed::Other(line)) => {
                return Sent {
                    reply: Err(line),
                    retries,
                }
            }
        };
        let n = u32::try_from(retries + 1).unwrap_or(u32::MAX);
        let wait = load
            .retry
            .then(|| next_attempt(later, n, Instant::now(), deadline, rand::random()))
            .flatten();
        let Some(wait) = wait else {
            let line = match retries {
                0 => line,
                _ => format!(
                    "{line} (the last of {} refusals: --timeout ran out)",
                    retries + 1
                ),
            };
            return Sent {
                reply: Err(line),
                retries,
            };
        };
        tokio::time::sleep(wait).await;
        retries += 1;
    }
}

/// One attempt at a job, its wait at most `left`.
async fn attempt(
    c: &mut zkpipe_proto::Client,
    load: &Load,
    left: Duration,
) -> Result<Reply, Failed> {
    // At least a millisecond: a wait of 0 would answer at once with the job unfinished.
    let timeout_ms = (left.as_millis() as u64).max(1);
    let priority = priority_to_wire(load.priority) as i32;
    let witness = &load.witness;
    let partitions = load.partitions;
    let sizes = vec![witness.len() as u64; partitions];
    if !StreamMode::from(load.stream).streams(&sizes) {
        let r = c
            .prove(pb::ProveRequest {
                submit: Some(pb::SubmitProofRequest {
                    key_id: load.key.clone(),
                    witnesses: vec![witness.to_vec(); partitions],
                    priority,
                    request_id: String::new(),
                }),
                timeout_ms,
            })
            .await
            .map_err(|s| {
                let line = match s.message().contains(TOO_LARGE) {
                    true => format!("{} ({HINT})", line(s.code(), s.message())),
                    false => line(s.code(), s.message()),
                };
                Failed::Refused {
                    later: retry_later(s.code().into(), s.message()),
                    line,
                }
            })?;
        return Ok(Reply {
            server_timing: server_timing::of_response(&r),
            result: r.into_inner(),
        });
    }
    let header = pb::SubmitProofHeader {
        key_id: load.key.clone(),
        priority,
        request_id: String::new(),
        witness_sizes: Vec::new(),
    };
    let sources = (0..partitions)
        .map(|i| {
            let bytes = Cursor::new(Arc::clone(witness));
            WitnessSource::new(format!("partition {i}"), witness.len() as u64, bytes)
        })
        .collect();
    // Refused at the header or later in the stream: the same status, whose code decides.
    let submitted = submit_streamed_response(c, header, sources)
        .await
        .map_err(|e| match e {
            UploadError::Rpc(s) => Failed::Refused {
                later: retry_later(s.code().into(), s.message()),
                line: line(s.code(), s.message()),
            },
            // Reading the run's own bytes: only a bug could get here.
            e => Failed::Other(match std::error::Error::source(&e) {
                Some(why) => format!("{e}: {why}"),
                None => e.to_string(),
            }),
        })?;
    let mut parts = server_timing::of_response(&submitted);
    // Accepted: a failed wait is the job's failure, never a reason to submit it again.
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: submitted.get_ref().job_id,
            timeout_ms,
        })
        .await
        .map_err(|s| Failed::Other(line(s.code(), s.message())))?;
    for (name, ms) in server_timing::of_response(&r) {
        match parts.iter_mut().find(|p| p.0 == name) {
            Some(p) => p.1 += ms,
            None => parts.push((name, ms)),
        }
    }
    Ok(Reply {
        result: r.into_inner(),
        server_timing: parts,
    })
}

/// A failed call as one line, as its status gives it.
fn line(code: impl std::fmt::Debug, message: &str) -> String {
    format!("{code:?}: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkpipe_engine::EngineError;
    use zkpipe_server::service::status;
    use zkpipe_server::upload::InFlight;

    /// The daemon's "retry later" refusals (pending partitions, bytes in flight, a daemon
    /// stopping) are sent again; a refusal of the request itself is not.
    #[test]
    fn only_the_daemons_retry_later_refusals_are_sent_again() {
        let later = [
            status(EngineError::Busy("4 partitions pending, at most 4".into())),
            status(EngineError::ShuttingDown),
            InFlight::new(1).take(2).unwrap_err(),
        ];
        for s in &later {
            assert!(retry_later(s.code().into(), s.message()), "{s:?}");
        }
        let never = [
            status(EngineError::UnknownKey("k".into())),
            status(EngineError::InvalidRequest("0 partitions".into())),
            status(EngineError::MalformedWitness {
                partition: 0,
                message: "short".into(),
            }),
            status(EngineError::RequestIdTaken {
                request_id: "r".into(),
                job: 1,
            }),
            // RESOURCE_EXHAUSTED as the bytes in flight are, but it can never fit.
            status(EngineError::TooLarge {
                what: "key k and one partition".into(),
                needed: 2,
                budget: "host memory".into(),
                limit: 1,
            }),
        ];
        for s in &never {
            let later = retry_later(s.code().into(), s.message());
            assert!(!later, "{s:?}");
            let now = Instant::now();
            let deadline = now + Duration::from_secs(60);
            assert_eq!(next_attempt(later, 1, now, deadline, 0.0), None);
        }
    }

    /// Waits start at 50 ms and double up to 2 s; jitter only shortens them, by at most
    /// a tenth; a wait that would reach the deadline is not taken.
    #[test]
    fn the_backoff_doubles_up_to_its_cap_and_stops_at_the_deadline() {
        let now = Instant::now();
        let later = now + Duration::from_secs(3600);
        let ms =
            |n, jitter| next_attempt(true, n, now, later, jitter).map(|d| d.as_millis() as u64);
        let waits: Vec<u64> = (1..=9).map(|n| ms(n, 0.0).unwrap()).collect();
        assert_eq!(waits, [50, 100, 200, 400, 800, 1600, 2000, 2000, 2000]);
        assert_eq!(
            ms(u32::MAX, 0.0),
            Some(2000),
            "no overflow after many refusals"
        );
        for n in [1, 4, 40] {
            for jitter in [0.0, 0.5, 0.999, 7.0] {
                let plain = ms(n, 0.0).unwrap();
                let w = ms(n, jitter).unwrap();
                assert!(
                    w <= plain && w * 10 >= plain * 9,
                    "{w} ms against {plain} ms"
                );
            }
        }
        let soon = now + Duration::from_millis(120);
        assert!(next_attempt(true, 2, now, soon, 0.0).is_some());
        assert_eq!(next_attempt(true, 3, now, soon, 0.0), None);
    }
}
