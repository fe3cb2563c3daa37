//! The daemon's configuration file (`zkpipe.toml`), read in two steps: the raw file as
//! written ([`FileConfig`], strings for sizes and durations), then validated into the
//! engine's typed [`EngineConfig`] plus the server's own [`ServerConfig`]. Every bad value
//! is an error naming its field; nothing falls back silently. `zkpipe.example.toml` at the
//! repository root documents every knob and its default.

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use zkpipe_engine::config::machine_memory;
use zkpipe_engine::{EngineConfig, StageConfig};

/// Why a configuration is unusable.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigError {
    /// The file (or "<defaults>").
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
    /// Largest request accepted, in bytes. Default 64 MiB.
    pub max_request_bytes: usize,
    /// Longest AwaitProof/Prove wait. Default 1 h.
    pub max_await: Duration,
    /// Where the job store lives (`jobs.sqlite3`): accepted jobs, their witnesses until
    /// they end, results for `pipeline.job_retention`. Default `zkpipe-state` beside the
    /// config file.
    pub state_dir: PathBuf,
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
    reduce: StageSection,
    device: DeviceSection,
    tail: StageSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ServerSection {
    grpc_listen: Option<String>,
    http_listen: Option<String>,
    allow_remote: bool,
    max_request_bytes: Option<Size>,
    max_await: Option<String>,
    state_dir: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct KeysSection {
    dir: Option<PathBuf>,
    checks: Option<String>,
    idle_timeout: Option<String>,
    max_devices: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct MemorySection {
    host_limit: Option<Size>,
    device_limit: Option<Size>,
    pool_max: Option<Size>,
    dealloc_queue: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct PipelineSection {
    queue_depth: Option<usize>,
    max_partitions_per_job: Option<usize>,
    max_pending_partitions: Option<usize>,
    self_check: Option<bool>,
    schedule: Option<String>,
    job_retention: Option<String>,
    trace_capacity: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct StageSection {
    workers: Option<usize>,
    threads: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct DeviceSection {
    workers: Option<usize>,
    threads: Option<usize>,
    passes: Option<usize>,
    batch: Option<usize>,
}

/// A size: a number of bytes, or a string like "512MiB", "8GiB", "auto".
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

/// Parses "123", "64KiB", "512MiB", "8GiB", "1TiB" (also KB/MB/GB as powers of 1000).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("size {s:?} is not <number>[unit]"))?;
    let mul: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(format!(
                "size {s:?}: unknown unit {u:?} (B, KiB, MiB, GiB, TiB, KB, MB, GB)"
            ))
        }
    };
    n.checked_mul(mul)
        .ok_or_else(|| format!("size {s:?} overflows"))
}

/// Parses "250ms", "30s", "10m", "2h".
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("duration {s:?} is not <number><unit>"))?;
    Ok(match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        _ => return Err(format!("duration {s:?} needs a unit: ms, s, m or h")),
    })
}

fn size_or_auto(v: &Option<Size>, auto: Option<u64>) -> Result<Option<u64>, String> {
    match v {
        None => Ok(auto),
        Some(Size::Bytes(b)) => Ok(Some(*b)),
        Some(Size::Text(t)) if t == "auto" => Ok(auto),
        Some(Size::Text(t)) => parse_size(t).map(Some),
    }
}

fn addr(
    v: &Option<String>,
    default: &str,
    field: &str,
    allow_remote: bool,
) -> Result<SocketAddr, String> {
    let s = v.as_deref().unwrap_or(default);
    let a: SocketAddr = s
        .parse()
        .map_err(|_| format!("{field}: {s:?} is not an ip:port address"))?;
    if !a.ip().is_loopback() && !allow_remote {
        return Err(format!(
            "{field}: {a} is not a loopback address; set server.allow_remote = true to serve beyond this machine"
        ));
    }
    Ok(a)
}

fn stage(s: &StageSection, default: StageConfig) -> StageConfig {
    StageConfig {
        workers: s.workers.unwrap_or(default.workers),
        threads: s.threads.unwrap_or(default.threads),
    }
}

impl FileConfig {
    /// Reads and validates a config file; relative paths in it are relative to its folder.
    pub fn load(path: &Path) -> Result<DaemonConfig, ConfigError> {
        let err = |message: String| ConfigError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let raw: FileConfig = toml::from_str(&text).map_err(|e| err(e.message().to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        raw.validate(base).map_err(err)
    }

    /// Validates the raw values; `base` resolves a relative key directory.
    pub fn validate(self, base: &Path) -> Result<DaemonConfig, String> {
        let d = EngineConfig::default();
        let s = &self.server;
        let server = ServerConfig {
            grpc_listen: addr(
                &s.grpc_listen,
                "127.0.0.1:50051",
                "server.grpc_listen",
                s.allow_remote,
            )?,
            http_listen: addr(
                &s.http_listen,
                "127.0.0.1:9464",
                "server.http_listen",
                s.allow_remote,
            )?,
            max_request_bytes: size_or_auto(&s.max_request_bytes, Some(64 << 20))
                .map_err(|e| format!("server.max_request_bytes: {e}"))?
                .unwrap_or(64 << 20) as usize,
            max_await: match &s.max_await {
                Some(t) => parse_duration(t).map_err(|e| format!("server.max_await: {e}"))?,
                None => Duration::from_secs(3600),
            },
            state_dir: base.join(
                s.state_dir
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR)),
            ),
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
            pool_max_bytes: size_or_auto(&self.memory.pool_max, Some(memory_limit / 8))
                .map_err(|e| format!("memory.pool_max: {e}"))?
                .unwrap_or(memory_limit / 8),
            dealloc_queue: self.memory.dealloc_queue.unwrap_or(d.dealloc_queue),
            reduce: stage(&self.reduce, d.reduce),
            device: stage(
                &StageSection {
                    workers: self.device.workers,
                    threads: self.device.threads,
                },
                d.device,
            ),
            device_passes: self.device.passes.or(d.device_passes),
            device_batch: self.device.batch.or(d.device_batch),
            tail: stage(&self.tail, d.tail),
            queue_depth: p.queue_depth.unwrap_or(d.queue_depth),
            max_partitions_per_job: p.max_partitions_per_job.unwrap_or(d.max_partitions_per_job),
            max_pending_partitions: p.max_pending_partitions.unwrap_or(d.max_pending_partitions),
            self_check: p.self_check.unwrap_or(d.self_check),
            schedule: match &p.schedule {
                Some(s) => s.parse().map_err(|e| format!("pipeline.schedule: {e}"))?,
                None => d.schedule,
            },
            job_retention: dur(&p.job_retention, "pipeline.job_retention", d.job_retention)?,
            trace_capacity: p.trace_capacity.unwrap_or(d.trace_capacity),
        };
        engine.validate()?;
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
        assert!(toml::from_str::<FileConfig>("[server]\nport = 1").is_err());
        let remote: FileConfig = toml::from_str("[server]\ngrpc_listen = \"0.0.0.0:1\"").unwrap();
        assert!(remote
            .validate(Path::new("."))
            .unwrap_err()
            .contains("loopback"));
        let bad: FileConfig = toml::from_str("[memory]\nhost_limit = \"8 bananas\"").unwrap();
        assert!(bad
            .validate(Path::new("."))
            .unwrap_err()
            .contains("memory.host_limit"));
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
        assert!(toml::from_str::<FileConfig>("[tail]\nbatch = 2").is_err());
    }
}
