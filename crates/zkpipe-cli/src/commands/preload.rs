//! `zkpipe preload <key-id>` (load it now) and `zkpipe evict <key-id>` (drop it now).

use super::client::{connect, duration, rpc, runtime, ServerArg};
use anyhow::Result;
use std::time::Duration;
use zkpipe_proto::pb;

/// Arguments of `preload`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// The key id (file stem of a .zkey in the daemon's key directory).
    key: String,
    /// How long to wait for room in the daemon's memory budget.
    #[arg(long, default_value = "60s", value_parser = duration)]
    timeout: Duration,
}

/// Arguments of `evict`.
#[derive(clap::Args)]
#[command(
    after_help = "Eviction is immediate: a key that running or queued partitions \
    hold is refused (FailedPrecondition), not waited for."
)]
pub struct EvictArgs {
    #[command(flatten)]
    server: ServerArg,
    /// The key id (file stem of a .zkey in the daemon's key directory).
    key: String,
}

/// Runs `preload`: prints the key's residency once it is loaded.
pub fn preload(a: Args) -> Result<()> {
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let req = pb::KeyRequest {
            key_id: a.key.clone(),
            timeout_ms: a.timeout.as_millis() as u64,
        };
        let r = c.preload_key(req).await.map_err(rpc)?.into_inner();
        println!("{}: {}", a.key, r.residency);
        Ok(())
    })
}

/// Runs `evict`: prints the key's residency afterwards.
pub fn evict(a: EvictArgs) -> Result<()> {
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let req = pb::KeyRequest {
            key_id: a.key.clone(),
            timeout_ms: 0,
        };
        let r = c.evict_key(req).await.map_err(rpc)?.into_inner();
        println!("{}: {}", a.key, r.residency);
        Ok(())
    })
}
