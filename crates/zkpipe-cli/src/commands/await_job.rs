//! `zkpipe await <job> [--timeout 60s] [--out DIR]`: wait for a job; print its state and
//! per-proof timings; write its proofs into DIR (proof.json/public.json for one partition,
//! proof-<i>.json/public-<i>.json for several). Exit status 1 unless the job is done.

use super::client::{connect, duration, rpc, runtime, state_name, ServerArg};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;
use zkpipe_server::pb;

/// Arguments of `await`.
#[derive(clap::Args)]
#[command(
    after_help = "Outputs: DIR is checked before the wait and created when the job is \
    done; existing proof and public files in it are replaced (as snarkjs does), all or none \
    of them."
)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// The job id.
    job: u64,
    /// How long to wait.
    #[arg(long, default_value = "60s", value_parser = duration)]
    timeout: Duration,
    /// The directory to write the proofs into.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Checked before the wait: DIR is a directory, or missing under one (created later).
fn check_out_dir(dir: &Path) -> Result<()> {
    let mut p = dir;
    loop {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) if p == dir => bail!("{}: is not a directory", dir.display()),
            Ok(_) => bail!("{}: {} is not a directory", dir.display(), p.display()),
            Err(_) => match p.parent() {
                Some(q) if !q.as_os_str().is_empty() => p = q,
                _ => return Ok(()),
            },
        }
    }
}

/// Writes a finished job's proofs into `dir`, all or nothing.
fn write_proofs(dir: &Path, r: &pb::JobResult) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    let one = r.proofs.len() == 1;
    let names: Vec<PathBuf> = (0..r.proofs.len())
        .flat_map(|i| {
            if one {
                [dir.join("proof.json"), dir.join("public.json")]
            } else {
                [
                    dir.join(format!("proof-{i}.json")),
                    dir.join(format!("public-{i}.json")),
                ]
            }
        })
        .collect();
    let paths: Vec<&Path> = names.iter().map(PathBuf::as_path).collect();
    let contents: Vec<&[u8]> = r
        .proofs
        .iter()
        .flat_map(|p| [p.proof_json.as_bytes(), p.public_json.as_bytes()])
        .collect();
    super::replace_outputs(&paths, &[])?.write(&contents)?;
    Ok(())
}

/// Prints a job's state and timings to stderr.
pub fn print_result(r: &pb::JobResult) {
    eprintln!(
        "job {} ({}): {}, {}/{} partitions",
        r.job_id,
        r.key_id,
        state_name(r.state),
        r.partitions_done,
        r.partitions
    );
    for (i, p) in r.proofs.iter().enumerate() {
        if let Some(t) = &p.timings {
            eprintln!(
                "  partition {i}: queue {:.1} ms, key load {:.1} ms, reduce {:.1} ms, device wait {:.1} ms, device {:.1} ms, tail {:.1} ms, total {:.1} ms",
                t.queue_wait_ms, t.key_load_ms, t.reduce_ms, t.device_wait_ms, t.device_ms, t.tail_ms, t.total_ms
            );
        }
    }
}

/// Runs `await`.
pub fn run(a: Args) -> Result<()> {
    if let Some(dir) = &a.out {
        check_out_dir(dir)?;
    }
    runtime()?.block_on(async {
        let mut c = connect(&a.server.server).await?;
        let r = c
            .await_proof(pb::AwaitProofRequest {
                job_id: a.job,
                timeout_ms: a.timeout.as_millis() as u64,
            })
            .await
            .map_err(rpc)?
            .into_inner();
        print_result(&r);
        match pb::JobState::try_from(r.state) {
            Ok(pb::JobState::Done) => {
                if let Some(dir) = &a.out {
                    write_proofs(dir, &r)?;
                }
                println!("done");
                Ok(())
            }
            Ok(pb::JobState::Failed) => bail!("job {} failed: {}", r.job_id, r.error),
            _ => bail!(
                "job {} is {} (not done after {:?})",
                r.job_id,
                state_name(r.state),
                a.timeout
            ),
        }
    })
}
