//! `zkpipe prove <zkey> <wtns> <proof.json> <public.json>` (rapidsnark's argument order).

use super::with_curve;
use crate::backend::{select, BackendChoice, DeviceOptions, Proofs, Streaming};
use crate::progress::Progress;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use zkpipe_core::curve::field_to_decimal;
use zkpipe_core::key_cache::{compile_checked, CheckOutcome, CheckedKeys};
use zkpipe_core::timings::timed;
use zkpipe_core::{prove, BindCurve, PointChecks, ProveOptions, Stage, Timings, Witness};
use zkpipe_formats::files::{read_input_or_stdin, Plan, STDIN_NAME};
use zkpipe_formats::json::to_json_bytes;
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::zkey::ZkeyFile;

/// Arguments of `prove`.
#[derive(clap::Args)]
#[command(after_help = super::outputs_help!("An existing proof or public file is replaced (as snarkjs does)."))]
pub struct Args {
    #[command(flatten)]
    flags: ProveFlags,
    /// Proving key (snarkjs Groth16 .zkey).
    zkey: PathBuf,
    /// Witness (.wtns); `-`: read it from stdin, e.g. `zkpipe wtns calculate c.wasm
    /// input.json - | zkpipe prove c.zkey - proof.json public.json`.
    wtns: PathBuf,
    /// Where to write the proof (`-`: stdout).
    proof: PathBuf,
    /// Where to write the public signals (`-`: stdout).
    public: PathBuf,
}

/// How to prove: the flags `prove` and `fullprove` share.
#[derive(clap::Args)]
pub struct ProveFlags {
    #[command(flatten)]
    pub threads: super::Threads,
    /// Skip verifying the proof before writing it.
    #[arg(long)]
    no_verify: bool,
    /// How to check the key's points: batched (default), per-point, or trusted (none).
    #[arg(long, default_value_t = PointChecks::Batched)]
    key_checks: PointChecks,
    /// Shorthand for --key-checks trusted, for keys you made yourself.
    #[arg(long, conflicts_with = "key_checks")]
    trusted_key: bool,
    /// Print per-stage times to stderr.
    #[arg(long)]
    timings: bool,
    /// How reduce spreads rows over threads: static, dynamic:<rows> or stealing:<rows>.
    #[arg(long, default_value_t = zkpipe_core::reduce::DEFAULT_SCHEDULE)]
    schedule: zkpipe_core::reduce::RowSchedule,
    /// Where the quotient stage and the MSMs run: auto (the GPU if present, but a small
    /// key, domain up to 2^17 on 16 threads and less on fewer, on the CPU, which proves
    /// it before the GPU has started), cpu, cuda.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// Which GPU the cuda backend uses (CUDA's device index).
    #[arg(long, default_value_t = 0)]
    gpu: usize,
    /// MSMs do the same work for every witness (a random mask on their scalars, its sums
    /// taken off): proving time then barely varies with the witness's values (experiment
    /// 023). Slower on typical witnesses, and binding the key costs one proof's MSMs more.
    #[arg(long)]
    constant_work: bool,
    /// The device budget (e.g. 16GiB): a key whose points and one proof's buffers exceed
    /// it keeps its points in host memory and streams them through the device in chunks,
    /// as a card of that size would have to. Never more than the GPU has free; default:
    /// what it has free (the CPU streams nothing).
    #[arg(long, value_name = "SIZE", value_parser = zkpipe_server::config::parse_size)]
    device_limit: Option<u64>,
}

/// Runs `prove`.
pub fn run(a: Args) -> Result<()> {
    a.flags.threads.install()?;
    // Checked before the work: a bad output path fails now, not after the proof.
    let plan = super::replace_outputs(&[&a.proof, &a.public], &[&a.zkey, &a.wtns])?;
    let name = if a.wtns == Path::new("-") {
        Path::new(STDIN_NAME)
    } else {
        &a.wtns
    };
    prove_to(&a.flags, &a.zkey, name, plan, || {
        let bytes = read_input_or_stdin(&a.wtns)?;
        Ok(Wtns::parse(&bytes).map_err(|k| zkpipe_formats::Error::new(name, k))?)
    })
}

/// Proves the witness `witness` yields (named `witness_name` in messages) with the key at
/// `zkey`, and writes the proof and the public signals through `plan` (proof, public).
/// The witness is made while the key is compiled, then checked against it (curve,
/// length); a bad key is reported before a bad witness.
pub fn prove_to(
    flags: &ProveFlags,
    zkey: &Path,
    witness_name: &Path,
    plan: Plan,
    witness: impl FnOnce() -> Result<Wtns> + Send,
) -> Result<()> {
    let progress = Progress::start(format!(
        "proving {} with {}",
        witness_name.display(),
        zkey.display()
    ));
    let mut t = Timings::default();
    let file = t.time(Stage::KeyLoad, || ZkeyFile::open(zkey))?;
    let job = Job {
        flags,
        zkey,
        witness_name,
        progress: &progress,
    };
    with_curve!(file.header.curve, E => job.prove::<E>(&file, witness, plan, &mut t))
}

/// What [`prove_to`] proves, for its curve-generic half.
struct Job<'a> {
    flags: &'a ProveFlags,
    zkey: &'a Path,
    witness_name: &'a Path,
    /// The line on a terminal for a proof that takes more than a few seconds.
    progress: &'a Progress,
}

impl Job<'_> {
    fn prove<E: BindCurve>(
        &self,
        file: &ZkeyFile,
        witness: impl FnOnce() -> Result<Wtns> + Send,
        plan: Plan,
        t: &mut Timings,
    ) -> Result<()> {
        let a = self.flags;
        let checks = if a.trusted_key {
            PointChecks::Trusted
        } else {
            a.key_checks
        };
        // The point checks run once per key file (zkpipe_core::key_cache).
        let cache = CheckedKeys::user();
        // The witness is read (or computed) and converted on another thread while the key
        // compiles; only its length waits for the key.
        self.progress.step("loading the key and the witness");
        let ((compiled, key_span), (converted, wtns_span)) = rayon::join(
            || {
                timed(Stage::KeyLoad, || {
                    compile_checked::<E>(file, checks, cache.as_ref())
                })
            },
            || {
                timed(Stage::LoadWitness, || {
                    witness().and_then(|w| {
                        Witness::for_curve::<E>(&w)
                            .with_context(|| self.witness_name.display().to_string())
                    })
                })
            },
        );
        t.spans.extend([key_span, wtns_span]);
        let (key, outcome) = compiled?;
        if a.timings && outcome == CheckOutcome::Remembered {
            eprintln!(
                "key checks ({checks}): passed before, remembered in {}",
                cache
                    .as_ref()
                    .map_or(String::new(), |c| c.dir().display().to_string())
            );
        }
        let key = std::sync::Arc::new(key);
        if !a.no_verify {
            key.prepare_vk_in_background();
        }
        let witness = converted?;
        witness
            .check_len(&key)
            .with_context(|| self.witness_name.display().to_string())?;
        let bind = zkpipe_core::BindOptions {
            constant_work: a.constant_work,
        };
        self.progress.step("binding the key to the device");
        let bound = t.time(Stage::Upload, || {
            select(
                a.backend,
                Arc::clone(&key),
                a.gpu,
                Proofs::One,
                &bind,
                Streaming {
                    device_limit: a.device_limit,
                    batch: 0,
                },
            )
        })?;
        let opts = ProveOptions {
            self_check: !a.no_verify,
            schedule: a.schedule,
        };
        self.progress.step("proving");
        let proof = prove(bound.as_ref(), &witness, &opts, &mut rand::rngs::OsRng, t)
            .map_err(|e| blame_unchecked_key(e, checks))
            .with_context(|| {
                format!(
                    "proving {} with {}",
                    self.witness_name.display(),
                    self.zkey.display()
                )
            })?;
        let public: Vec<String> = witness
            .public(key.n_public)
            .iter()
            .map(field_to_decimal)
            .collect();
        t.time(Stage::Write, || {
            plan.write(&[&to_json_bytes(&proof.to_json()), &to_json_bytes(&public)])
        })?;
        self.progress.finish();
        if a.timings {
            print_timings(t, self.zkey);
            eprintln!("  {:<12} {}", "backend", bound.name());
            let residency = bound.residency();
            let residency = residency.map_or_else(|e| e.to_string(), |r| r.to_string());
            eprintln!("  {:<12} {residency}", "residency");
            if bound.name() == "cpu" {
                let staging = zkpipe_core::PinnedKind::default();
                let ifma = DeviceOptions::from_process(staging).is_ok_and(|o| o.cpu.ifma);
                let adder = zkpipe_core::msm::pippenger::cpu_adder(ifma);
                eprintln!("  {:<12} {adder}", "msm_adder");
            }
        }
        // The process exits next: the key, the witness and the backend's state are left
        // to the OS, which takes them back at once, instead of being freed piece by piece
        // (2–3 ms of a ~65 ms 2^16 proof on 16 cores,
        // lab/experiments/029-cpu-one-shot-serial-path.md).
        std::mem::forget((key, witness, bound));
        Ok(())
    }
}

/// A proof that fails its self-check is the witness's fault only if the key is sound: with
/// the key's point checks skipped, a corrupted key fails the same way, so the message says
/// both.
fn blame_unchecked_key(e: zkpipe_core::Error, checks: PointChecks) -> anyhow::Error {
    if checks == PointChecks::Trusted && matches!(e, zkpipe_core::Error::NotSatisfied) {
        anyhow::anyhow!(
            "{e}; or the key is bad: its point checks were skipped (--trusted-key or \
             --key-checks trusted), run without them to check it"
        )
    } else {
        e.into()
    }
}

/// Prints the per-stage table to stderr.
pub fn print_timings(t: &Timings, what: &Path) {
    eprintln!("stage timings for {}:", what.display());
    for stage in Stage::ALL {
        let d = t.total(stage);
        if t.spans.iter().any(|s| s.stage == stage) {
            eprintln!("  {:<12} {:>10.2} ms", stage.name(), d.as_secs_f64() * 1e3);
        }
    }
    // The CPU backend runs the quotient and the MSMs concurrently: their own spans overlap.
    let device = [
        Stage::Quotient,
        Stage::MsmA,
        Stage::MsmB1,
        Stage::MsmB2,
        Stage::MsmC,
        Stage::MsmH,
    ];
    if t.overlapping(&device) {
        eprintln!(
            "  {:<12} {:>10.2} ms  (quotient and msm_* ran concurrently: their times overlap)",
            "device_wall",
            t.wall_of(&device).as_secs_f64() * 1e3
        );
    }
    let total = t.wall();
    eprintln!("  {:<12} {:>10.2} ms", "total", total.as_secs_f64() * 1e3);
}
