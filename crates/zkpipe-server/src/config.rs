//! The daemon's configuration file (`zkpipe.toml`), read in two steps: the raw file as
//! written ([`FileConfig`], strings for sizes and durations), then validated into the
//! engine's typed [`EngineConfig`] plus the server's own [`ServerConfig`]. Every bad value
//! is an error naming its field; nothing falls back silently. `zkpipe.example.toml` at the
//! repository root documents every knob and its default.
//!
//! `zkpipe serve`'s flags and environment variables override the file through
//! [`Overrides`]: flag > environment > file > default.

use crate::auth::Token;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `server.stream_idle_timeout`'s default.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
use zkpipe_engine::config::machine_memory;
use zkpipe_engine::{EngineConfig, StageConfig};
use zkpipe_store::DEFAULT_INLINE_MAX;

mod keys;
mod lab;
mod secrets;
mod settings;
mod store;
mod units;

use keys::{key_options, KeyOptionsSection};
use secrets::{tls, token};
use settings::apply_setting;
use store::store;
pub use units::{parse_duration, parse_size};
use units::{size_or_auto, Size};

/// Why a configuration is unusable.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigError {
    /// The file (or "configuration" when there is none).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// The server's own settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// gRPC address. Default 127.0.0.1:50051.
    pub grpc_listen: SocketAddr,
    /// HTTP address for /metrics, /healthz, /trace. Default 127.0.0.1:9464.
    pub http_listen: SocketAddr,
    /// Largest request accepted, in bytes (a streamed job's largest message). Default 64 MiB.
    pub max_request_bytes: usize,
    /// Witness bytes all jobs being received may hold together; a job that would pass it
    /// is refused with RESOURCE_EXHAUSTED. Default a quarter of the machine's memory.
    pub max_inflight_request_bytes: u64,
    /// Longest AwaitProof/Prove wait. Default 1 h.
    pub max_await: Duration,
    /// Longest a streamed job's client may go without sending a message before the stream
    /// is refused (it holds in-flight bytes, and maybe a staging turn). Default 30 s.
    pub stream_idle_timeout: Duration,
    /// Where the job store lives (`jobs.sqlite3`): accepted jobs, their witnesses until
    /// they end, results for `pipeline.job_retention`. Default `zkpipe-state` beside the
    /// config file.
    pub state_dir: PathBuf,
    /// The bearer token every call must carry, if any. Required when either address is
    /// not loopback.
    pub token: Option<Token>,
    /// Certificate chain and private key (PEM) for TLS on both listeners, if any.
    pub tls: Option<TlsPem>,
    /// After SIGTERM/SIGINT, how long unfinished jobs may run before the rest is left in
    /// the job store for the next start.
    /// Default 5 s.
    pub shutdown_grace: Duration,
    /// Witnesses up to this size are stored inside the job database; larger ones as files
    /// beside it (`state_dir/witnesses/`). Default 64 KiB
    /// (`zkpipe_store::DEFAULT_INLINE_MAX`).
    pub witness_inline_max: u64,
    /// Whether spilled witnesses are synced before a job is acknowledged (default true:
    /// an accepted job survives a power cut). False: it survives a daemon crash, not a
    /// power cut (`zkpipe_store::SqliteOptions::witness_sync`).
    pub witness_sync: bool,
    /// The fleet's shared job store (`[store] url`), if any: then jobs live there and this
    /// daemon claims its work from it; else the embedded store in `state_dir`.
    pub store: Option<zkpipe_store::PgOptions>,
    /// Pinned host memory that stages uploads to a GPU (`device.pinned_upload`: "portable",
    /// or "write-combined" in a `lab` build). Default portable. The binary hands it to the
    /// GPU device set it makes.
    pub pinned_upload: zkpipe_core::PinnedKind,
}

/// A TLS identity as read from `server.tls_cert` and `server.tls_key`.
#[derive(Clone)]
pub struct TlsPem {
    /// The certificate chain, leaf first (PEM).
    pub cert: Vec<u8>,
    /// Its private key (PEM).
    pub key: Vec<u8>,
}

impl std::fmt::Debug for TlsPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TlsPem({} bytes of certificate)", self.cert.len())
    }
}

/// Values given outside the file (`serve`'s flags and environment variables), which
/// replace the file's. Relative paths here are taken as they are (relative to the working
/// directory), not relative to the file's folder.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `server.grpc_listen`.
    pub grpc_listen: Option<SocketAddr>,
    /// `server.http_listen`.
    pub http_listen: Option<SocketAddr>,
    /// `keys.dir`.
    pub key_dir: Option<PathBuf>,
    /// `server.token_file`.
    pub token_file: Option<PathBuf>,
    /// `server.state_dir`.
    pub state_dir: Option<PathBuf>,
    /// The token itself (`ZKPIPE_TOKEN`); it takes precedence over any token file.
    pub token: Option<String>,
    /// `store.url` (`ZKPIPE_STORE_URL`: it may hold a password, so never a flag).
    pub store_url: Option<String>,
    /// Any other value, as `section.key = value` (`serve --set`, `ZKPIPE_SET`), applied to
    /// the file before it is read: a value that is not TOML is taken as a string.
    pub settings: Vec<String>,
}

/// The state directory's default name, beside the config file.
pub const DEFAULT_STATE_DIR: &str = "zkpipe-state";

/// Both halves of a validated configuration.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Server settings.
    pub server: ServerConfig,
    /// Engine settings.
    pub engine: EngineConfig,
}

/// The raw file: every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileConfig {
    server: ServerSection,
    keys: KeysSection,
    memory: MemorySection,
    pipeline: PipelineSection,
    synthesize: StageSection,
    /// Key id → witness generator (circom `.wasm` or native generator), relative to the
    /// file's folder.
    generators: std::collections::HashMap<String, PathBuf>,
    reduce: StageSection,
    device: DeviceSection,
    tail: TailSection,
    store: StoreSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct StoreSection {
    url: Option<String>,
    daemon: Option<String>,
    objects: Option<String>,
    inline_max: Option<Size>,
    connections: Option<u32>,
    lease: Option<String>,
    claim_ahead: Option<usize>,
    poll: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ServerSection {
    grpc_listen: Option<String>,
    http_listen: Option<String>,
    /// Obsolete: a token is what allows non-loopback addresses now. Still read, so that
    /// old files load; it changes nothing.
    allow_remote: Option<bool>,
    max_request_bytes: Option<Size>,
    max_inflight_request_bytes: Option<Size>,
    max_await: Option<String>,
    stream_idle_timeout: Option<String>,
    state_dir: Option<PathBuf>,
    token_file: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    shutdown_grace: Option<String>,
    witness_inline_max: Option<Size>,
    witness_sync: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct KeysSection {
    dir: Option<PathBuf>,
    checks: Option<String>,
    idle_timeout: Option<String>,
    max_devices: Option<usize>,
    /// Key id → the key's own options (`[keys.options.<id>]`).
    options: BTreeMap<String, KeyOptionsSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct MemorySection {
    host_limit: Option<Size>,
    device_limit: Option<Size>,
    pinned_limit: Option<Size>,
    stream_batch: Option<usize>,
    pool_max: Option<Size>,
    dealloc_queue: Option<usize>,
    dealloc: Option<String>,
    returns: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct PipelineSection {
    queue_depth: Option<usize>,
    max_partitions_per_job: Option<usize>,
    max_pending_partitions: Option<usize>,
    self_check: Option<bool>,
    constant_work: Option<bool>,
    schedule: Option<String>,
    job_retention: Option<String>,
    retain_jobs: Option<usize>,
    retain_bytes: Option<Size>,
    trace_capacity: Option<usize>,
    throttle: Option<String>,
    throttle_every: Option<usize>,
    throttle_max_pause: Option<String>,
    pools: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct StageSection {
    workers: Option<usize>,
    threads: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct TailSection {
    workers: Option<usize>,
    threads: Option<usize>,
    batch: Option<usize>,
    always_spread: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct DeviceSection {
    workers: Option<usize>,
    threads: Option<usize>,
    passes: Option<usize>,
    batch: Option<usize>,
    overlap_share: Option<f64>,
    release_before_tail: Option<bool>,
    pinned_upload: Option<String>,
    split: Option<usize>,
    stub_delay: Option<String>,
}

fn addr(v: &Option<String>, default: &str, field: &str) -> Result<SocketAddr, String> {
    let s = v.as_deref().unwrap_or(default);
    s.parse()
        .map_err(|_| format!("{field}: {s:?} is not an ip:port address"))
}

fn stage(s: &StageSection, default: StageConfig) -> StageConfig {
    StageConfig {
        workers: s.workers.unwrap_or(default.workers),
        threads: s.threads.unwrap_or(default.threads),
    }
}

impl FileConfig {
    /// Reads and validates a config file (or, without one, the defaults), with
    /// `overrides` applied; relative paths in the file are relative to its folder.
    pub fn load(path: Option<&Path>, overrides: &Overrides) -> Result<DaemonConfig, ConfigError> {
        let name = path.map_or("configuration".into(), |p| p.display().to_string());
        let err = |message: String| ConfigError {
            path: name.clone(),
            message,
        };
        let (mut text, base) = match path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
                (text, path.parent().unwrap_or(Path::new(".")).to_path_buf())
            }
            None => (String::new(), PathBuf::from(".")),
        };
        if !overrides.settings.is_empty() {
            let mut table: toml::Table =
                toml::from_str(&text).map_err(|e| err(e.message().to_string()))?;
            for setting in &overrides.settings {
                apply_setting(&mut table, setting).map_err(&err)?;
            }
            text = toml::to_string(&table).map_err(|e| err(e.to_string()))?;
        }
        let raw: FileConfig = toml::from_str(&text).map_err(|e: toml::de::Error| {
            // The line at fault, where the parser knows it (a value set with --set too).
            let at = e
                .span()
                .and_then(|s| text[..s.start].rfind('\n').map(|b| b + 1).or(Some(0)))
                .and_then(|b| text[b..].lines().next())
                .map_or(String::new(), |l| format!(" (at `{}`)", l.trim()));
            err(format!("{}{at}", e.message()))
        })?;
        raw.validate_with(&base, overrides).map_err(err)
    }

    /// Validates the raw values; `base` resolves relative paths.
    pub fn validate(self, base: &Path) -> Result<DaemonConfig, String> {
        self.validate_with(base, &Overrides::default())
    }

    /// [`FileConfig::validate`] with `o` replacing the file's values.
    pub fn validate_with(mut self, base: &Path, o: &Overrides) -> Result<DaemonConfig, String> {
        lab::refuse_lab_settings(&self)?;
        let s = &mut self.server;
        if let Some(a) = o.grpc_listen {
            s.grpc_listen = Some(a.to_string());
        }
        if let Some(a) = o.http_listen {
            s.http_listen = Some(a.to_string());
        }
        // An absolute path survives `base.join`; the working directory resolves the rest.
        let cwd = |p: &PathBuf| std::env::current_dir().map_or_else(|_| p.clone(), |d| d.join(p));
        if let Some(p) = &o.token_file {
            s.token_file = Some(cwd(p));
        }
        if let Some(p) = &o.key_dir {
            self.keys.dir = Some(cwd(p));
        }
        if let Some(p) = &o.state_dir {
            s.state_dir = Some(cwd(p));
        }
        if let Some(u) = &o.store_url {
            self.store.url = Some(u.clone());
        }
        let d = EngineConfig::default();
        let s = &self.server;
        let grpc_listen = addr(&s.grpc_listen, "127.0.0.1:50051", "server.grpc_listen")?;
        let http_listen = addr(&s.http_listen, "127.0.0.1:9464", "server.http_listen")?;
        let token = token(o, s.token_file.as_deref(), base)?;
        if token.is_none() {
            for (field, a) in [("grpc_listen", grpc_listen), ("http_listen", http_listen)] {
                if !a.ip().is_loopback() {
                    return Err(format!(
                        "server.{field}: {a} is beyond loopback and no token is set: set one with server.token_file, --token-file/ZKPIPE_TOKEN_FILE or ZKPIPE_TOKEN (at least {} characters, e.g. `openssl rand -hex 32`)",
                        Token::MIN_LEN
                    ));
                }
            }
        }
        let server = ServerConfig {
            grpc_listen,
            http_listen,
            max_request_bytes: size_or_auto(&s.max_request_bytes, Some(64 << 20))
                .map_err(|e| format!("server.max_request_bytes: {e}"))?
                .unwrap_or(64 << 20) as usize,
            max_inflight_request_bytes: match size_or_auto(
                &s.max_inflight_request_bytes,
                Some(machine_memory() / 4),
            ) {
                Ok(Some(b)) if b > 0 => b,
                Ok(_) => {
                    return Err("server.max_inflight_request_bytes: must be at least 1 byte".into())
                }
                Err(e) => return Err(format!("server.max_inflight_request_bytes: {e}")),
            },
            max_await: match &s.max_await {
                Some(t) => parse_duration(t).map_err(|e| format!("server.max_await: {e}"))?,
                None => Duration::from_secs(3600),
            },
            stream_idle_timeout: match &s.stream_idle_timeout {
                Some(t) => match parse_duration(t) {
                    Ok(d) if d.is_zero() => {
                        return Err("server.stream_idle_timeout: must be more than 0".into())
                    }
                    Ok(d) => d,
                    Err(e) => return Err(format!("server.stream_idle_timeout: {e}")),
                },
                None => DEFAULT_STREAM_IDLE_TIMEOUT,
            },
            state_dir: base.join(
                s.state_dir
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR)),
            ),
            token,
            pinned_upload: match &self.device.pinned_upload {
                Some(k) => k
                    .parse()
                    .map_err(|e| format!("device.pinned_upload: {e}"))?,
                None => zkpipe_core::PinnedKind::default(),
            },
            witness_inline_max: size_or_auto(&s.witness_inline_max, Some(DEFAULT_INLINE_MAX))
                .map_err(|e| format!("server.witness_inline_max: {e}"))?
                .unwrap_or(DEFAULT_INLINE_MAX),
            witness_sync: match (s.witness_sync, &self.store.url) {
                (Some(false), Some(_)) => {
                    return Err(
                        "server.witness_sync = false applies to the embedded job store; \
                                a shared store ([store] url) keeps its witnesses itself"
                            .into(),
                    )
                }
                (sync, _) => sync.unwrap_or(true),
            },
            store: store(&self.store, grpc_listen)?,
            tls: tls(s, base)?,
            shutdown_grace: match &s.shutdown_grace {
                Some(t) => parse_duration(t).map_err(|e| format!("server.shutdown_grace: {e}"))?,
                None => Duration::from_secs(5),
            },
        };
        let memory_limit = size_or_auto(&self.memory.host_limit, Some(machine_memory() / 2))
            .map_err(|e| format!("memory.host_limit: {e}"))?
            .unwrap_or(d.memory_limit);
        let dur = |v: &Option<String>, field: &str, default: Duration| match v {
            Some(t) => parse_duration(t).map_err(|e| format!("{field}: {e}")),
            None => Ok(default),
        };
        let p = &self.pipeline;
        let engine = EngineConfig {
            key_dir: base.join(self.keys.dir.clone().unwrap_or(d.key_dir.clone())),
            key_checks: match &self.keys.checks {
                Some(c) => c.parse().map_err(|e| format!("keys.checks: {e}"))?,
                None => d.key_checks,
            },
            key_idle_timeout: dur(
                &self.keys.idle_timeout,
                "keys.idle_timeout",
                d.key_idle_timeout,
            )?,
            key_max_devices: match self.keys.max_devices {
                Some(0) => return Err("keys.max_devices: must be at least 1".into()),
                Some(n) => n,
                None => d.key_max_devices,
            },
            memory_limit,
            device_memory_limit: size_or_auto(&self.memory.device_limit, None)
                .map_err(|e| format!("memory.device_limit: {e}"))?,
            stream_batch: match self.memory.stream_batch {
                Some(0) => return Err("memory.stream_batch: must be at least 1".into()),
                Some(n) => n,
                None => d.stream_batch,
            },
            // Half of the host budget ("auto") unless set; 0 turns the tier off. Pinned
            // copies made a streamed 2^24 key's proofs 1.2-1.35x faster (lab 043g).
            pinned_memory_limit: size_or_auto(&self.memory.pinned_limit, Some(memory_limit / 2))
                .map_err(|e| format!("memory.pinned_limit: {e}"))?
                .unwrap_or(memory_limit / 2),
            pool_max_bytes: size_or_auto(&self.memory.pool_max, Some(memory_limit / 8))
                .map_err(|e| format!("memory.pool_max: {e}"))?
                .unwrap_or(memory_limit / 8),
            dealloc_queue: self.memory.dealloc_queue.unwrap_or(d.dealloc_queue),
            dealloc: match &self.memory.dealloc {
                Some(m) => m.parse().map_err(|e| format!("memory.dealloc: {e}"))?,
                None => d.dealloc,
            },
            returns: match &self.memory.returns {
                Some(m) => m.parse().map_err(|e| format!("memory.returns: {e}"))?,
                None => d.returns,
            },
            synthesize: stage(&self.synthesize, d.synthesize),
            generators: self
                .generators
                .iter()
                .map(|(k, p)| (k.clone(), base.join(p)))
                .collect(),
            reduce: stage(&self.reduce, d.reduce),
            device: stage(
                &StageSection {
                    workers: self.device.workers,
                    threads: self.device.threads,
                },
                d.device,
            ),
            device_split: self.device.split.unwrap_or(d.device_split),
            // A lab tool (its proofs' device time is not real): refused in a product build.
            device_stub: match &self.device.stub_delay {
                Some(_) if !cfg!(feature = "lab") => {
                    return Err("device.stub_delay is a lab tool: build with --features lab".into())
                }
                Some(t) => Some(parse_duration(t).map_err(|e| format!("device.stub_delay: {e}"))?),
                None => d.device_stub,
            },
            device_passes: self.device.passes.or(d.device_passes),
            device_batch: self.device.batch.or(d.device_batch),
            device_overlap_share: self.device.overlap_share.unwrap_or(d.device_overlap_share),
            tail: stage(
                &StageSection {
                    workers: self.tail.workers,
                    threads: self.tail.threads,
                },
                d.tail,
            ),
            tail_batch: self.tail.batch.unwrap_or(d.tail_batch),
            tail_always_spread: self.tail.always_spread.unwrap_or(d.tail_always_spread),
            queue_depth: p.queue_depth.unwrap_or(d.queue_depth),
            max_partitions_per_job: p.max_partitions_per_job.unwrap_or(d.max_partitions_per_job),
            max_pending_partitions: p.max_pending_partitions.unwrap_or(d.max_pending_partitions),
            self_check: p.self_check.unwrap_or(d.self_check),
            constant_work: p.constant_work.unwrap_or(d.constant_work),
            key_options: key_options(
                &self.keys.options,
                p.constant_work.unwrap_or(d.constant_work),
            )?,
            schedule: match &p.schedule {
                Some(s) => s.parse().map_err(|e| format!("pipeline.schedule: {e}"))?,
                None => d.schedule,
            },
            job_retention: dur(&p.job_retention, "pipeline.job_retention", d.job_retention)?,
            retain_jobs: match p.retain_jobs {
                Some(0) => return Err("pipeline.retain_jobs: must be at least 1".into()),
                Some(n) => n,
                None => d.retain_jobs,
            },
            retain_bytes: match size_or_auto(&p.retain_bytes, Some(d.retain_bytes)) {
                Ok(Some(0)) => return Err("pipeline.retain_bytes: must be at least 1".into()),
                Ok(n) => n.unwrap_or(d.retain_bytes),
                Err(e) => return Err(format!("pipeline.retain_bytes: {e}")),
            },
            trace_capacity: p.trace_capacity.unwrap_or(d.trace_capacity),
            throttle: zkpipe_engine::config::ThrottleConfig {
                mode: match &p.throttle {
                    Some(m) => m.parse().map_err(|e| format!("pipeline.throttle: {e}"))?,
                    None => d.throttle.mode,
                },
                every: match p.throttle_every {
                    Some(0) => return Err("pipeline.throttle_every: must be at least 1".into()),
                    Some(n) => n,
                    None => d.throttle.every,
                },
                max_pause: dur(
                    &p.throttle_max_pause,
                    "pipeline.throttle_max_pause",
                    d.throttle.max_pause,
                )?,
            },
            pools: match &p.pools {
                Some(m) => m.parse().map_err(|e| format!("pipeline.pools: {e}"))?,
                None => d.pools,
            },
            release_before_tail: self
                .device
                .release_before_tail
                .unwrap_or(d.release_before_tail),
            fleet: zkpipe_engine::FleetConfig {
                claim_ahead: self.store.claim_ahead.unwrap_or(d.fleet.claim_ahead),
                lease: dur(&self.store.lease, "store.lease", d.fleet.lease)?,
                poll: dur(&self.store.poll, "store.poll", d.fleet.poll)?,
            },
        };
        engine.validate()?;
        // Said only of a file that is otherwise good: a refusal stays one line.
        if self.server.allow_remote.is_some() {
            tracing::warn!("server.allow_remote is obsolete and ignored: a token (server.token_file or ZKPIPE_TOKEN) is what allows non-loopback addresses");
        }
        Ok(DaemonConfig { server, engine })
    }
}

#[cfg(test)]
mod tests;
