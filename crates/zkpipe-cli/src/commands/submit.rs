//! `zkpipe submit <key-id> <witness.wtns>... [--input input.json]...`: queue a job (one
//! partition per witness or per set of circuit inputs) and print its id.

use super::client::{connect, rpc, runtime, ServerArg};
use anyhow::Result;
use std::path::PathBuf;
use zkpipe_proto::pb;

/// Arguments of `submit`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// The key id (file stem of a .zkey in the daemon's key directory).
    key: String,
    /// One witness per partition.
    #[arg(required_unless_present = "input")]
    wtns: Vec<PathBuf>,
    /// Circuit inputs (snarkjs's input.json), one partition each, after the witnesses:
    /// the daemon computes the witness with the key's generator (`<key>.wasm` or a native
    /// generator beside `<key>.zkey`).
    #[arg(long, value_name = "input.json")]
    input: Vec<PathBuf>,
    /// low, normal, high or critical.
    #[arg(long, default_value = "normal")]
    priority: pb::Priority,
    /// Idempotency key: submitting it again returns the same job.
    #[arg(long, default_value = "")]
    request_id: String,
}

/// Runs `submit`.
pub fn run(a: Args) -> Result<()> {
    let witnesses = a
        .wtns
        .iter()
        .chain(&a.input)
        .map(|p| zkpipe_formats::files::read_input(p))
        .collect::<Result<Vec<_>, _>>()?;
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let r = c
            .submit_proof(pb::SubmitProofRequest {
                key_id: a.key.clone(),
                witnesses,
                priority: a.priority as i32,
                request_id: a.request_id.clone(),
            })
            .await
            .map_err(rpc)?
            .into_inner();
        println!("{}", r.job_id);
        if r.existing {
            eprintln!(
                "zkpipe: request id {:?} was seen before: job {}",
                a.request_id, r.job_id
            );
        }
        Ok(())
    })
}
