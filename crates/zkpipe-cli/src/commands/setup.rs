//! `zkpipe setup --dev <circuit.r1cs> <out.zkey>`: an INSECURE key for development and
//! benchmarks, in snarkjs's zkey format; its points on the CPU, or with `--backend cuda`
//! on a GPU (the same key for the same seed).

use super::with_curve;
use anyhow::{bail, Context, Result};
use rand::SeedableRng;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use zkpipe_core::setup::{dev_setup_with, CpuFixedBase, FixedBase};
use zkpipe_cuda::GpuFixedBase;
use zkpipe_formats::r1cs::R1cs;

/// Arguments of `setup`.
#[derive(clap::Args)]
#[command(after_help = super::outputs_help!("An existing key is refused unless --force is given."))]
pub struct Args {
    #[command(flatten)]
    threads: super::Threads,
    /// Make a development key from random toxic waste (the only kind zkpipe makes).
    #[arg(long)]
    dev: bool,
    /// The circuit.
    r1cs: PathBuf,
    /// Where to write the key (`-`: stdout).
    zkey: PathBuf,
    /// Seed for reproducible keys (default: the OS RNG).
    #[arg(long)]
    seed: Option<u64>,
    /// Replace an existing key.
    #[arg(long)]
    force: bool,
    /// Where the key's points (its fixed-base multiplications) are made: cpu, or cuda (a
    /// GPU: the same key, minutes faster at 2^24 and above).
    #[arg(long, value_enum, default_value = "cpu")]
    backend: SetupBackend,
    /// Which GPU the cuda backend uses (CUDA's device index).
    #[arg(long, default_value_t = 0)]
    gpu: usize,
}

/// Where `setup` makes the key's points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SetupBackend {
    /// arkworks' window tables on the CPU.
    Cpu,
    /// One GPU (an error if this binary has no CUDA support or there is no GPU).
    Cuda,
}

/// Runs `setup`.
pub fn run(a: Args) -> Result<()> {
    a.threads.install()?;
    if !a.dev {
        bail!("only `setup --dev` is supported: production keys come from a snarkjs ceremony (powersoftau + zkey contribute)");
    }
    let plan = super::new_outputs(&[&a.zkey], &[&a.r1cs], a.force)?;
    let r1cs = R1cs::read(&a.r1cs)?;
    if a.backend == SetupBackend::Cuda {
        // Before the warning: a missing GPU is the run's one line.
        zkpipe_cuda::device_info(a.gpu)
            .with_context(|| format!("--backend cuda (GPU {})", a.gpu))?;
    }
    eprintln!(
        "WARNING: development key, INSECURE: its toxic waste ({}) lets anyone who has it forge proofs. Never use it in production.",
        match a.seed {
            Some(s) => format!("from --seed {s}"),
            None => "from the OS RNG, not kept".into(),
        }
    );
    let mut rng = match a.seed {
        Some(s) => rand_chacha::ChaCha20Rng::seed_from_u64(s),
        None => rand_chacha::ChaCha20Rng::from_entropy(),
    };
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} points ({eta})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message("setup");
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let start = Instant::now();
    let points_time = AtomicU64::new(0);
    let zkey = with_curve!(r1cs.header.curve, E => {
        let fixed: Box<dyn FixedBase<E>> = match a.backend {
            SetupBackend::Cpu => Box::new(CpuFixedBase::<E>::for_r1cs(&r1cs)),
            SetupBackend::Cuda => Box::new(
                GpuFixedBase::<E>::new(a.gpu).with_context(|| format!("--backend cuda (GPU {})", a.gpu))?,
            ),
        };
        dev_setup_with::<E>(&r1cs, &mut rng, &progress, &Timed::new(&*fixed, &points_time))
    })
    .with_context(|| a.r1cs.display().to_string())?;
    bar.finish_and_clear();
    let made = start.elapsed().as_secs_f64();
    // Written in slices: a large key is not copied into one buffer first.
    let parts = zkey.to_parts();
    let parts: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
    plan.write_parts(&[&parts])?;
    let total = start.elapsed().as_secs_f64();
    eprintln!(
        "wrote {} ({} constraints, domain 2^{}, {:.1} MiB) in {:.1} s ({:.1} s of it the points {}, {:.1} s writing)",
        a.zkey.display(),
        r1cs.header.n_constraints,
        zkey.header.domain_size.trailing_zeros(),
        parts.iter().map(|p| p.len()).sum::<usize>() as f64 / (1 << 20) as f64,
        total,
        points_time.load(Ordering::Relaxed) as f64 / 1e9,
        match a.backend {
            SetupBackend::Cpu => "on the CPU".to_string(),
            SetupBackend::Cuda => format!("on GPU {}", a.gpu),
        },
        total - made
    );
    Ok(())
}

/// A [`FixedBase`] that adds the time its calls take to a counter (nanoseconds): the
/// closing line's "of it the points".
struct Timed<'a, E: zkpipe_core::Curve> {
    inner: &'a dyn FixedBase<E>,
    nanos: &'a AtomicU64,
}

impl<'a, E: zkpipe_core::Curve> Timed<'a, E> {
    fn new(inner: &'a dyn FixedBase<E>, nanos: &'a AtomicU64) -> Self {
        Self { inner, nanos }
    }

    fn time<T>(&self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.nanos
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }
}

impl<E: zkpipe_core::Curve> FixedBase<E> for Timed<'_, E> {
    fn encode(
        &self,
        s: &[E::ScalarField],
        g2: bool,
        out: &mut [u8],
    ) -> Result<(), zkpipe_core::Error> {
        self.time(|| self.inner.encode(s, g2, out))
    }

    fn chunk(&self) -> usize {
        self.inner.chunk()
    }
}
