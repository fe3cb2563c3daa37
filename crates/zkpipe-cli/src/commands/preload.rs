//! `zkpipe preload <key-id>` (load it now) and `zkpipe evict <key-id>` (drop it now).

use super::client::{connect, duration, rpc, runtime, ServerArg};
use anyhow::Result;
use std::time::Duration;
use zkpipe_server::pb;

/// Arguments of `preload` and `evict`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// The key id.
    key: String,
    /// preload: how long to wait for room in the memory budget.
    #[arg(long, default_value = "60s", value_parser = duration)]
    timeout: Duration,
}

/// Runs `preload` (or `evict` if `evict`).
pub fn run(a: Args, evict: bool) -> Result<()> {
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let req = pb::KeyRequest {
            key_id: a.key.clone(),
            timeout_ms: a.timeout.as_millis() as u64,
        };
        let r = if evict {
            c.evict_key(req).await
        } else {
            c.preload_key(req).await
        }
        .map_err(rpc)?
        .into_inner();
        println!("{}: {}", a.key, r.residency);
        Ok(())
    })
}
