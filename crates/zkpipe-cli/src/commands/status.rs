//! `zkpipe status [--json]`: the daemon's queues, jobs, keys, devices and memory.

use super::client::{connect, rpc, runtime, state_name, ServerArg};
use anyhow::Result;
use zkpipe_server::pb;

/// Arguments of `status`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// List every known job, not only unfinished ones.
    #[arg(long)]
    all: bool,
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// Runs `status`.
pub fn run(a: Args) -> Result<()> {
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let s = c
            .get_status(pb::GetStatusRequest {})
            .await
            .map_err(rpc)?
            .into_inner();
        println!("uptime {:.0} s", s.uptime_s);
        println!(
            "memory {:.1} / {:.1} MiB reserved; {} partitions pending",
            mib(s.memory_used),
            mib(s.memory_limit),
            s.pending_partitions
        );
        if let Some(q) = &s.queues {
            println!(
                "queues admission {} reduce {} device {:?} tail {}",
                q.admission, q.reduce, q.device, q.tail
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
            println!(
                "key {} ({}): {}, refs {}, {:.1} MiB resident, domain {}, loads {}, devices {:?}",
                k.id,
                k.curve,
                k.residency,
                k.refs,
                mib(k.host_bytes),
                k.domain_size,
                k.loads,
                k.devices
            );
        }
        for j in &s.jobs {
            let done = matches!(
                pb::JobState::try_from(j.state),
                Ok(pb::JobState::Done | pb::JobState::Failed | pb::JobState::Cancelled)
            );
            if a.all || !done {
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
        Ok(())
    })
}
