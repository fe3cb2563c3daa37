//! One module per subcommand. Curves are chosen here, from file headers, and everything
//! below is generic.

pub mod check;
pub mod export_vk;
pub mod inspect;
pub mod prove;
pub mod setup;
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
        anyhow::bail!("{}: already exists (use --force to overwrite)", path.display());
    }
    Ok(())
}
