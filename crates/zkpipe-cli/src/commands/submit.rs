//! `zkpipe submit <key-id> <witness.wtns>... [--input input.json]...`: queue a job (one
//! partition per witness or per set of circuit inputs) and print its id. Above
//! [`STREAM_ABOVE_BYTES`](zkpipe_proto::upload::STREAM_ABOVE_BYTES) of files the job goes
//! as a stream of chunks read from the files as they are sent (`SubmitProofStream`), so
//! that neither end holds a whole message.

use super::client::{connect, rpc, runtime, ServerArg, Stream};
use anyhow::Result;
use std::path::PathBuf;
use zkpipe_proto::pb;
use zkpipe_proto::upload::{file_sizes, StreamMode};
use zkpipe_proto::{submit_streamed, UploadError, WitnessSource};

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
    /// How the witnesses travel: auto streams them in chunks above 4 MiB of files,
    /// always streams any files, never sends one message (the daemon's
    /// server.max_request_bytes bounds it).
    #[arg(long, value_enum, default_value = "auto")]
    stream: Stream,
}

/// Runs `submit`.
pub fn run(a: Args) -> Result<()> {
    let paths: Vec<PathBuf> = a.wtns.iter().chain(&a.input).cloned().collect();
    // Files only: stdin and pipes are read whole.
    if let Some(sizes) = file_sizes(&paths) {
        if StreamMode::from(a.stream).streams(&sizes) {
            return streamed(&a, &paths);
        }
    }
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
        report(&a, &r);
        Ok(())
    })
}

/// Submits the files at `paths` as a stream.
fn streamed(a: &Args, paths: &[PathBuf]) -> Result<()> {
    let sources = paths
        .iter()
        .map(|p| WitnessSource::file(p))
        .collect::<Result<Vec<_>, _>>()?;
    let header = pb::SubmitProofHeader {
        key_id: a.key.clone(),
        priority: a.priority as i32,
        request_id: a.request_id.clone(),
        witness_sizes: Vec::new(),
    };
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let r = submit_streamed(&mut c, header, sources)
            .await
            .map_err(|e| match e {
                UploadError::Rpc(s) => rpc(*s),
                e => anyhow::Error::new(e),
            })?;
        report(a, &r);
        Ok(())
    })
}

/// Prints the job's id (and whether it existed).
fn report(a: &Args, r: &pb::SubmitProofResponse) {
    println!("{}", r.job_id);
    if r.existing {
        eprintln!(
            "zkpipe: request id {:?} was seen before: job {}",
            a.request_id, r.job_id
        );
    }
}
