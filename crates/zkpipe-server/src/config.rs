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
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_parse_or_fail_loudly() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("3"), Ok(3));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5 parsecs").is_err());
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert!(parse_duration("10").is_err());
    }

    #[test]
    fn the_example_config_is_valid_and_complete() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../zkpipe.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let raw: FileConfig = toml::from_str(&text).unwrap();
        let c = raw.validate(Path::new("/srv")).unwrap();
        assert!(c.server.grpc_listen.ip().is_loopback());
        assert_eq!(c.engine.key_dir, Path::new("/srv/keys"));
        assert_eq!(c.server.state_dir, Path::new("/srv/zkpipe-state"));
        // Unknown fields and non-loopback addresses are refused.
        assert!(c.server.token.is_none() && c.server.tls.is_none());
        // No store URL: the embedded store, with the fleet's defaults spelled out.
        assert!(c.server.store.is_none());
        assert_eq!(c.engine.fleet, zkpipe_engine::FleetConfig::default());
        // Unknown fields and non-loopback addresses without a token are refused.
        assert!(toml::from_str::<FileConfig>("[server]\nport = 1").is_err());
        let remote: FileConfig = toml::from_str("[server]\ngrpc_listen = \"0.0.0.0:1\"").unwrap();
        assert!(remote
            .validate(Path::new("."))
            .unwrap_err()
            .contains("no token is set"));
        let bad: FileConfig = toml::from_str("[memory]\nhost_limit = \"8 bananas\"").unwrap();
        assert!(bad
            .validate(Path::new("."))
            .unwrap_err()
            .contains("memory.host_limit"));
        let zero: FileConfig = toml::from_str("[server]\nmax_inflight_request_bytes = 0").unwrap();
        assert_eq!(
            zero.validate(Path::new(".")).unwrap_err(),
            "server.max_inflight_request_bytes: must be at least 1 byte"
        );
        assert_eq!(c.server.stream_idle_timeout, DEFAULT_STREAM_IDLE_TIMEOUT);
        for (value, error) in [
            ("\"0s\"", "server.stream_idle_timeout: must be more than 0"),
            ("\"soon\"", "server.stream_idle_timeout: "),
        ] {
            let bad: FileConfig =
                toml::from_str(&format!("[server]\nstream_idle_timeout = {value}")).unwrap();
            let e = bad.validate(Path::new(".")).unwrap_err();
            assert!(e.starts_with(error) && e.lines().count() == 1, "{e}");
        }
    }

    #[test]
    fn settings_replace_file_values_and_bad_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("z.toml");
        std::fs::write(
            &file,
            "[pipeline]\nqueue_depth = 3\n[server]\nwitness_inline_max = \"2MiB\"",
        )
        .unwrap();
        let with = |settings: &[&str]| {
            let o = Overrides {
                settings: settings.iter().map(|s| s.to_string()).collect(),
                ..Overrides::default()
            };
            FileConfig::load(Some(&file), &o)
        };
        let c = with(&[]).unwrap();
        assert_eq!(
            (c.engine.queue_depth, c.server.witness_inline_max),
            (3, 2 << 20)
        );
        let c = with(&["pipeline.queue_depth=9", "server.witness_inline_max = 5"]).unwrap();
        assert_eq!((c.engine.queue_depth, c.server.witness_inline_max), (9, 5));
        assert!(!c.engine.constant_work, "off unless asked for");
        let c = with(&["pipeline.constant_work=true"]).unwrap();
        assert!(c.engine.constant_work);
        assert!(c.server.witness_sync, "synced unless asked otherwise");
        let c = with(&["server.witness_sync=false"]).unwrap();
        assert!(!c.server.witness_sync);
        let e = with(&[
            "server.witness_sync=false",
            "store.url=postgres://db.example/zkpipe",
        ])
        .unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("server.witness_sync") && e.contains("embedded"),
            "{e}"
        );
        // Not TOML: a string, so the usual "unit" parsing reads it.
        let c = with(&["server.witness_inline_max=128KiB"]).unwrap();
        assert_eq!(c.server.witness_inline_max, 128 << 10);
        let c = with(&["device.pinned_upload=write-combined"]);
        if cfg!(feature = "lab") {
            let c = c.unwrap();
            assert_eq!(
                c.server.pinned_upload,
                zkpipe_core::PinnedKind::WriteCombined
            );
        } else {
            assert!(c.unwrap_err().to_string().contains("is a lab setting"));
        }
        let c = with(&["device.pinned_upload=portable"]).unwrap();
        assert_eq!(c.server.pinned_upload, zkpipe_core::PinnedKind::Portable);
        let c = with(&["pipeline.retain_jobs=5", "pipeline.retain_bytes=1MiB"]).unwrap();
        assert_eq!((c.engine.retain_jobs, c.engine.retain_bytes), (5, 1 << 20));
        for (bad, says) in [
            ("queue_depth=1", "not section.key=value"),
            ("pipeline.nope=1", "nope"),
            ("pipeline.queue_depth=x", "queue_depth"),
            (
                "server.witness_inline_max=8 bananas",
                "server.witness_inline_max",
            ),
            ("device.pinned_upload=fast", "device.pinned_upload"),
            ("pipeline.retain_jobs=0", "pipeline.retain_jobs: must be"),
            ("pipeline.retain_bytes=0", "pipeline.retain_bytes: must be"),
            ("pipeline.retain_bytes=lots", "pipeline.retain_bytes"),
        ] {
            let e = with(&[bad]).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn overrides_replace_the_file_and_a_token_allows_other_addresses() {
        let raw = |t: &str| toml::from_str::<FileConfig>(t).unwrap();
        let o = Overrides {
            grpc_listen: Some("0.0.0.0:7".parse().unwrap()),
            key_dir: Some("/k".into()),
            state_dir: Some("/st".into()),
            token: Some(" 0123456789abcdef\n".into()),
            ..Overrides::default()
        };
        let file = "[server]\ngrpc_listen = \"127.0.0.1:1\"\n[keys]\ndir = \"x\"";
        let c = raw(file).validate_with(Path::new("/srv"), &o).unwrap();
        assert_eq!(c.server.grpc_listen, "0.0.0.0:7".parse().unwrap());
        assert_eq!(c.server.http_listen, "127.0.0.1:9464".parse().unwrap());
        assert_eq!(c.engine.key_dir, Path::new("/k"));
        assert_eq!(c.server.state_dir, Path::new("/st"));
        assert!(c.server.token.is_some());
        assert_eq!(c.server.shutdown_grace, Duration::from_secs(5));
        let short = Overrides {
            token: Some("0123".into()),
            ..o.clone()
        };
        let e = raw(file).validate_with(Path::new("."), &short).unwrap_err();
        assert!(
            e.starts_with("ZKPIPE_TOKEN: ") && e.contains("at least 16"),
            "{e}"
        );
        let e = raw("[server]\ntoken_file = \"/no/such/token\"")
            .validate(Path::new("."))
            .unwrap_err();
        assert!(e.starts_with("server.token_file: /no/such/token"), "{e}");
        let cfg = |t: &str| raw(t).validate(Path::new("."));
        assert!(cfg("[server]\ntls_cert = \"c.pem\"")
            .unwrap_err()
            .contains("go together"));
        assert!(cfg("[server]\nshutdown_grace = \"5\"")
            .unwrap_err()
            .contains("server.shutdown_grace"));
        // Old files still load; allow_remote alone allows nothing.
        assert!(cfg("[server]\nallow_remote = true").is_ok());
        assert!(
            cfg("[server]\nallow_remote = true\nhttp_listen = \"0.0.0.0:1\"")
                .unwrap_err()
                .contains("server.http_listen: 0.0.0.0:1 is beyond loopback")
        );
    }

    #[test]
    fn device_passes_and_key_devices_are_read_and_checked() {
        let cfg = |text: &str| {
            toml::from_str::<FileConfig>(text)
                .unwrap()
                .validate(Path::new("."))
        };
        let c = cfg("[device]\npasses = 3\n[keys]\nmax_devices = 2").unwrap();
        assert_eq!(c.engine.device_passes, Some(3));
        assert_eq!(c.engine.key_max_devices, 2);
        let d = cfg("").unwrap();
        assert_eq!(d.engine.device_passes, None, "the devices decide");
        assert!(cfg("[device]\npasses = 0").unwrap_err().contains("passes"));
        assert!(cfg("[keys]\nmax_devices = 0")
            .unwrap_err()
            .contains("max_devices"));
        assert!(toml::from_str::<FileConfig>("[reduce]\npasses = 2").is_err());
    }

    #[test]
    fn device_batch_is_read_and_checked() {
        let cfg = |text: &str| {
            toml::from_str::<FileConfig>(text)
                .unwrap()
                .validate(Path::new("."))
        };
        assert_eq!(
            cfg("[device]\nbatch = 8").unwrap().engine.device_batch,
            Some(8)
        );
        assert_eq!(
            cfg("[device]\nbatch = 1").unwrap().engine.device_batch,
            Some(1),
            "1 turns batching off"
        );
        assert_eq!(
            cfg("").unwrap().engine.device_batch,
            None,
            "the backend's limit decides"
        );
        assert!(cfg("[device]\nbatch = 0").unwrap_err().contains("batch"));
        assert!(toml::from_str::<FileConfig>("[device]\nbatch = -1").is_err());
        assert!(toml::from_str::<FileConfig>("[reduce]\nbatch = 2").is_err());
        let share = |text: &str| cfg(text).map(|c| c.engine.device_overlap_share);
        assert_eq!(share(""), Ok(2.0));
        assert_eq!(share("[device]\noverlap_share = 0"), Ok(0.0), "at once");
        assert_eq!(share("[device]\noverlap_share = 1.5"), Ok(1.5));
        assert!(share("[device]\noverlap_share = -1.0")
            .unwrap_err()
            .contains("overlap_share"));
        assert!(share("[device]\noverlap_share = nan")
            .unwrap_err()
            .contains("overlap_share"));
    }

    #[test]
    fn device_split_is_read_and_checked() {
        let cfg = |text: &str| {
            toml::from_str::<FileConfig>(text)
                .unwrap()
                .validate(Path::new("."))
        };
        assert_eq!(cfg("").unwrap().engine.device_split, 1);
        assert_eq!(cfg("[device]\nsplit = 2").unwrap().engine.device_split, 2);
        assert!(cfg("[device]\nsplit = 0").unwrap_err().contains("split"));
        assert!(cfg("[device]\nsplit = 65").unwrap_err().contains("split"));
        assert_eq!(cfg("").unwrap().engine.device_stub, None);
        let stub = cfg("[device]\nstub_delay = \"2ms\"");
        #[cfg(not(feature = "lab"))]
        assert!(stub.unwrap_err().contains("lab"));
        #[cfg(feature = "lab")]
        assert_eq!(
            stub.unwrap().engine.device_stub,
            Some(Duration::from_millis(2))
        );
    }

    #[test]
    fn tail_batch_is_read_and_checked() {
        let cfg = |text: &str| {
            toml::from_str::<FileConfig>(text)
                .unwrap()
                .validate(Path::new("."))
        };
        let c = cfg("[tail]\nbatch = 3\nworkers = 5").unwrap();
        assert_eq!((c.engine.tail_batch, c.engine.tail.workers), (3, 5));
        assert_eq!(cfg("").unwrap().engine.tail_batch, 16);
        assert!(cfg("[tail]\nbatch = 0").unwrap_err().contains("batch"));
    }

    #[test]
    fn the_pinned_limit_is_half_the_host_limit_unless_set_and_within_it() {
        let cfg = |text: &str| {
            toml::from_str::<FileConfig>(text)
                .unwrap()
                .validate(Path::new("."))
        };
        let host = "[memory]\nhost_limit = \"8GiB\"\n";
        let pinned =
            |text: &str| cfg(&format!("{host}{text}")).map(|c| c.engine.pinned_memory_limit);
        assert_eq!(pinned(""), Ok(4 << 30));
        assert_eq!(pinned("pinned_limit = \"auto\""), Ok(4 << 30));
        assert_eq!(pinned("pinned_limit = \"1GiB\""), Ok(1 << 30));
        assert_eq!(pinned("pinned_limit = 0"), Ok(0));
        let over = pinned("pinned_limit = \"9GiB\"").unwrap_err();
        assert!(over.contains("memory.pinned_limit"), "{over}");
        let bad = pinned("pinned_limit = \"lots\"").unwrap_err();
        assert!(bad.starts_with("memory.pinned_limit"), "{bad}");
    }

    #[test]
    fn the_stream_batch_is_the_devices_default_unless_set_and_at_least_one() {
        let batch = |text: &str| {
            toml::from_str::<FileConfig>(&format!("[memory]\n{text}"))
                .unwrap()
                .validate(Path::new("."))
                .map(|c| c.engine.stream_batch)
        };
        assert_eq!(batch(""), Ok(0));
        assert_eq!(batch("stream_batch = 3"), Ok(3));
        let zero = batch("stream_batch = 0").unwrap_err();
        assert!(zero.starts_with("memory.stream_batch"), "{zero}");
    }

    #[test]
    fn dealloc_and_returns_modes_are_read_and_checked() {
        use zkpipe_engine::config::{DeallocMode, ReturnMode};
        let cfg = |text: &str| {
            toml::from_str::<FileConfig>(text)
                .unwrap()
                .validate(Path::new("."))
        };
        let d = cfg("").unwrap().engine;
        assert_eq!(
            (d.dealloc, d.returns),
            (DeallocMode::Worker, ReturnMode::DrainAll),
            "today's mechanisms by default"
        );
        for (text, mode) in [
            ("worker", DeallocMode::Worker),
            ("in-place", DeallocMode::InPlace),
            ("detached", DeallocMode::Detached),
        ] {
            let c = cfg(&format!("[memory]\ndealloc = \"{text}\""));
            assert_eq!(mode.to_string(), text);
            // A lab setting reads only in a `lab` build (config/lab.rs).
            if mode == DeallocMode::Detached && !cfg!(feature = "lab") {
                assert!(c.unwrap_err().contains("is a lab setting"));
                continue;
            }
            assert_eq!(c.unwrap().engine.dealloc, mode);
        }
        for (text, mode) in [
            ("drain-all", ReturnMode::DrainAll),
            ("cas-pop", ReturnMode::CasPop),
            ("free", ReturnMode::Free),
        ] {
            let c = cfg(&format!("[memory]\nreturns = \"{text}\""));
            assert_eq!(mode.to_string(), text);
            if mode != ReturnMode::DrainAll && !cfg!(feature = "lab") {
                assert!(c.unwrap_err().contains("is a lab setting"));
                continue;
            }
            assert_eq!(c.unwrap().engine.returns, mode);
        }
        let e = cfg("[memory]\ndealloc = \"threads\"").unwrap_err();
        assert_eq!(
            e,
            r#"memory.dealloc: "threads" is not one of "worker", "in-place", "detached""#
        );
        let e = cfg("[memory]\nreturns = \"Drain-All\"").unwrap_err();
        assert_eq!(
            e,
            r#"memory.returns: "Drain-All" is not one of "drain-all", "cas-pop", "free""#
        );
        assert!(toml::from_str::<FileConfig>("[memory]\ndealloc = 1").is_err());
        assert!(toml::from_str::<FileConfig>("[pipeline]\nreturns = \"free\"").is_err());
        // The example names the deallocation with its default, and no lab setting: in a
        // product build `returns` has nothing to choose between.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../zkpipe.example.toml");
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains("\ndealloc = \"worker\"\n"));
        let raw: FileConfig = toml::from_str(&text).unwrap();
        assert!(lab::refuse_lab_settings(&raw).is_ok());
    }

    #[test]
    fn a_store_url_makes_a_fleet_daemon_and_fleet_settings_need_it() {
        let cfg = |text: &str, o: &Overrides| {
            toml::from_str::<FileConfig>(text)
                .unwrap()
                .validate_with(Path::new("."), o)
        };
        let none = Overrides::default();
        let c = cfg(
            "[server]\ngrpc_listen = \"127.0.0.1:7000\"\n[store]\nurl = \"postgres://db/z\"\nlease = \"9s\"\nclaim_ahead = 5",
            &none,
        )
        .unwrap();
        let s = c.server.store.unwrap();
        assert_eq!(s.url, "postgres://db/z");
        assert!(s.daemon.ends_with(":7000"), "{}", s.daemon);
        assert_eq!((s.inline_max, s.connections), (64 << 10, 8));
        assert_eq!(c.engine.fleet.lease, Duration::from_secs(9));
        assert_eq!(c.engine.fleet.claim_ahead, 5);
        // The environment's URL replaces the file's.
        let env = Overrides {
            store_url: Some("postgres://other/z".into()),
            ..Overrides::default()
        };
        let c = cfg("[store]\ndaemon = \"n1\"", &env).unwrap();
        let s = c.server.store.unwrap();
        assert_eq!(
            (s.url.as_str(), s.daemon.as_str()),
            ("postgres://other/z", "n1")
        );
        // Fleet settings without a URL, and bad values, are named.
        let e = cfg("[store]\ndaemon = \"n1\"", &none).unwrap_err();
        assert_eq!(e, "store.daemon is set but store.url is not");
        let e = cfg("[store]\nurl = \"postgres://db/z\"\nclaim_ahead = 0", &none).unwrap_err();
        assert!(e.contains("store.claim_ahead"), "{e}");
        let e = cfg("[store]\nurl = \"postgres://db/z\"\nlease = \"10\"", &none).unwrap_err();
        assert!(e.starts_with("store.lease"), "{e}");
    }

    #[test]
    fn keys_take_their_own_options_or_the_daemon_wide_ones() {
        let cfg = |t: &str| {
            toml::from_str::<FileConfig>(t)
                .unwrap()
                .validate(Path::new("."))
        };
        let c = cfg(
            "[pipeline]\nconstant_work = true\n[keys.options.a]\nconstant_work = false\n\
                     [keys.options.b]\n",
        )
        .unwrap();
        let on = |id: &str| c.engine.bind_options(id).constant_work;
        assert!(!on("a") && on("b") && on("other"));
        let c = cfg("[keys.options.a]\nconstant_work = true").unwrap();
        let on = |id: &str| c.engine.bind_options(id).constant_work;
        assert!(on("a") && !on("b"));
        let e = cfg("[keys.options.\"../x\"]\nconstant_work = true").unwrap_err();
        assert!(e.starts_with("keys.options.../x: "), "{e}");
        assert!(toml::from_str::<FileConfig>("[keys.options.a]\nfast = true").is_err());
    }
}
