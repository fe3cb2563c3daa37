//! `zkpipe await <job> [--timeout 60s] [--out DIR]`: wait for a job; print its state and
//! per-proof timings; write its proofs into DIR (proof.json/public.json for one partition,
//! proof-<i>.json/public-<i>.json for several). Exit status 1 unless the job is done.

use super::client::{connect, duration, rpc, runtime, state_name, ServerArg};
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;
use zkpipe_formats::files::write_all_or_nothing;
use zkpipe_server::pb;

/// Arguments of `await`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// The job id.
    job: u64,
    /// How long to wait.
    #[arg(long, default_value = "60s", value_parser = duration)]
    timeout: Duration,
    /// Where to write the proofs.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Writes a finished job's proofs into `dir`, all or nothing.
pub fn write_proofs(dir: &Path, r: &pb::JobResult) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let one = r.proofs.len() == 1;
    let names: Vec<(PathBuf, PathBuf)> = (0..r.proofs.len())
        .map(|i| {
            if one {
                (dir.join("proof.json"), dir.join("public.json"))
            } else {
                (
                    dir.join(format!("proof-{i}.json")),
                    dir.join(format!("public-{i}.json")),
                )
            }
        })
        .collect();
    let mut outs: Vec<(&Path, &[u8])> = Vec::new();
    for ((proof, public), p) in names.iter().zip(&r.proofs) {
        outs.push((proof, p.proof_json.as_bytes()));
        outs.push((public, p.public_json.as_bytes()));
    }
    write_all_or_nothing(&outs)?;
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
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
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
