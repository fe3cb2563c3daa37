//! `zkpipe cancel <job>`: cancel a job; a finished or unknown job is an error.

use super::client::{connect, rpc, runtime, state_name, ServerArg};
use anyhow::Result;
use zkpipe_proto::pb;

/// Arguments of `cancel`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// The job id.
    job: u64,
}

/// Runs `cancel`.
pub fn run(a: Args) -> Result<()> {
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let r = c
            .cancel_proof(pb::CancelProofRequest { job_id: a.job })
            .await
            .map_err(rpc)?
            .into_inner();
        println!("job {}: {}", a.job, state_name(r.state));
        Ok(())
    })
}
