//! The engine's error type. Each variant is one kind of failure a client can act on; the
//! server maps kinds to gRPC status codes in one place.

use std::sync::Arc;
use zkpipe_formats::CurveId;

/// Why a request to the engine failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// No key with this id in the key directory.
    #[error("unknown key id {0:?} (ids are file stems of .zkey files in the key directory)")]
    UnknownKey(String),
    /// A key id that is not a plain file stem.
    #[error(
        "invalid key id {0:?}: only letters, digits, '-', '_' and '.' (not leading) are allowed"
    )]
    InvalidKeyId(String),
    /// A key file that cannot be read, parsed or validated.
    #[error("key {id:?}: {source}")]
    KeyLoad {
        /// The key id.
        id: String,
        /// What is wrong.
        #[source]
        source: Arc<zkpipe_core::Error>,
    },
    /// A key that could not be bound to a device (uploaded there).
    #[error("key {id:?}: binding to device {device}: {source}")]
    Bind {
        /// The key id.
        id: String,
        /// The device's name.
        device: String,
        /// What failed.
        #[source]
        source: Arc<zkpipe_core::Error>,
    },
    /// A partition whose proof failed in a stage (a witness that does not satisfy the
    /// circuit, a device error). Its job fails with "partition N: " and this error.
    #[error("{source}")]
    Proving {
        /// Index of the partition in its job.
        partition: usize,
        /// The stage it failed in ("reduce", "device", "tail").
        stage: &'static str,
        /// What failed.
        #[source]
        source: Arc<zkpipe_core::Error>,
    },
    /// A partition that left the pipeline without a result or an error (a bug); its job
    /// fails rather than waiting forever.
    #[error("lost in the {stage} stage (internal error)")]
    Lost {
        /// Index of the partition in its job.
        partition: usize,
        /// The stage it was in.
        stage: &'static str,
    },
    /// A configuration the engine cannot start with.
    #[error("invalid engine configuration: {0}")]
    Config(String),
    /// The engine could not start a thread or a thread pool.
    #[error("starting {what}: {source}")]
    Start {
        /// What was being started.
        what: String,
        /// Why it failed.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A witness that cannot be parsed.
    #[error("partition {partition}: malformed witness: {message}")]
    MalformedWitness {
        /// Index of the partition in the job.
        partition: usize,
        /// What is wrong.
        message: String,
    },
    /// A witness for a different curve than the key.
    #[error("partition {partition}: witness is for {found}, key {key:?} is for {expected}")]
    WrongCurve {
        /// Index of the partition.
        partition: usize,
        /// The key id.
        key: String,
        /// The witness's curve.
        found: CurveId,
        /// The key's curve.
        expected: CurveId,
    },
    /// A witness whose length is not the key's nVars.
    #[error(
        "partition {partition}: witness has {found} values, key {key:?} expects nVars = {expected}"
    )]
    WitnessMismatch {
        /// Index of the partition.
        partition: usize,
        /// The key id.
        key: String,
        /// The key's nVars.
        expected: usize,
        /// The witness's length.
        found: usize,
    },
    /// A request that breaks a configured limit (no partitions, too many partitions).
    #[error("request rejected: {0}")]
    InvalidRequest(String),
    /// A job that can never fit in the memory budget.
    #[error(
        "job can never fit: {what} needs {needed} bytes, the {budget} budget is {limit} bytes"
    )]
    TooLarge {
        /// What needs the memory.
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Which budget ("host memory", "device 0 memory").
        budget: String,
        /// The budget's limit.
        limit: u64,
    },
    /// Too much is queued already; try again later.
    #[error("engine busy: {0}")]
    Busy(String),
    /// No job with this id (never submitted, or forgotten after its retention time).
    #[error("unknown job {0}")]
    UnknownJob(u64),
    /// A cancel of a job that already finished; its outcome stands.
    #[error("job {id} already finished ({state})")]
    AlreadyFinished {
        /// The job id.
        id: u64,
        /// Its final state.
        state: &'static str,
    },
    /// An evict of a key that in-flight partitions still use.
    #[error("key {id:?} is in use by {refs} partition(s) and cannot be evicted now")]
    KeyInUse {
        /// The key id.
        id: String,
        /// Its reference count.
        refs: usize,
    },
    /// The engine is shutting down.
    #[error("engine is shutting down")]
    ShuttingDown,
    /// The request id names a job submitted with a different key or witnesses.
    #[error("request id {request_id:?} already names job {job}, submitted with a different key or witnesses")]
    RequestIdTaken {
        /// The request id.
        request_id: String,
        /// The job it names.
        job: u64,
    },
    /// The job store failed (nothing was accepted).
    #[error("{0}")]
    Store(Arc<crate::job_store::StoreError>),
    /// Circuit inputs the circuit does not accept: not JSON, an unknown or missing
    /// signal, a wrong number of values, a failed `assert`. Names the signal or the
    /// template and line.
    #[error("partition {partition}: {message}")]
    BadInputs {
        /// Index of the partition in the job.
        partition: usize,
        /// What is wrong, in circom's words where circom says it.
        message: String,
    },
    /// Inputs for a key that has no witness generator (no `<id>.wasm` or native generator
    /// `<id>` beside its `.zkey`, none configured), or one that cannot be loaded.
    #[error("key {key:?}: {message}")]
    Generator {
        /// The key id.
        key: String,
        /// What is missing or wrong.
        message: String,
    },
}

impl EngineError {
    /// A short machine-readable name of the kind, for logs and metrics labels.
    pub fn kind(&self) -> &'static str {
        match self {
            EngineError::UnknownKey(_) => "unknown_key",
            EngineError::InvalidKeyId(_) => "invalid_key_id",
            EngineError::KeyLoad { .. } => "key_load",
            EngineError::Bind { .. } => "bind",
            EngineError::Proving { source, .. } => match **source {
                zkpipe_core::Error::NotSatisfied => "not_satisfied",
                _ => "proving",
            },
            EngineError::Lost { .. } => "lost",
            EngineError::Config(_) => "config",
            EngineError::Start { .. } => "start",
            EngineError::MalformedWitness { .. } => "malformed_witness",
            EngineError::WrongCurve { .. } => "wrong_curve",
            EngineError::WitnessMismatch { .. } => "witness_mismatch",
            EngineError::InvalidRequest(_) => "invalid_request",
            EngineError::TooLarge { .. } => "too_large",
            EngineError::Busy(_) => "busy",
            EngineError::UnknownJob(_) => "unknown_job",
            EngineError::AlreadyFinished { .. } => "already_finished",
            EngineError::KeyInUse { .. } => "key_in_use",
            EngineError::ShuttingDown => "shutting_down",
            EngineError::RequestIdTaken { .. } => "request_id_taken",
            EngineError::Store(_) => "store",
            EngineError::BadInputs { .. } => "bad_inputs",
            EngineError::Generator { .. } => "generator",
        }
    }

    /// A key's load failure.
    pub(crate) fn key_load(id: &str, e: impl Into<zkpipe_core::Error>) -> Self {
        EngineError::KeyLoad {
            id: id.to_string(),
            source: Arc::new(e.into()),
        }
    }
}
