//! `zkpipe setup --dev <circuit.r1cs> <out.zkey>`: an INSECURE key for development and
//! benchmarks, in snarkjs's zkey format.

use super::with_curve;
use anyhow::{bail, Context, Result};
use rand::SeedableRng;
use std::path::PathBuf;
use zkpipe_core::setup::dev_setup;
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
}

/// Runs `setup`.
pub fn run(a: Args) -> Result<()> {
    a.threads.install()?;
    if !a.dev {
        bail!("only `setup --dev` is supported: production keys come from a snarkjs ceremony (powersoftau + zkey contribute)");
    }
    let plan = super::new_outputs(&[&a.zkey], &[&a.r1cs], a.force)?;
    let r1cs = R1cs::read(&a.r1cs)?;
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
    let start = std::time::Instant::now();
    let zkey = with_curve!(r1cs.header.curve, E => dev_setup::<E>(&r1cs, &mut rng, &progress))
        .with_context(|| a.r1cs.display().to_string())?;
    bar.finish_and_clear();
    let bytes = zkey.to_bytes();
    plan.write(&[&bytes])?;
    eprintln!(
        "wrote {} ({} constraints, domain 2^{}, {:.1} MiB) in {:.1} s",
        a.zkey.display(),
        r1cs.header.n_constraints,
        zkey.header.domain_size.trailing_zeros(),
        bytes.len() as f64 / (1 << 20) as f64,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
