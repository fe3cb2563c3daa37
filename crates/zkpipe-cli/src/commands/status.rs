//! `zkpipe status [--json]`: the daemon's queues, jobs, keys, devices and memory.

use super::client::{connect, rpc, runtime, state_name, ServerArg};
use anyhow::Result;
use serde_json::{json, Value};
use zkpipe_proto::{is_final, pb, priority_name};

/// Arguments of `status`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// List every known job, not only unfinished ones.
    #[arg(long)]
    all: bool,
    /// Print the status as one JSON document on stdout (sizes in bytes).
    #[arg(long)]
    json: bool,
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// Runs `status`.
pub fn run(a: Args) -> Result<()> {
    let s = runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let s = c
            .get_status(pb::GetStatusRequest {})
            .await
            .map_err(rpc)?
            .into_inner();
        anyhow::Ok(s)
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&status_json(&s, a.all))?);
    } else {
        print_text(&s, a.all);
    }
    Ok(())
}

/// The status as JSON, field names as in the gRPC `StatusResponse`.
fn status_json(s: &pb::StatusResponse, all: bool) -> Value {
    let queues = s.queues.as_ref().map(|q| {
        json!({"admission": q.admission, "synthesize": q.synthesize, "reduce": q.reduce, "device": q.device, "tail": q.tail})
    });
    let devices: Vec<Value> = s
        .devices
        .iter()
        .map(|d| {
            json!({
                "name": d.name,
                "has_memory": d.has_memory,
                "memory_total": d.memory_total,
                "memory_reserved": d.memory_reserved,
                "memory_free": d.memory_free,
                "busy_fraction": d.busy_fraction,
                "keys": d.keys,
            })
        })
        .collect();
    let keys: Vec<Value> = s
        .keys
        .iter()
        .map(|k| {
            json!({
                "id": k.id,
                "curve": k.curve,
                "residency": k.residency,
                "refs": k.refs,
                "host_bytes": k.host_bytes,
                "partition_bytes": k.partition_bytes,
                "n_vars": k.n_vars,
                "domain_size": k.domain_size,
                "loads": k.loads,
                "idle_s": k.idle_s,
                "devices": k.devices,
                "paths": k.paths,
                "tier": k.tier,
                "pinned_bytes": k.pinned_bytes,
                "binding_host_bytes": k.binding_host_bytes,
                "error": (!k.error.is_empty()).then_some(&k.error),
            })
        })
        .collect();
    let jobs: Vec<Value> = s
        .jobs
        .iter()
        .filter(|j| all || !is_final(j.state))
        .map(|j| {
            json!({
                "job_id": j.job_id,
                "key_id": j.key_id,
                "priority": priority_name(j.priority),
                "state": state_name(j.state),
                "partitions": j.partitions,
                "partitions_done": j.partitions_done,
                "request_id": j.request_id,
                "error": (!j.error.is_empty()).then_some(&j.error),
            })
        })
        .collect();
    json!({
        "uptime_s": s.uptime_s,
        "memory_used": s.memory_used,
        "memory_limit": s.memory_limit,
        "pinned_used": s.pinned_used,
        "pinned_limit": s.pinned_limit,
        "pending_partitions": s.pending_partitions,
        "queues": queues,
        "devices": devices,
        "keys": keys,
        "jobs": jobs,
    })
}

/// The status as text lines.
fn print_text(s: &pb::StatusResponse, all: bool) {
    println!("uptime {:.0} s", s.uptime_s);
    println!(
        "memory {:.1} / {:.1} MiB reserved (pinned {:.1} / {:.1} MiB); {} partitions pending",
        mib(s.memory_used),
        mib(s.memory_limit),
        mib(s.pinned_used),
        mib(s.pinned_limit),
        s.pending_partitions
    );
    if let Some(q) = &s.queues {
        println!(
            "queues admission {} synthesize {} reduce {} device {:?} tail {}",
            q.admission, q.synthesize, q.reduce, q.device, q.tail
        );
    }
    for d in &s.devices {
        let mem = if d.has_memory {
            format!(
                "{:.1} / {:.1} MiB",
                mib(d.memory_reserved),
                mib(d.memory_total)
            )
        } else {
            "host memory".into()
        };
        println!(
            "device {}: busy {:.1}%, {mem}, {} keys",
            d.name,
            d.busy_fraction * 100.0,
            d.keys
        );
    }
    for k in &s.keys {
        if !k.error.is_empty() {
            println!("key {}: {} — {}", k.id, k.residency, k.error);
            continue;
        }
        // Each bound device with the path its proofs take there: "0 in-core".
        let paths: Vec<String> = k
            .devices
            .iter()
            .zip(&k.paths)
            .filter(|(_, p)| !p.is_empty())
            .map(|(d, p)| format!("{d} {p}"))
            .collect();
        let pinned = match k.pinned_bytes {
            0 => String::new(),
            b => format!(" ({:.1} MiB pinned)", mib(b)),
        };
        let beside = match k.binding_host_bytes {
            0 => String::new(),
            b => format!(", {:.1} MiB held by its bindings", mib(b)),
        };
        println!(
            "key {} ({}): {}, tier {}{pinned}, refs {}, {:.1} MiB resident{beside}, domain {}, loads {}, devices {:?}{}",
            k.id,
            k.curve,
            k.residency,
            k.tier,
            k.refs,
            mib(k.host_bytes),
            k.domain_size,
            k.loads,
            k.devices,
            if paths.is_empty() {
                String::new()
            } else {
                format!(", on device {}", paths.join("; "))
            }
        );
    }
    for j in &s.jobs {
        if all || !is_final(j.state) {
            println!(
                "job {} ({}): {} {}/{}{}",
                j.job_id,
                j.key_id,
                state_name(j.state),
                j.partitions_done,
                j.partitions,
                if j.error.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", j.error)
                }
            );
        }
    }
}
