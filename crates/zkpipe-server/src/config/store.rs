//! `[store]`: the shared (Postgres) job store's options, checked.

use super::units::size_or_auto;
use super::StoreSection;
use std::net::SocketAddr;

/// The shared store's options, if `store.url` is set; the daemon's default name is this
/// host's name and gRPC port, which stay the same across its restarts.
pub(super) fn store(
    s: &StoreSection,
    grpc: SocketAddr,
) -> Result<Option<zkpipe_store::PgOptions>, String> {
    let Some(url) = s.url.clone().filter(|u| !u.is_empty()) else {
        for (set, field) in [
            (s.daemon.is_some(), "daemon"),
            (s.objects.is_some(), "objects"),
            (s.lease.is_some(), "lease"),
            (s.claim_ahead.is_some(), "claim_ahead"),
            (s.inline_max.is_some(), "inline_max"),
            (s.connections.is_some(), "connections"),
            (s.poll.is_some(), "poll"),
        ] {
            if set {
                return Err(format!("store.{field} is set but store.url is not"));
            }
        }
        return Ok(None);
    };
    let daemon = match &s.daemon {
        Some(d) if d.trim().is_empty() => return Err("store.daemon: empty".into()),
        Some(d) => d.trim().to_string(),
        None => format!("{}:{}", host_name(), grpc.port()),
    };
    Ok(Some(zkpipe_store::PgOptions {
        url,
        daemon,
        objects: s.objects.clone(),
        // 64 KiB: 512 KiB witnesses in rows cost a 2^14 daemon 10% of its proofs per
        // second against 26% gained with them in a directory (lab/experiments/020-fleet-store.md,
        // run 9).
        inline_max: size_or_auto(&s.inline_max, Some(STORE_INLINE_MAX))
            .map_err(|e| format!("store.inline_max: {e}"))?
            .unwrap_or(STORE_INLINE_MAX),
        connections: match s.connections {
            Some(0) => return Err("store.connections: must be at least 1".into()),
            Some(n) => n,
            None => 8,
        },
    }))
}

/// The largest witness a fleet keeps in its database when it has an object store.
const STORE_INLINE_MAX: u64 = 64 << 10;

/// This machine's host name (Linux), or "localhost".
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}
