//! The protocol's one mapping to the engine's types: priorities and job states both ways,
//! per-proof timings, and the replies built from the engine's snapshots. The service
//! ([`crate::service`]) and the request decoding ([`crate::decode`]) use these functions
//! and write no mapping of their own. A wire value the protocol does not define is
//! INVALID_ARGUMENT, never a default.
// tonic's `Status` is the error type of every gRPC method; boxing it here buys nothing.
#![allow(clippy::result_large_err)]

use std::time::Duration;
use tonic::Status;
use zkpipe_engine::{EngineStatus, JobSnapshot, JobState, Priority, ProofTimings, Stage};
use zkpipe_proto::pb;

/// The wire's priority of an engine priority.
pub fn priority_to_wire(p: Priority) -> pb::Priority {
    match p {
        Priority::Low => pb::Priority::Low,
        Priority::Normal => pb::Priority::Normal,
        Priority::High => pb::Priority::High,
        Priority::Critical => pb::Priority::Critical,
    }
}

/// The engine's priority of a message's `priority` field (unspecified means normal, as
/// the protocol defines it).
pub fn priority_from_wire(p: i32) -> Result<Priority, Status> {
    match pb::Priority::try_from(p) {
        Ok(pb::Priority::Unspecified | pb::Priority::Normal) => Ok(Priority::Normal),
        Ok(pb::Priority::Low) => Ok(Priority::Low),
        Ok(pb::Priority::High) => Ok(Priority::High),
        Ok(pb::Priority::Critical) => Ok(Priority::Critical),
        Err(_) => Err(Status::invalid_argument(format!("unknown priority {p}"))),
    }
}

/// The wire's state of an engine job state.
pub fn state_to_wire(s: JobState) -> pb::JobState {
    match s {
        JobState::Queued => pb::JobState::Queued,
        JobState::Running => pb::JobState::Running,
        JobState::Done => pb::JobState::Done,
        JobState::Failed => pb::JobState::Failed,
        JobState::Cancelled => pb::JobState::Cancelled,
    }
}

/// The engine's state of a message's `state` field; unspecified names no state.
pub fn state_from_wire(s: i32) -> Result<JobState, Status> {
    match pb::JobState::try_from(s) {
        Ok(pb::JobState::Queued) => Ok(JobState::Queued),
        Ok(pb::JobState::Running) => Ok(JobState::Running),
        Ok(pb::JobState::Done) => Ok(JobState::Done),
        Ok(pb::JobState::Failed) => Ok(JobState::Failed),
        Ok(pb::JobState::Cancelled) => Ok(JobState::Cancelled),
        Ok(pb::JobState::Unspecified) | Err(_) => {
            Err(Status::invalid_argument(format!("unknown job state {s}")))
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The wire's timings of one proof, field by field, in milliseconds.
pub fn timings_to_wire(t: &ProofTimings) -> pb::ProofTimings {
    let at = |s: Stage| ms(t.get(s));
    pb::ProofTimings {
        queue_wait_ms: at(Stage::QueueWait),
        key_load_ms: at(Stage::KeyLoad),
        reduce_ms: at(Stage::Reduce),
        synthesize_ms: at(Stage::Synthesize),
        device_wait_ms: at(Stage::DeviceWait),
        device_ms: at(Stage::Device),
        tail_ms: at(Stage::Tail),
        total_ms: ms(t.total),
    }
}

/// The reply of an await: a job's state and, when done, its proofs.
pub fn job_result(s: JobSnapshot) -> pb::JobResult {
    pb::JobResult {
        job_id: s.id,
        state: state_to_wire(s.state) as i32,
        key_id: s.key_id,
        proofs: s
            .proofs
            .into_iter()
            .map(|p| pb::PartitionProof {
                timings: Some(timings_to_wire(&p.timings)),
                proof_json: p.proof_json,
                public_json: p.public_json,
            })
            .collect(),
        error: s.error.unwrap_or_default(),
        partitions: s.partitions as u32,
        partitions_done: s.partitions_done as u32,
    }
}

/// The reply of a status call.
pub fn status_response(s: EngineStatus) -> pb::StatusResponse {
    pb::StatusResponse {
        queues: Some(pb::Queues {
            admission: s.queues.admission as u32,
            reduce: s.queues.reduce as u32,
            synthesize: s.queues.synthesize as u32,
            device: s.queues.device.iter().map(|&d| d as u32).collect(),
            tail: s.queues.tail as u32,
        }),
        jobs: s
            .jobs
            .into_iter()
            .map(|j| pb::JobInfo {
                job_id: j.id,
                key_id: j.key_id,
                priority: priority_to_wire(j.priority) as i32,
                state: state_to_wire(j.state) as i32,
                partitions: j.partitions as u32,
                partitions_done: j.partitions_done as u32,
                request_id: j.request_id,
                error: j.error.unwrap_or_default(),
            })
            .collect(),
        keys: s
            .keys
            .into_iter()
            .map(|k| pb::KeyInfo {
                id: k.meta.id,
                curve: k.meta.shape.curve.snarkjs_name().into(),
                residency: k.residency.name().into(),
                refs: k.refs as u32,
                host_bytes: k.meta.host_bytes,
                partition_bytes: k.meta.partition_bytes,
                n_vars: k.meta.shape.n_vars as u32,
                domain_size: k.meta.shape.domain_size as u32,
                device: k.devices.first().map_or(-1, |&d| d as i32),
                devices: k.devices.iter().map(|&d| d as u32).collect(),
                paths: k.paths,
                tier: k.tier.name().into(),
                pinned_bytes: k.pinned_bytes,
                binding_host_bytes: k.binding_host_bytes,
                loads: k.loads,
                idle_s: k.idle.as_secs_f64(),
                error: String::new(),
            })
            .chain(s.failed_keys.into_iter().map(|f| pb::KeyInfo {
                id: f.id,
                residency: "failed".into(),
                device: -1,
                error: f.error,
                ..Default::default()
            }))
            .collect(),
        devices: s
            .devices
            .into_iter()
            .map(|d| pb::DeviceInfo {
                name: d.name,
                has_memory: d.memory_total.is_some(),
                memory_total: d.memory_total.unwrap_or(0),
                memory_reserved: d.memory_reserved,
                memory_free: d
                    .memory_total
                    .unwrap_or(0)
                    .saturating_sub(d.memory_reserved),
                busy_fraction: d.busy_fraction,
                keys: d.keys as u32,
            })
            .collect(),
        memory_used: s.memory_used,
        memory_limit: s.memory_limit,
        pinned_used: s.pinned_used,
        pinned_limit: s.pinned_limit,
        pending_partitions: s.pending_partitions as u64,
        uptime_s: s.uptime.as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRIORITIES: [Priority; 4] = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];

    /// Both ways agree, and the wire's names (what clients print and parse) are the
    /// engine's.
    #[test]
    fn priorities_and_states_go_both_ways_under_one_name() {
        for p in PRIORITIES {
            let wire = priority_to_wire(p);
            assert_eq!(priority_from_wire(wire as i32).unwrap(), p);
            assert_eq!(wire.name(), p.name());
        }
        for s in JobState::ALL {
            let wire = state_to_wire(s);
            assert_eq!(state_from_wire(wire as i32).unwrap(), s);
            assert_eq!(wire.name(), s.name());
            assert_eq!(wire.is_final(), s.is_final());
        }
    }

    #[test]
    fn unknown_wire_values_are_invalid_arguments() {
        assert_eq!(
            priority_from_wire(pb::Priority::Unspecified as i32).unwrap(),
            Priority::Normal
        );
        for bad in [-1, 5, 99] {
            let e = priority_from_wire(bad).unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument);
            assert_eq!(e.message(), format!("unknown priority {bad}"));
        }
        for bad in [pb::JobState::Unspecified as i32, 6, -3] {
            let e = state_from_wire(bad).unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{bad}");
        }
    }

    #[test]
    fn timings_are_milliseconds_field_by_field() {
        let mut t = ProofTimings {
            total: Duration::from_millis(30),
            ..ProofTimings::default()
        };
        for (stage, d) in [
            (Stage::QueueWait, Duration::from_micros(1_500)),
            (Stage::KeyLoad, Duration::from_millis(2)),
            (Stage::Synthesize, Duration::from_millis(3)),
            (Stage::Reduce, Duration::from_millis(4)),
            (Stage::DeviceWait, Duration::from_millis(5)),
            (Stage::Device, Duration::from_millis(6)),
            (Stage::Tail, Duration::from_millis(7)),
        ] {
            t.set(stage, d);
        }
        let w = timings_to_wire(&t);
        let got = [
            w.queue_wait_ms,
            w.key_load_ms,
            w.synthesize_ms,
            w.reduce_ms,
            w.device_wait_ms,
            w.device_ms,
            w.tail_ms,
            w.total_ms,
        ];
        let want = [1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 30.0];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-9, "{got:?}");
        }
    }
}
