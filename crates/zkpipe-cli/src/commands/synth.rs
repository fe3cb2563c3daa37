//! `zkpipe synth`: a satisfiable synthetic circuit (.r1cs) and its witness (.wtns).

use super::with_curve;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use zkpipe_core::synth::{synth, SynthSpec, Values};
use zkpipe_formats::CurveId;

/// Arguments of `synth`.
#[derive(clap::Args)]
#[command(after_help = super::outputs_help!("Existing files are refused unless --force is given."))]
pub struct Args {
    #[command(flatten)]
    threads: super::Threads,
    /// Where to write the constraint system (`-`: stdout).
    r1cs: PathBuf,
    /// Where to write the witness (`-`: stdout).
    wtns: PathBuf,
    /// Number of constraints, e.g. 100000 or 2^16.
    #[arg(long, value_parser = parse_size, conflicts_with = "domain")]
    constraints: Option<u64>,
    /// Fill a domain of this size exactly (a power of two, e.g. 2^20): constraints =
    /// domain − public − 1, so the key's domain is this size.
    #[arg(long, value_parser = parse_size)]
    domain: Option<u64>,
    /// Public inputs.
    #[arg(long, default_value_t = 1)]
    public: u64,
    /// Curve: bn254 or bls12-381.
    #[arg(long, default_value = "bn254")]
    curve: String,
    /// Seed (same seed, same circuit and witness).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The witness's values: `random` (what each row's product makes of random inputs,
    /// almost all full-size), `sha256` (a circom SHA-256 circuit's: 58.2% 0, 41.8% 1), or
    /// shares in percent by the classes `zkpipe inspect` counts, e.g.
    /// `zero=50,one=30,upTo64Bits=10,full=10`. MSM times depend on them.
    #[arg(long, default_value = "random")]
    values: Values,
    /// Replace existing outputs.
    #[arg(long)]
    force: bool,
}

/// Parses `1048576` or `2^20`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let v = match s.split_once('^') {
        Some(("2", e)) => {
            let e: u32 = e.parse().map_err(|_| format!("bad exponent in {s:?}"))?;
            1u64.checked_shl(e)
                .filter(|_| e < 40)
                .ok_or(format!("{s} is too large"))?
        }
        Some(_) => return Err(format!("{s:?}: only powers of 2 can be written as b^e")),
        None => s.parse().map_err(|_| format!("{s:?} is not a number"))?,
    };
    Ok(v)
}

/// Runs `synth`.
pub fn run(a: Args) -> Result<()> {
    a.threads.install()?;
    let curve = CurveId::from_snarkjs_name(&a.curve)
        .with_context(|| format!("unknown curve {:?} (bn254 or bls12-381)", a.curve))?;
    let constraints = match (a.constraints, a.domain) {
        (Some(c), None) => c,
        (None, Some(d)) => {
            if !d.is_power_of_two() {
                bail!("--domain {d} is not a power of two");
            }
            d.checked_sub(a.public + 1)
                .filter(|&c| c > 0)
                .with_context(|| {
                    format!(
                        "--domain {d} leaves no room for constraints beside {} public inputs",
                        a.public
                    )
                })?
        }
        _ => bail!("give --constraints N or --domain 2^k"),
    };
    if constraints == 0 || constraints + a.public + 1 > 1 << 28 {
        bail!("{constraints} constraints is outside 1..2^28");
    }
    let plan = super::new_outputs(&[&a.r1cs, &a.wtns], &[], a.force)?;
    let spec = SynthSpec {
        constraints: constraints as usize,
        public: a.public as usize,
        seed: a.seed,
        values: a.values,
    };
    let (r1cs, wtns) = with_curve!(curve, E => synth::<E>(&spec));
    plan.write(&[&r1cs.to_bytes(), &wtns.to_bytes()])?;
    eprintln!(
        "wrote {} ({} constraints, {} terms, {} wires) and {} ({} values)",
        a.r1cs.display(),
        constraints,
        r1cs.terms.len(),
        r1cs.header.n_wires,
        a.wtns.display(),
        a.values
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("2^20"), Ok(1 << 20));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(
            parse_size("3^2").is_err() && parse_size("2^x").is_err() && parse_size("2^64").is_err()
        );
    }
}
