//! [`CudaOptions`]: how the GPU device set computes, given once when it is made
//! ([`crate::CudaDevices::new`]) and read by every key bound there. The default is the
//! product's behaviour. The library reads no environment variable; the `zkpipe` binary
//! fills these from its `ZKPIPE_CUDA_*` variables at start.
//!
//! The [`LabSwitches`] exist to re-run an experiment whose alternative lost (pages in
//! lab/experiments/): they can be set only in a build with the `lab` cargo feature.

use zkpipe_core::PinnedKind;

/// How the GPU device set computes (see the module doc). `Default` is the product's
/// behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CudaOptions {
    /// Which kind of pinned host memory stages uploads (the witness, and a, b, c where the
    /// reduce runs on the host). Write-combined memory skips the CPU caches: the CPU's
    /// writes stream out, its reads crawl.
    pub upload_staging: PinnedKind,
    /// Print, for every batched pass, when its w plan and each of its MSMs ended, to
    /// standard error (a diagnostic for where a pass's time goes).
    pub pass_trace: bool,
    /// How a host thread waits for its GPU work (`cudaStreamSynchronize` and the like).
    pub host_wait: HostWait,
    /// The device budget: what zkpipe may place on each GPU, never more than it has free
    /// (`GpuInfo::budget`). A key whose resident copy and one proof exceed it keeps its
    /// points in host memory and streams them through the GPU in chunks
    /// (`zkpipe_core::msm::stream_plan`).
    pub memory_limit: Option<u64>,
    /// The most proofs one stream of a streamed key's points serves (fewer where the
    /// budget holds fewer); 0 means [`DEFAULT_STREAM_BATCH`].
    pub stream_batch: usize,
    /// Switches for re-running lost experiments (`lab` builds only).
    #[cfg(feature = "lab")]
    pub lab: LabSwitches,
}

/// Proofs one stream of a streamed key's points serves by default: the reference
/// system's two (its partitions proved in pairs).
pub const DEFAULT_STREAM_BATCH: usize = 2;

impl CudaOptions {
    /// [`Self::stream_batch`], its default where 0.
    pub fn stream_batch(&self) -> usize {
        match self.stream_batch {
            0 => DEFAULT_STREAM_BATCH,
            n => n,
        }
    }

    /// The lab switches: as set (a `lab` build).
    #[cfg(feature = "lab")]
    pub fn lab(&self) -> LabSwitches {
        self.lab
    }

    /// The lab switches: the defaults (a product build cannot set them).
    #[cfg(not(feature = "lab"))]
    pub fn lab(&self) -> LabSwitches {
        LabSwitches::default()
    }
}

/// Cores a GPU at most where [`HostWait::Auto`] blocks.
pub const BLOCK_CORES_PER_GPU: usize = 16;

/// How a host thread waits for work it gave a GPU: CUDA's scheduling flag for every
/// device's context, set when the device set is made. A spinning thread keeps its core
/// for the whole wait; several GPUs' passes, each waiting from a thread per proof, can
/// spin more threads than the host has cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostWait {
    /// Block where the host has at most [`BLOCK_CORES_PER_GPU`] cores a GPU: there the
    /// passes' waiting threads would spin cores the host path needs (2^14 proofs under
    /// load: +3.4% on one H200 with 16 cores, +3.8% on two H200s with 32; a lone
    /// proof's rate within the spread, −2 to −4%). Else CUDA's choice, which spins on a
    /// GPU machine (lab/experiments/042s-solo-tail.md).
    #[default]
    Auto,
    /// Spin on the CPU.
    Spin,
    /// Spin, yielding the core between checks.
    Yield,
    /// Sleep until the GPU signals (a wake-up costs tens of microseconds).
    Block,
}

impl HostWait {
    /// What `Auto` means on a host of `cores` cores driving `gpus` GPUs (any other
    /// choice as it is).
    pub fn for_host(self, gpus: usize, cores: usize) -> Self {
        match self {
            Self::Auto if cores <= BLOCK_CORES_PER_GPU * gpus => Self::Block,
            other => other,
        }
    }

    /// CUDA's `cudaDeviceSchedule*` flag.
    pub fn cuda_flag(self) -> u32 {
        match self {
            Self::Auto => 0x00,
            Self::Spin => 0x01,
            Self::Yield => 0x02,
            Self::Block => 0x04,
        }
    }
}

impl std::str::FromStr for HostWait {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "spin" => Ok(Self::Spin),
            "yield" => Ok(Self::Yield),
            "block" => Ok(Self::Block),
            _ => Err(format!("{s:?}: expected auto, spin, yield or block")),
        }
    }
}

/// Switches that re-run an experiment's losing side, each against the default the
/// experiment chose (settable through [`CudaOptions`] only with the `lab` feature).
/// `Default` is the product's behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LabSwitches {
    /// Forces a lone proof onto the batched kernels (`Some(true)`) or sppark's MSM
    /// (`Some(false)`) whatever its domain (lab/experiments/019-latency-floor.md).
    pub lone_msm: Option<bool>,
    /// How constant-work MSMs are kept constant on the GPU
    /// (lab/experiments/023-constant-work-by-masking.md).
    pub constant: ConstantMode,
    /// Binds no window tables (lab/experiments/021-window-tables.md).
    pub no_tables: bool,
    /// Forces the piece length L of the batched plans (8..=1024;
    /// lab/experiments/032-piece-length-per-curve.md).
    pub piece: Option<u32>,
    /// Sums the pieces in plan order instead of longest first
    /// (lab/experiments/030-ordered-pieces.md).
    pub pieces_in_plan_order: bool,
    /// Forces the pieces per run R (0: no runs, or 2..=64;
    /// lab/experiments/024-running-sums-over-runs.md).
    pub run: Option<u32>,
    /// Forces the widest digit step a run may take (0: any, as before experiment 042o;
    /// lab/experiments/042o-sparse-runs.md).
    pub run_gap: Option<u32>,
    /// The host turns the witness into standard-form scalars before the upload
    /// (lab/experiments/022-montgomery-witness-and-group-commit.md).
    pub host_scalars: bool,
    /// a, b, c computed on the CPU and uploaded instead of on the GPU
    /// (lab/experiments/011-reduce-on-gpu.md).
    pub host_reduce: bool,
    /// A proof's MSMs one after another instead of at once.
    pub serial_msms: bool,
    /// A streamed key's points walk through chunks beside the proofs' buffers, never in
    /// their idle quotient vectors (lab/experiments/043h-walk-in-room.md).
    pub walk_beside: bool,
    /// A streamed key's matrices cross with a field element a value instead of narrow
    /// (lab/experiments/043h-walk-in-room.md).
    pub wide_matrices: bool,
    /// A witness of 0s and 1s takes sppark's MSMs like any other instead of the bit path
    /// (`shape::takes_bits`; lab/experiments/043k-bit-path.md).
    pub no_bits: bool,
    /// How a proof's reduce and quotient on the GPU are launched
    /// (lab/experiments/042q-quotient-graphs.md).
    pub quotient_launch: QuotientLaunch,
    /// The most proofs a batched pass of an in-core key takes, instead of
    /// `shape::BATCH_MAX_PROOFS` (1..=256;
    /// lab/experiments/042k-pass-size.md).
    pub batch: Option<usize>,
}

/// How a proof's reduce and quotient on the GPU are launched, where the key's matrices
/// are on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuotientLaunch {
    /// One call: w's upload on the quotient's stream, then its captured CUDA graph of
    /// the reduce's and the quotient's kernels, one wait.
    #[default]
    Graph,
    /// One call as `Graph`, the kernels launched one by one.
    Fused,
    /// As before experiment 042q: the upload (on a stream made for it), the reduce and
    /// the quotient as three calls, each waited for, the kernels launched one by one.
    Calls,
}

impl std::str::FromStr for QuotientLaunch {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "graph" => Ok(Self::Graph),
            "fused" => Ok(Self::Fused),
            "calls" => Ok(Self::Calls),
            _ => Err(format!("{s:?}: expected graph, fused or calls")),
        }
    }
}

/// How constant-work MSMs are kept constant on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConstantMode {
    /// A random mask drawn at binding: the MSMs read w + m and h + m′.
    #[default]
    Mask,
    /// The batched plans' value-dependent shortcuts off instead (every digit an entry,
    /// every piece in every bit sum): 1.4–1.7× spread left over witness distributions.
    Full,
    /// Both.
    Both,
}

impl std::str::FromStr for ConstantMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mask" => Ok(Self::Mask),
            "full" => Ok(Self::Full),
            "both" => Ok(Self::Both),
            _ => Err(format!("{s:?}: expected mask, full or both")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HostWait;

    #[test]
    fn auto_blocks_at_16_cores_a_gpu_or_fewer_and_a_choice_stays_as_it_is() {
        assert_eq!(HostWait::Auto.for_host(1, 32), HostWait::Auto);
        assert_eq!(HostWait::Auto.for_host(1, 16), HostWait::Block);
        assert_eq!(HostWait::Auto.for_host(2, 32), HostWait::Block);
        assert_eq!(HostWait::Auto.for_host(4, 128), HostWait::Auto);
        for w in [HostWait::Spin, HostWait::Yield, HostWait::Block] {
            assert_eq!(w.for_host(1, 64), w);
            assert_eq!(w.for_host(8, 8), w);
        }
    }
}
