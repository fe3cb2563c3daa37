//! `--backend auto|cpu|cuda`: which devices run the quotient stage and the MSMs. The CLI
//! only chooses; the devices themselves are `zkpipe_core::CpuDevices` and
//! `zkpipe_cuda::CudaDevices`, made with their options ([`DeviceOptions`]), which the
//! environment's diagnostic switches fill here, once: the libraries read none.

use anyhow::{bail, Context, Result};
use std::sync::Arc;
use zkpipe_core::device::{bind, BindCurve, BindOptions, BoundKey, Devices};
use zkpipe_core::{CompiledKey, CpuBound, CpuDevices, CpuOptions, PinnedKind};
use zkpipe_cuda::{CudaDevices, CudaError, CudaOptions, HostWait};

/// The devices' options: the CPU's and the GPUs'.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceOptions {
    /// The CPU device's.
    pub cpu: CpuOptions,
    /// The GPU device set's.
    pub cuda: CudaOptions,
}

/// The diagnostic switches of the environment that re-run an experiment's losing side:
/// read in a build with the `lab` feature, refused in the product build.
#[cfg_attr(feature = "lab", allow(dead_code))]
const LAB_VARS: [&str; 15] = [
    "ZKPIPE_CUDA_LONE_MSM",
    "ZKPIPE_CUDA_CONSTANT",
    "ZKPIPE_CUDA_TABLES",
    "ZKPIPE_CUDA_PIECE",
    "ZKPIPE_CUDA_PIECE_ORDER",
    "ZKPIPE_CUDA_RUN",
    "ZKPIPE_CUDA_RUN_GAP",
    "ZKPIPE_CUDA_QUOTIENT_LAUNCH",
    "ZKPIPE_CUDA_HOST_SCALARS",
    "ZKPIPE_CUDA_HOST_REDUCE",
    "ZKPIPE_CUDA_SERIAL_MSMS",
    "ZKPIPE_CUDA_WALK_BESIDE",
    "ZKPIPE_CUDA_WIDE_MATRICES",
    "ZKPIPE_CUDA_BATCH",
    "ZKPIPE_CUDA_BITS",
];

impl DeviceOptions {
    /// From the environment (`env` looks a variable up): `ZKPIPE_NO_IFMA` (set: the CPU's
    /// portable arithmetic instead of IFMA lanes), `ZKPIPE_CUDA_PASS_TRACE=1`,
    /// `ZKPIPE_CUDA_HOST_WAIT` (auto, spin, yield or block: [`HostWait`]), and the
    /// lab switches ([`LAB_VARS`]); GPU uploads staged through `staging`.
    pub fn from_env(env: impl Fn(&str) -> Option<String>, staging: PinnedKind) -> Result<Self> {
        let flag = |var: &str| -> Result<bool> {
            match env(var).as_deref() {
                None | Some("") | Some("0") => Ok(false),
                Some("1") => Ok(true),
                Some(v) => bail!("{var}={v:?}: expected 0 or 1"),
            }
        };
        // A lab build has more fields (set below), and needs `mut`.
        #[allow(unused_mut, clippy::needless_update)]
        let mut cuda = CudaOptions {
            upload_staging: staging,
            pass_trace: flag("ZKPIPE_CUDA_PASS_TRACE")?,
            host_wait: match env("ZKPIPE_CUDA_HOST_WAIT").filter(|v| !v.is_empty()) {
                Some(v) => v
                    .parse()
                    .map_err(|e| anyhow::anyhow!("ZKPIPE_CUDA_HOST_WAIT={e}"))?,
                None => HostWait::default(),
            },
            ..CudaOptions::default()
        };
        #[cfg(feature = "lab")]
        {
            cuda.lab = lab_switches(&env, flag)?;
        }
        #[cfg(not(feature = "lab"))]
        if let Some(var) = LAB_VARS
            .iter()
            .find(|v| env(v).is_some_and(|x| !x.is_empty()))
        {
            bail!("{var} is a lab switch: build with --features lab");
        }
        Ok(Self {
            cpu: CpuOptions {
                ifma: env("ZKPIPE_NO_IFMA").is_none(),
                ..CpuOptions::default()
            },
            cuda,
        })
    }

    /// From this process's environment, uploads staged through `staging`.
    pub fn from_process(staging: PinnedKind) -> Result<Self> {
        Self::from_env(|v| std::env::var(v).ok(), staging)
    }

    /// With `limit` (where set) as every device's budget (`memory.device_limit`,
    /// `--device-limit`): a key larger than it streams its points through the device in
    /// chunks, on a GPU and on the CPU alike (the CPU as the GPUs' reference).
    pub fn with_device_limit(mut self, limit: Option<u64>) -> Self {
        if limit.is_some() {
            self.cpu.memory_limit = limit;
            self.cuda.memory_limit = limit;
        }
        self
    }

    /// With at most `batch` proofs per stream of a streamed key's points (0: each
    /// device's default, [`zkpipe_cuda::DEFAULT_STREAM_BATCH`]); fewer where the budget
    /// holds fewer.
    pub fn with_stream_batch(mut self, batch: usize) -> Self {
        if batch > 0 {
            self.cpu.stream_batch = batch;
            self.cuda.stream_batch = batch;
        }
        self
    }
}

/// The lab switches ([`LAB_VARS`]) from `env`; `flag` reads a 0/1 switch.
#[cfg(feature = "lab")]
fn lab_switches(
    env: &impl Fn(&str) -> Option<String>,
    flag: impl Fn(&str) -> Result<bool>,
) -> Result<zkpipe_cuda::LabSwitches> {
    let number = |var: &str, valid: fn(u32) -> bool, what: &str| -> Result<Option<u32>> {
        match env(var).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => match v.parse::<u32>() {
                Ok(n) if valid(n) => Ok(Some(n)),
                _ => bail!("{var}={v:?}: expected {what}"),
            },
        }
    };
    let word = |var: &str, words: &[&str]| -> Result<Option<String>> {
        match env(var).filter(|v| !v.is_empty()) {
            Some(v) if !words.contains(&v.as_str()) => {
                bail!("{var}={v:?}: expected {}", words.join(" or "))
            }
            v => Ok(v),
        }
    };
    Ok(zkpipe_cuda::LabSwitches {
        lone_msm: word("ZKPIPE_CUDA_LONE_MSM", &["batch", "sppark"])?.map(|v| v == "batch"),
        constant: match word("ZKPIPE_CUDA_CONSTANT", &["mask", "full", "both"])? {
            Some(v) => v.parse().map_err(anyhow::Error::msg)?,
            None => Default::default(),
        },
        no_tables: word("ZKPIPE_CUDA_TABLES", &["on", "off"])?.is_some_and(|v| v == "off"),
        piece: number("ZKPIPE_CUDA_PIECE", |l| (8..=1024).contains(&l), "8..=1024")?,
        pieces_in_plan_order: word("ZKPIPE_CUDA_PIECE_ORDER", &["plan", "length"])?
            .is_some_and(|v| v == "plan"),
        run: number(
            "ZKPIPE_CUDA_RUN",
            |r| r == 0 || (2..=64).contains(&r),
            "0 or 2..=64",
        )?,
        run_gap: number("ZKPIPE_CUDA_RUN_GAP", |g| g <= 1 << 20, "0..=1048576")?,
        host_scalars: flag("ZKPIPE_CUDA_HOST_SCALARS")?,
        host_reduce: flag("ZKPIPE_CUDA_HOST_REDUCE")?,
        serial_msms: flag("ZKPIPE_CUDA_SERIAL_MSMS")?,
        walk_beside: flag("ZKPIPE_CUDA_WALK_BESIDE")?,
        wide_matrices: flag("ZKPIPE_CUDA_WIDE_MATRICES")?,
        quotient_launch: match word("ZKPIPE_CUDA_QUOTIENT_LAUNCH", &["graph", "fused", "calls"])? {
            Some(v) => v.parse().map_err(anyhow::Error::msg)?,
            None => Default::default(),
        },
        batch: number("ZKPIPE_CUDA_BATCH", |b| (1..=256).contains(&b), "1..=256")?
            .map(|b| b as usize),
        no_bits: word("ZKPIPE_CUDA_BITS", &["on", "off"])?.is_some_and(|v| v == "off"),
    })
}

/// Where the heavy stages run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// The GPU when this binary has CUDA support and a device is present, else the CPU;
    /// but a one-shot `prove` of a small key runs on the CPU, which finishes it before
    /// the GPU has started (a domain up to 2^17 on 16 threads, less on fewer).
    Auto,
    /// arkworks on the CPU.
    Cpu,
    /// sppark on the chosen GPU (an error if there is none or the key does not fit).
    Cuda,
}

/// The daemon's devices for `choice`, made with `opts`: every visible GPU, or the CPU.
pub fn devices(choice: BackendChoice, opts: &DeviceOptions) -> Result<Arc<dyn Devices>> {
    let cpu = || Arc::new(CpuDevices::new(opts.cpu));
    Ok(match choice {
        BackendChoice::Cpu => cpu(),
        BackendChoice::Cuda => gpus(CudaDevices::new(opts.cuda).context("--backend cuda")?),
        BackendChoice::Auto => match CudaDevices::new(opts.cuda) {
            Ok(d) => gpus(d),
            Err(_) => cpu(),
        },
    })
}

/// The GPUs as the daemon's devices, logging how its threads wait for them (`auto` may
/// have chosen to block: docs/gpu.md).
fn gpus(d: CudaDevices) -> Arc<dyn Devices> {
    tracing::info!(gpus = d.gpus().len(), host_wait = ?d.host_wait(), "cuda devices");
    Arc::new(d)
}

/// How many proofs a binding serves: a one-shot `prove` pays the GPU's start-up (the
/// driver, a context, the key's upload: ~0.35 s at 2^16 on an H100) for one proof,
/// `bench` pays it once for many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proofs {
    /// One proof, then the process exits.
    One,
    /// Many proofs with the key bound once.
    Many,
}

/// The largest domain a one-shot proof runs on the CPU under `--backend auto`, on 16 or
/// more threads. Measured on an H100 machine's 16-core host
/// (lab/experiments/029-cpu-one-shot-serial-path.md, whole `prove` processes, default key checks):
/// BN254 2^16 0.13 s on the CPU against 0.37–0.47 on the GPU, 2^18 a tie (0.45–0.48 both);
/// BLS12-381 2^16 0.20 against 0.41–0.47, 2^18 0.73–0.79 against 0.52–0.64. Both cross between 2^17
/// and 2^18.
const ONE_SHOT_CPU_MAX_DOMAIN: usize = 1 << 17;

/// Whether `--backend auto` proves a one-shot proof of a key of `domain` on the CPU with
/// `threads` CPU threads although a GPU is present. The CPU's time falls about as
/// 1/threads and the GPU's start-up does not, so fewer threads than the 16 measured
/// lower the limit in proportion; more threads do not raise it (not measured).
pub fn one_shot_on_cpu(domain: usize, threads: usize) -> bool {
    domain.saturating_mul(16) <= ONE_SHOT_CPU_MAX_DOMAIN.saturating_mul(threads.min(16))
}

/// How a key larger than its device streams: the device budget and proofs per stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Streaming {
    /// Every device's budget ([`DeviceOptions::with_device_limit`]); `None`: the GPU's
    /// memory.
    pub device_limit: Option<u64>,
    /// The most proofs one stream serves ([`DeviceOptions::with_stream_batch`]; 0: the
    /// default).
    pub batch: usize,
}

/// `key` bound with `opts` to the device `choice` asks for, for `proofs` proofs (a GPU's
/// binding uploads the key's points and matrices to GPU `gpu` now). The devices' options
/// come from the environment ([`DeviceOptions::from_process`]), with `streaming`'s budget
/// and batch.
pub fn select<E: BindCurve>(
    choice: BackendChoice,
    key: Arc<CompiledKey<E>>,
    gpu: usize,
    proofs: Proofs,
    opts: &BindOptions,
    streaming: Streaming,
) -> Result<Box<dyn BoundKey<E>>> {
    let devices = DeviceOptions::from_process(PinnedKind::default())?
        .with_device_limit(streaming.device_limit)
        .with_stream_batch(streaming.batch);
    let on_gpu = |key| -> Result<Box<dyn BoundKey<E>>, zkpipe_core::Error> {
        let gpus = CudaDevices::new(devices.cuda).map_err(|e| zkpipe_core::Error::Device {
            device: "cuda".into(),
            source: Box::new(e),
        })?;
        bind(&gpus, gpu, key, opts)
    };
    // One proof: [B]₂ runs in the pass, beside the other MSMs instead of in a tail after the pass.
    let on_cpu = |key| CpuBound::bind(key, opts, devices.cpu).with_g2_in_pass();
    match choice {
        BackendChoice::Cpu => Ok(Box::new(on_cpu(key))),
        BackendChoice::Cuda => on_gpu(key).context("--backend cuda"),
        BackendChoice::Auto => {
            let small = proofs == Proofs::One
                && one_shot_on_cpu(key.domain_size(), rayon::current_num_threads());
            if small || zkpipe_cuda::device_count() == 0 {
                return Ok(Box::new(on_cpu(key)));
            }
            match on_gpu(Arc::clone(&key)) {
                Ok(b) => Ok(b),
                // A key too big for the GPU still proves, on the CPU; say so once.
                Err(e) if out_of_memory(&e) => {
                    eprintln!("zkpipe: note: {e}; proving on the CPU");
                    Ok(Box::new(on_cpu(key)))
                }
                Err(e) => bail!("--backend auto: the GPU is present but failed: {e}"),
            }
        }
    }
}

/// Whether a binding failed for lack of GPU memory.
fn out_of_memory(e: &zkpipe_core::Error) -> bool {
    match e {
        zkpipe_core::Error::Device { source, .. } => source
            .downcast_ref::<CudaError>()
            .is_some_and(|c| matches!(c, CudaError::OutOfMemory { .. })),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn device_options_come_from_the_environment_once() {
        let none = DeviceOptions::from_env(env(&[]), PinnedKind::Portable).unwrap();
        assert_eq!(none, DeviceOptions::default());
        let set = [("ZKPIPE_NO_IFMA", "1"), ("ZKPIPE_CUDA_PASS_TRACE", "1")];
        let o = DeviceOptions::from_env(env(&set), PinnedKind::WriteCombined).unwrap();
        assert!(!o.cpu.ifma && o.cuda.pass_trace);
        assert_eq!(o.cuda.upload_staging, PinnedKind::WriteCombined);
        let e = DeviceOptions::from_env(
            env(&[("ZKPIPE_CUDA_PASS_TRACE", "yes")]),
            PinnedKind::Portable,
        );
        assert!(e.unwrap_err().to_string().contains("expected 0 or 1"));
        let wait = [("ZKPIPE_CUDA_HOST_WAIT", "block")];
        let o = DeviceOptions::from_env(env(&wait), PinnedKind::Portable).unwrap();
        assert_eq!(o.cuda.host_wait, HostWait::Block);
        let e = DeviceOptions::from_env(
            env(&[("ZKPIPE_CUDA_HOST_WAIT", "sleep")]),
            PinnedKind::Portable,
        );
        assert_eq!(
            e.unwrap_err().to_string(),
            "ZKPIPE_CUDA_HOST_WAIT=\"sleep\": expected auto, spin, yield or block"
        );
    }

    /// The lab switches: refused in the product build, read in a lab build.
    #[test]
    fn lab_switches_need_the_lab_feature() {
        let vars = [
            ("ZKPIPE_CUDA_HOST_REDUCE", "1"),
            ("ZKPIPE_CUDA_PIECE", "64"),
        ];
        let o = DeviceOptions::from_env(env(&vars), PinnedKind::Portable);
        #[cfg(not(feature = "lab"))]
        assert_eq!(
            o.unwrap_err().to_string(),
            "ZKPIPE_CUDA_PIECE is a lab switch: build with --features lab"
        );
        #[cfg(feature = "lab")]
        {
            let lab = o.unwrap().cuda.lab;
            assert!(lab.host_reduce && lab.piece == Some(64) && lab.batch.is_none());
            let bad = [("ZKPIPE_CUDA_RUN", "1")];
            assert!(DeviceOptions::from_env(env(&bad), PinnedKind::Portable).is_err());
            let batch = [("ZKPIPE_CUDA_BATCH", "64")];
            let o = DeviceOptions::from_env(env(&batch), PinnedKind::Portable);
            assert_eq!(o.unwrap().cuda.lab.batch, Some(64));
            let bad = [("ZKPIPE_CUDA_BATCH", "0")];
            assert!(DeviceOptions::from_env(env(&bad), PinnedKind::Portable).is_err());
        }
    }

    #[test]
    fn one_shot_limit_follows_the_measured_crossover_and_the_threads() {
        assert!(one_shot_on_cpu(1 << 17, 16));
        assert!(!one_shot_on_cpu(1 << 18, 16));
        // More threads than measured do not raise it; fewer lower it in proportion.
        assert!(!one_shot_on_cpu(1 << 18, 128));
        assert!(one_shot_on_cpu(1 << 14, 2));
        assert!(!one_shot_on_cpu(1 << 15, 2));
        assert!(!one_shot_on_cpu(1, 0));
    }
}
