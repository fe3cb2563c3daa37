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
use zkpipe_engine::{Engine, EngineError, StreamPlan, SubmitRequest};
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
    /// `plan`: a streamed job's header, whose reserved partitions the job takes over (or
    /// gives back, refused).
    async fn submit<W: PartitionBytes + Send + 'static>(
        &self,
        submit: SubmitRequest<W>,
        plan: Option<StreamPlan>,
    ) -> Result<zkpipe_engine::Submitted, Status> {
        if !self.accepting.load(Ordering::Acquire) {
            return Err(Status::unavailable(
                "the daemon is shutting down and accepts no new jobs",
            ));
        }
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || match plan {
            Some(plan) => engine.submit_streamed(plan, submit),
            None => engine.submit(submit),
        })
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
        let s = self.submit(submit, None).await?;
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
        // many partitions pending (the plan holds this job's places from now on, and
        // gives them back if the stream fails or is refused), too many bytes in flight.
        // Resolving a key reads its file's header: off the async threads.
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
        let s = self
            .submit(upload::request(header, witnesses)?, Some(plan))
            .await?;
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
        let s = self.submit(submit, None).await?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use tokio::sync::mpsc;
    use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
    use zkpipe_proto::pb::submit_proof_chunk::Part;
    use zkpipe_proto::server::prover_server::ProverServer;
    use zkpipe_proto::{connect, Client, ClientOptions};

    const KEY: &str = "bn254-multi";

    fn fixture(file: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/bn254/multi_public")
            .join(file)
    }

    /// The service on loopback over an engine of one key that holds at most 4
    /// partitions pending: the engine (to read its count) and a client.
    async fn serve(keys: &Path) -> (Engine, Client) {
        std::fs::copy(fixture("circuit.zkey"), keys.join(format!("{KEY}.zkey"))).unwrap();
        let small = zkpipe_engine::StageConfig {
            workers: 1,
            threads: 1,
        };
        let config = zkpipe_engine::EngineConfig {
            key_dir: keys.into(),
            key_checks: zkpipe_core::PointChecks::Trusted,
            memory_limit: 1 << 30,
            reduce: small,
            device: small,
            tail: small,
            max_partitions_per_job: 4,
            max_pending_partitions: 4,
            ..Default::default()
        };
        let devices = Arc::new(zkpipe_engine::CpuDevices::default());
        let engine = Engine::start(config, devices).unwrap();
        let accepting = Arc::new(AtomicBool::new(true));
        let svc = ProverService::new(engine.clone(), Duration::from_secs(60), accepting);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tonic::transport::Server::builder()
            .add_service(ProverServer::new(svc))
            .serve_with_incoming(TcpListenerStream::new(listener));
        tokio::spawn(server);
        let client = connect(&ClientOptions::new(format!("http://{addr}")))
            .await
            .unwrap();
        (engine, client)
    }

    fn header(sizes: Vec<u64>) -> pb::SubmitProofChunk {
        pb::SubmitProofChunk {
            part: Some(Part::Header(pb::SubmitProofHeader {
                key_id: KEY.into(),
                witness_sizes: sizes,
                ..Default::default()
            })),
        }
    }

    /// A stream of `chunks`, left open while its sender lives.
    async fn open(
        chunks: Vec<pb::SubmitProofChunk>,
    ) -> (
        mpsc::Sender<pb::SubmitProofChunk>,
        ReceiverStream<pb::SubmitProofChunk>,
    ) {
        let (tx, rx) = mpsc::channel(8);
        for c in chunks {
            tx.send(c).await.unwrap();
        }
        (tx, ReceiverStream::new(rx))
    }

    /// Whether `done` holds within a minute (polled).
    async fn within_a_minute(done: impl Fn() -> bool) -> bool {
        for _ in 0..600 {
            if done() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// A stream's header takes its partitions' places under max_pending_partitions: a
    /// header that would pass the limit is answered UNAVAILABLE on its own, the stream
    /// still open and no witness byte sent; the client that holds the places going away
    /// gives them back, and a job of the full size is then accepted and proved.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_header_without_room_is_refused_and_a_dropped_stream_gives_its_room_back() {
        let keys = tempfile::tempdir().unwrap();
        let (engine, mut c) = serve(keys.path()).await;
        let wtns = std::fs::read(fixture("witness.wtns")).unwrap();
        let w = wtns.len() as u64;

        // A client that sends its header and then nothing: its 3 places are held.
        let (holder_tx, holder) = open(vec![header(vec![w; 3])]).await;
        let mut holder_client = c.clone();
        let holding = tokio::spawn(async move { holder_client.submit_proof_stream(holder).await });
        assert!(within_a_minute(|| engine.pending_partitions() == 3).await);

        let (tx, refused) = open(vec![header(vec![w; 2])]).await;
        let call = c.submit_proof_stream(refused);
        let e = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .expect("the daemon waited for witness bytes instead of refusing the header")
            .unwrap_err();
        drop(tx);
        assert_eq!(e.code(), tonic::Code::Unavailable, "{e:?}");
        assert!(
            e.message()
                .contains("3 partitions pending, at most 4 (pipeline.max_pending_partitions)"),
            "{e:?}"
        );
        assert_eq!(engine.pending_partitions(), 3);

        // The holder goes away mid-stream: its places come back.
        holding.abort();
        drop(holder_tx);
        assert!(
            within_a_minute(|| engine.pending_partitions() == 0).await,
            "a dropped stream kept {} places",
            engine.pending_partitions()
        );

        let mut chunks = vec![header(vec![w; 4])];
        chunks.extend((0..4).map(|_| pb::SubmitProofChunk {
            part: Some(Part::Data(wtns.clone())),
        }));
        let (tx, full) = open(chunks).await;
        drop(tx);
        let job = c.submit_proof_stream(full).await.unwrap().into_inner();
        let done = engine.wait(job.job_id, Duration::from_secs(120)).unwrap();
        assert_eq!(
            done.state,
            zkpipe_engine::JobState::Done,
            "{:?}",
            done.error
        );
        assert!(within_a_minute(|| engine.pending_partitions() == 0).await);
        engine.shutdown();
    }
}
