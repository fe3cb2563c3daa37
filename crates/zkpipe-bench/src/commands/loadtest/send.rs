//! One load job's round trip, the way `--stream` says: as one `Prove` message, or
//! streamed (`SubmitProofStream`, then `AwaitProof`) as `zkpipe submit` streams a large
//! job, so that a job above the daemon's `server.max_request_bytes` still reaches it. The
//! streamed chunks are read from the run's one copy of the witness: a client holds a few
//! chunks at a time, never a copy of the job.

use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;
use zkpipe_proto::upload::{submit_streamed_response, StreamMode, UploadError, WitnessSource};
use zkpipe_server::{pb, server_timing};

pub use zkpipe_cli::client::Stream;

/// How the daemon's gRPC layer words a message above its `server.max_request_bytes`.
const TOO_LARGE: &str = "message length too large";
/// What a job refused for its size could do instead.
const HINT: &str = "the daemon's server.max_request_bytes bounds one message: \
                    --stream auto or always sends a large job in chunks";

/// A job's reply: its result and the daemon's parts of its latency (one entry per part;
/// a streamed job's two calls each have a `receive`, added together).
pub struct Reply {
    /// The job as it ended (or as it stood when the wait ran out).
    pub result: pb::JobResult,
    /// The `server-timing` parts, in order.
    pub server_timing: Vec<(String, f64)>,
}

/// One job of `partitions` copies of `witness` for `key`, sent as `stream` says, awaited
/// up to `timeout`. A refused or failed call is one line, `Code: message`.
pub async fn prove(
    c: &mut zkpipe_proto::Client,
    key: &str,
    witness: &Arc<[u8]>,
    partitions: usize,
    priority: i32,
    timeout: Duration,
    stream: Stream,
) -> Result<Reply, String> {
    let timeout_ms = timeout.as_millis() as u64;
    let sizes = vec![witness.len() as u64; partitions];
    if !StreamMode::from(stream).streams(&sizes) {
        let r = c
            .prove(pb::ProveRequest {
                submit: Some(pb::SubmitProofRequest {
                    key_id: key.to_string(),
                    witnesses: vec![witness.to_vec(); partitions],
                    priority,
                    request_id: String::new(),
                }),
                timeout_ms,
            })
            .await
            .map_err(|s| match s.message().contains(TOO_LARGE) {
                true => format!("{} ({HINT})", line(s.code(), s.message())),
                false => line(s.code(), s.message()),
            })?;
        return Ok(Reply {
            server_timing: server_timing::of_response(&r),
            result: r.into_inner(),
        });
    }
    let header = pb::SubmitProofHeader {
        key_id: key.to_string(),
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
    let submitted = submit_streamed_response(c, header, sources)
        .await
        .map_err(|e| match e {
            UploadError::Rpc(s) => line(s.code(), s.message()),
            // Reading the run's own bytes: only a bug could get here.
            e => match std::error::Error::source(&e) {
                Some(why) => format!("{e}: {why}"),
                None => e.to_string(),
            },
        })?;
    let mut parts = server_timing::of_response(&submitted);
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: submitted.get_ref().job_id,
            timeout_ms,
        })
        .await
        .map_err(|s| line(s.code(), s.message()))?;
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
