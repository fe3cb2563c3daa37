//! The gRPC service: a thin adapter from protobuf to the engine. Engine errors map to
//! status codes in one place, [`status`].
// tonic's `Status` is the error type of every gRPC method; boxing it here buys nothing.
#![allow(clippy::result_large_err)]

use crate::decode;
use crate::server_timing::Phases;
use crate::wire as pb;
use crate::wire::prover_server::Prover;
use prost::bytes::Bytes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tonic::{Request, Response, Status};
use zkpipe_engine::{
    Engine, EngineError, EngineStatus, JobSnapshot, JobState, Priority, ProofTimings, SubmitRequest,
};

/// The service over one engine.
pub struct ProverService {
    engine: Engine,
    max_await: Duration,
    accepting: Arc<AtomicBool>,
}

impl ProverService {
    /// Serves `engine`; waits are capped at `max_await`. New jobs are accepted while
    /// `accepting` holds (the daemon clears it when it begins to shut down).
    pub fn new(engine: Engine, max_await: Duration, accepting: Arc<AtomicBool>) -> Self {
        Self {
            engine,
            max_await,
            accepting,
        }
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

fn priority_to(p: Priority) -> pb::Priority {
    match p {
        Priority::Low => pb::Priority::Low,
        Priority::Normal => pb::Priority::Normal,
        Priority::High => pb::Priority::High,
        Priority::Critical => pb::Priority::Critical,
    }
}

fn state_to(s: JobState) -> pb::JobState {
    match s {
        JobState::Queued => pb::JobState::Queued,
        JobState::Running => pb::JobState::Running,
        JobState::Done => pb::JobState::Done,
        JobState::Failed => pb::JobState::Failed,
        JobState::Cancelled => pb::JobState::Cancelled,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn timings(t: &ProofTimings) -> pb::ProofTimings {
    use zkpipe_engine::Stage;
    let at = |s: Stage| ms(t.get(s));
    pb::ProofTimings {
        queue_wait_ms: at(Stage::QueueWait),
        key_load_ms: at(Stage::KeyLoad),
        reduce_ms: at(Stage::Reduce),
        synthesize_ms: at(Stage::Synthesize),
        device_wait_ms: at(Stage::DeviceWait),
        device_ms: at(Stage::Device),
        tail_ms: at(Stage::Tail),
        total_ms: ms(t.total),
    }
}

fn job_result(s: JobSnapshot) -> pb::JobResult {
    pb::JobResult {
        job_id: s.id,
        state: state_to(s.state) as i32,
        key_id: s.key_id,
        proofs: s
            .proofs
            .into_iter()
            .map(|p| pb::PartitionProof {
                timings: Some(timings(&p.timings)),
                proof_json: p.proof_json,
                public_json: p.public_json,
            })
            .collect(),
        error: s.error.unwrap_or_default(),
        partitions: s.partitions as u32,
        partitions_done: s.partitions_done as u32,
    }
}

fn status_response(s: EngineStatus) -> pb::StatusResponse {
    pb::StatusResponse {
        queues: Some(pb::Queues {
            admission: s.queues.admission as u32,
            reduce: s.queues.reduce as u32,
            synthesize: s.queues.synthesize as u32,
            device: s.queues.device.iter().map(|&d| d as u32).collect(),
            tail: s.queues.tail as u32,
        }),
        jobs: s
            .jobs
            .into_iter()
            .map(|j| pb::JobInfo {
                job_id: j.id,
                key_id: j.key_id,
                priority: priority_to(j.priority) as i32,
                state: state_to(j.state) as i32,
                partitions: j.partitions as u32,
                partitions_done: j.partitions_done as u32,
                request_id: j.request_id,
                error: j.error.unwrap_or_default(),
            })
            .collect(),
        keys: s
            .keys
            .into_iter()
            .map(|k| pb::KeyInfo {
                id: k.meta.id,
                curve: k.meta.shape.curve.snarkjs_name().into(),
                residency: k.residency.name().into(),
                refs: k.refs as u32,
                host_bytes: k.meta.host_bytes,
                partition_bytes: k.meta.partition_bytes,
                n_vars: k.meta.shape.n_vars as u32,
                domain_size: k.meta.shape.domain_size as u32,
                device: k.devices.first().map_or(-1, |&d| d as i32),
                devices: k.devices.iter().map(|&d| d as u32).collect(),
                loads: k.loads,
                idle_s: k.idle.as_secs_f64(),
            })
            .collect(),
        devices: s
            .devices
            .into_iter()
            .map(|d| pb::DeviceInfo {
                name: d.name,
                has_memory: d.memory_total.is_some(),
                memory_total: d.memory_total.unwrap_or(0),
                memory_reserved: d.memory_reserved,
                memory_free: d
                    .memory_total
                    .unwrap_or(0)
                    .saturating_sub(d.memory_reserved),
                busy_fraction: d.busy_fraction,
                keys: d.keys as u32,
            })
            .collect(),
        memory_used: s.memory_used,
        memory_limit: s.memory_limit,
        pending_partitions: s.pending_partitions as u64,
        uptime_s: s.uptime.as_secs_f64(),
    }
}

impl ProverService {
    /// Accepting a job checks every witness and commits it to the job store, which blocks:
    /// that runs off the async threads, so that other requests (awaits, status) go on.
    async fn submit(
        &self,
        submit: SubmitRequest<Bytes>,
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

#[tonic::async_trait]
impl Prover for ProverService {
    async fn submit_proof(
        &self,
        req: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let mut phases = Phases::start(&req);
        let s = self
            .submit(decode::submit_request(req.into_inner())?)
            .await?;
        phases.end("accept");
        let mut response = Response::new(pb::SubmitProofResponse {
            job_id: s.job_id,
            existing: s.existing,
        });
        phases.attach(&mut response);
        Ok(response)
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
        req: Request<pb::ProveRequest>,
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
            state: state_to(state) as i32,
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
        Ok(Response::new(pb::TraceResponse {
            chrome_json: self.engine.trace_json(),
        }))
    }
}

impl ProverService {
    fn residency(&self, id: &str) -> String {
        self.engine
            .status()
            .keys
            .into_iter()
            .find(|k| k.meta.id == id)
            .map_or_else(|| "unknown".into(), |k| k.residency.name().into())
    }
}
