//! `zkpipe await <job> [--timeout 60s] [--out DIR] [--json]`: wait for a job; print its
//! state and per-proof timings (with `--json`, the whole result as one JSON document on
//! stdout); write its proofs into DIR (proof.json/public.json for one partition,
//! proof-<i>.json/public-<i>.json for several). Exit status 0 done, 1 failed or cancelled,
//! 2 still unfinished after `--timeout`.

use super::client::{connect, duration, rpc, runtime, state_name, ServerArg};
use super::Exit;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zkpipe_proto::pb;

/// Arguments of `await`.
#[derive(clap::Args)]
#[command(
    after_help = "Exit status: 0 the job is done (and its proofs written); 1 it failed \
    or was cancelled, or another error; 2 it is still queued or running after --timeout \
    (2 is also a usage error).\n\nOutputs: DIR is checked before the wait and created when \
    the job is done; existing proof and public files in it are replaced (as snarkjs does), \
    all or none of them."
)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// The job id.
    job: u64,
    /// How long to wait.
    #[arg(long, default_value = "60s", value_parser = duration)]
    timeout: Duration,
    /// The directory to write the proofs into: proof.json and public.json for a job of one
    /// partition; proof-<i>.json and public-<i>.json (i = 0, 1, … in submit's witness
    /// order) for a job of several.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the result as one JSON document on stdout: state, error, partitions and, per
    /// proof, the proof, the public signals and the timings.
    #[arg(long)]
    json: bool,
}

/// Runs `await`.
pub fn run(a: Args) -> Result<()> {
    if let Some(dir) = &a.out {
        check_out_dir(dir)?;
    }
    let r = runtime()?.block_on(wait(&a))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&result_json(&r))?);
    } else {
        print_result(&r);
    }
    match pb::JobState::try_from(r.state) {
        Ok(pb::JobState::Done) => {
            if let Some(dir) = &a.out {
                write_proofs(dir, &r)?;
            }
            if !a.json {
                println!("done");
            }
            Ok(())
        }
        Ok(pb::JobState::Failed) => bail!("job {} failed: {}", r.job_id, r.error),
        Ok(pb::JobState::Cancelled) => bail!("job {} was cancelled", r.job_id),
        _ => Err(Exit {
            status: 2,
            message: format!(
                "timed out: job {} is still {} after {:?}",
                r.job_id,
                state_name(r.state),
                a.timeout
            ),
        }
        .into()),
    }
}

/// Waits until the job is finished or `--timeout` has passed. The daemon caps one wait
/// (`server.max_await`), so a longer timeout asks again.
async fn wait(a: &Args) -> Result<pb::JobResult> {
    let mut c = connect(&a.server).await?;
    let deadline = Instant::now() + a.timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let r = c
            .await_proof(pb::AwaitProofRequest {
                job_id: a.job,
                timeout_ms: left.as_millis() as u64,
            })
            .await
            .map_err(rpc)?
            .into_inner();
        if zkpipe_proto::is_final(r.state) || Instant::now() >= deadline {
            return Ok(r);
        }
    }
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

/// A job's result as JSON; proofs and public signals are embedded as JSON, not strings.
fn result_json(r: &pb::JobResult) -> Value {
    let embed = |s: &str| serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.into()));
    let proofs: Vec<Value> = r
        .proofs
        .iter()
        .map(|p| {
            let timings = p.timings.map(|t| {
                json!({
                    "queue_wait_ms": t.queue_wait_ms,
                    "key_load_ms": t.key_load_ms,
                    "synthesize_ms": t.synthesize_ms,
                    "reduce_ms": t.reduce_ms,
                    "device_wait_ms": t.device_wait_ms,
                    "device_ms": t.device_ms,
                    "tail_ms": t.tail_ms,
                    "total_ms": t.total_ms,
                })
            });
            json!({
                "proof": embed(&p.proof_json),
                "public": embed(&p.public_json),
                "timings": timings,
            })
        })
        .collect();
    json!({
        "job_id": r.job_id,
        "key_id": r.key_id,
        "state": state_name(r.state),
        "error": (!r.error.is_empty()).then_some(&r.error),
        "partitions": r.partitions,
        "partitions_done": r.partitions_done,
        "proofs": proofs,
    })
}

/// Prints a job's state and timings to stderr.
fn print_result(r: &pb::JobResult) {
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
                "  partition {i}: queue {:.1} ms, key load {:.1} ms, synthesize {:.1} ms, reduce {:.1} ms, device wait {:.1} ms, device {:.1} ms, tail {:.1} ms, total {:.1} ms",
                t.queue_wait_ms, t.key_load_ms, t.synthesize_ms, t.reduce_ms, t.device_wait_ms, t.device_ms, t.tail_ms, t.total_ms
            );
        }
    }
}
