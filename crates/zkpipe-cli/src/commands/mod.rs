//! One module per subcommand. Curves are chosen here, from file headers, and everything
//! below is generic.

pub mod await_job;
pub mod bench;
pub mod cancel;
pub mod check;
pub mod client;
pub mod export_vk;
pub mod inspect;
pub mod loadtest;
pub mod preload;
pub mod prove;
pub mod serve;
pub mod setup;
pub mod status;
pub mod submit;
pub mod synth;
pub mod verify;

/// Runs a generic expression with `E` bound to the engine of a [`zkpipe_formats::CurveId`].
macro_rules! with_curve {
    ($curve:expr, $E:ident => $body:expr) => {
        match $curve {
            zkpipe_formats::CurveId::Bn254 => {
                type $E = zkpipe_core::Bn254;
                $body
            }
            zkpipe_formats::CurveId::Bls12_381 => {
                type $E = zkpipe_core::Bls12_381;
                $body
            }
        }
    };
}
pub(crate) use with_curve;

/// Refuses to replace an existing file unless `force` is set.
pub fn refuse_overwrite(path: &std::path::Path, force: bool) -> anyhow::Result<()> {
    if path.exists() && !force {
        anyhow::bail!(
            "{}: already exists (use --force to overwrite)",
            path.display()
        );
    }
    Ok(())
}

/// `--threads N` for commands that run on one pool.
#[derive(clap::Args, Clone, Copy)]
pub struct Threads {
    /// Worker threads for CPU stages (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

impl Threads {
    /// Sizes the global rayon pool; call before any parallel work.
    pub fn install(self) -> anyhow::Result<()> {
        if let Some(n) = self.threads {
            if n == 0 {
                anyhow::bail!("--threads must be at least 1");
            }
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build_global()?;
        }
        Ok(())
    }
}
