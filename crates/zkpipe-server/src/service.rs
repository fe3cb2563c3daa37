//! The gRPC service: a thin adapter from protobuf to the engine. Messages map to engine
//! types in [`crate::protocol`]; engine errors map to status codes in one place, [`status`].
// tonic's `Status` is the error type of every gRPC method; boxing it here buys nothing.
#![allow(clippy::result_large_err)]

use crate::decode;
use crate::protocol::{job_result, state_to_wire, status_response};
use crate::server_timing::Phases;
use crate::upload::{self, InFlight};
use prost::bytes::Bytes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tonic::{Request, Response, Status, Streaming};
use zkpipe_engine::job_store::PartitionBytes;
use zkpipe_engine::{Engine, EngineError, SubmitRequest};
use zkpipe_proto::pb;
use zkpipe_proto::server::{self as wire, prover_server::Prover};

/// The service over one engine.
pub struct ProverService {
    engine: Engine,
    max_await: Duration,
    accepting: Arc<AtomicBool>,
    in_flight: InFlight,
    /// Turns of the streams whose witnesses are written to the store's files.
    staging: Arc<Semaphore>,
    /// `server.stream_idle_timeout`.
    stream_idle: Duration,
}

impl ProverService {
    /// Serves `engine`; waits are capped at `max_await`. New jobs are accepted while
    /// `accepting` holds (the daemon clears it when it begins to shut down).
    pub fn new(engine: Engine, max_await: Duration, accepting: Arc<AtomicBool>) -> Self {
        Self {
            engine,
            max_await,
            accepting,
            in_flight: InFlight::new(u64::MAX),
            staging: Arc::new(Semaphore::new(upload::STAGING_STREAMS)),
            stream_idle: crate::config::DEFAULT_STREAM_IDLE_TIMEOUT,
        }
    }

    /// Bounds the witness bytes of the jobs being received, together
    /// (`server.max_inflight_request_bytes`; no bound by default).
    pub fn max_inflight_bytes(mut self, bytes: u64) -> Self {
        self.in_flight = InFlight::new(bytes);
        self
    }

    /// Refuses a streamed job whose client sends nothing for `idle`
    /// (`server.stream_idle_timeout`).
    pub fn stream_idle_timeout(mut self, idle: Duration) -> Self {
        self.stream_idle = idle;
        self
    }
}

/// The gRPC status of an engine error.
pub fn status(e: EngineError) -> Status {
    let msg = e.to_string();
    match e {
        EngineError::UnknownKey(_) | EngineError::UnknownJob(_) => Status::not_found(msg),
        EngineError::InvalidKeyId(_)
        | EngineError::MalformedWitness { .. }
        | EngineError::WrongCurve { .. }
        | EngineError::WitnessMismatch { .. }
        | EngineError::InvalidRequest(_)
        | EngineError::BadInputs { .. } => Status::invalid_argument(msg),
        EngineError::TooLarge { .. } => Status::resource_exhausted(msg),
        EngineError::Busy(_) | EngineError::ShuttingDown | EngineError::Store(_) => {
            Status::unavailable(msg)
        }
        EngineError::RequestIdTaken { .. } => Status::already_exists(msg),
        EngineError::AlreadyFinished { .. }
        | EngineError::KeyInUse { .. }
        | EngineError::KeyLoad { .. }
        | EngineError::Bind { .. }
        | EngineError::Generator { .. } => Status::failed_precondition(msg),
        _ => Status::internal(msg),
    }
}

impl ProverService {
    /// Accepting a job checks every witness and commits it to the job store, which blocks:
    /// that runs off the async threads, so that other requests (awaits, status) go on.
    async fn submit<W: PartitionBytes + Send + 'static>(
        &self,
        submit: SubmitRequest<W>,
    ) -> Result<zkpipe_engine::Submitted, Status> {
        if !self.accepting.load(Ordering::Acquire) {
            return Err(Status::unavailable(
                "the daemon is shutting down and accepts no new jobs",
            ));
        }
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || engine.submit(submit))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(status)
    }

    /// Waits for `job`; its time goes into `phases` as `ended` (up to the job's end) and
    /// `wake` (see [`Phases::end_wait`]).
    async fn wait(
        &self,
        job: u64,
        timeout_ms: u64,
        phases: &mut Phases,
        ended: &'static str,
    ) -> Result<pb::JobResult, Status> {
        let timeout = Duration::from_millis(timeout_ms).min(self.max_await);
        let s = self.engine.wait_async(job, timeout).await.map_err(status)?;
        phases.end_wait(ended, s.finished_at);
        Ok(job_result(s))
    }
}

/// The answer to a submission (unary or streamed) that the engine accepted, its phases
/// up to the acceptance attached.
fn accepted(s: zkpipe_engine::Submitted, phases: &mut Phases) -> Response<pb::SubmitProofResponse> {
    phases.end("accept");
    let mut response = Response::new(pb::SubmitProofResponse {
        job_id: s.job_id,
        existing: s.existing,
    });
    phases.attach(&mut response);
    response
}

#[tonic::async_trait]
impl Prover for ProverService {
    async fn submit_proof(
        &self,
        req: Request<wire::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let mut phases = Phases::start(&req);
        let submit = decode::submit_request(req.into_inner())?;
        let _held = self.in_flight.take(witness_bytes(&submit.witnesses))?;
        let s = self.submit(submit).await?;
        Ok(accepted(s, &mut phases))
    }

    async fn submit_proof_stream(
        &self,
        req: Request<Streaming<wire::SubmitProofChunk>>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let mut phases = Phases::start(&req);
        let mut stream = req.into_inner();
        let header = upload::header(stream.message().await?)?;
        if !self.accepting.load(Ordering::Acquire) {
            return Err(Status::unavailable(
                "the daemon is shutting down and accepts no new jobs",
            ));
        }
        let total = header
            .witness_sizes
            .iter()
            .try_fold(0u64, |t, &s| t.checked_add(s))
            .ok_or_else(|| Status::invalid_argument("the witness sizes overflow 64 bits"))?;
        // Refused before any witness byte is read: bad key, too many partitions, too
        // many bytes in flight. Resolving a key reads its file's header: off the async
        // threads.
        let engine = self.engine.clone();
        let (key, sizes) = (header.key_id.clone(), header.witness_sizes.clone());
        let plan = tokio::task::spawn_blocking(move || engine.plan_stream(&key, &sizes))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(status)?;
        let held = self.in_flight.take(total)?;
        let to = upload::Destination {
            engine: &self.engine,
            turns: &self.staging,
            idle: self.stream_idle,
        };
        let witnesses = upload::receive(&plan, to, &mut stream, status).await?;
        phases.end("upload");
        let s = self.submit(upload::request(header, witnesses)?).await?;
        drop(held);
        Ok(accepted(s, &mut phases))
    }

    async fn await_proof(
        &self,
        req: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::JobResult>, Status> {
        let mut phases = Phases::start(&req);
        let r = req.into_inner();
        let result = self
            .wait(r.job_id, r.timeout_ms, &mut phases, "wait")
            .await?;
        let mut response = Response::new(result);
        phases.attach(&mut response);
        Ok(response)
    }

    async fn prove(
        &self,
        req: Request<wire::ProveRequest>,
    ) -> Result<Response<pb::JobResult>, Status> {
        let mut phases = Phases::start(&req);
        let (submit, timeout_ms) = decode::prove_request(req.into_inner())?;
        let s = self.submit(submit).await?;
        phases.end("accept");
        let result = self
            .wait(s.job_id, timeout_ms, &mut phases, "prove")
            .await?;
        let mut response = Response::new(result);
        phases.attach(&mut response);
        Ok(response)
    }

    async fn cancel_proof(
        &self,
        req: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let id = req.into_inner().job_id;
        self.engine.cancel(id).map_err(status)?;
        let state = self.engine.job_status(id).map_err(status)?.state;
        Ok(Response::new(pb::CancelProofResponse {
            state: state_to_wire(state) as i32,
        }))
    }

    async fn get_status(
        &self,
        _req: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::StatusResponse>, Status> {
        let engine = self.engine.clone();
        let s = tokio::task::spawn_blocking(move || engine.status())
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(status_response(s)))
    }

    async fn get_metrics(
        &self,
        _req: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::MetricsResponse>, Status> {
        Ok(Response::new(pb::MetricsResponse {
            text: self.engine.metrics_text(),
        }))
    }

    async fn preload_key(
        &self,
        req: Request<pb::KeyRequest>,
    ) -> Result<Response<pb::KeyResponse>, Status> {
        let r = req.into_inner();
        let timeout = match r.timeout_ms {
            0 => Duration::from_secs(60),
            t => Duration::from_millis(t).min(self.max_await),
        };
        let engine = self.engine.clone();
        let id = r.key_id.clone();
        let before = self.residency(&r.key_id);
        tokio::task::spawn_blocking(move || engine.preload(&id, timeout))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(status)?;
        Ok(Response::new(pb::KeyResponse {
            residency: self.residency(&r.key_id),
            changed: before != "hot",
        }))
    }

    async fn evict_key(
        &self,
        req: Request<pb::KeyRequest>,
    ) -> Result<Response<pb::KeyResponse>, Status> {
        let id = req.into_inner().key_id;
        let changed = self.engine.evict(&id).map_err(status)?;
        Ok(Response::new(pb::KeyResponse {
            residency: self.residency(&id),
            changed,
        }))
    }

    async fn get_trace(
        &self,
        _req: Request<pb::GetTraceRequest>,
    ) -> Result<Response<pb::TraceResponse>, Status> {
        // The message is one string; building it off the async threads, event by event,
        // costs its own bytes and no JSON tree.
        let engine = self.engine.clone();
        let chrome_json = tokio::task::spawn_blocking(move || engine.trace_json())
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(pb::TraceResponse { chrome_json }))
    }
}

/// The bytes of a request's witnesses, together.
fn witness_bytes(witnesses: &[Bytes]) -> u64 {
    witnesses.iter().map(|w| w.len() as u64).sum()
}

impl ProverService {
    /// One key's residency, without the status of every job and key.
    fn residency(&self, id: &str) -> String {
        self.engine
            .key_residency(id)
            .map_or_else(|| "unknown".into(), |r| r.name().into())
    }
}
