//! Jobs as callers see them: one or more partitions (witnesses) proved with one key, a
//! priority, a caller's request id, a state, and the proofs. The engine's own shared
//! record of a job in flight is `live_job::Job`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use zkpipe_core::timings::Stage;

/// A job's id, given by the job store: never reused, across restarts too.
pub type JobId = u64;

/// Scheduling priority; higher leaves every queue first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    /// Background work.
    Low = 0,
    /// The default.
    #[default]
    Normal = 1,
    /// Ahead of normal work.
    High = 2,
    /// Ahead of everything.
    Critical = 3,
}

impl Priority {
    /// Every priority, lowest first.
    pub const ALL: [Priority; 4] = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }

    /// Its rank, 0 (low) to 3 (critical): the number the job stores keep, since a shared
    /// store's queue is ordered by it.
    pub fn rank(self) -> u8 {
        self as u8
    }

    /// The priority of `rank` ([`Self::rank`]); an unknown rank is an error, not a
    /// default.
    pub fn from_rank(rank: i64) -> Result<Self, UnknownName> {
        Self::ALL
            .into_iter()
            .find(|p| i64::from(p.rank()) == rank)
            .ok_or_else(|| UnknownName {
                what: "priority",
                value: rank.to_string(),
                expected: "0 (low), 1 (normal), 2 (high) or 3 (critical)",
            })
    }
}

/// A name (or a stored number) that names no value of an engine type: a priority or a
/// job state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {value:?} is not {expected}")]
pub struct UnknownName {
    /// What it should have named: "priority" or "job state".
    pub what: &'static str,
    /// What it was.
    pub value: String,
    /// What it could have been.
    pub expected: &'static str,
}

impl std::str::FromStr for Priority {
    type Err = UnknownName;

    /// A priority from its [`Priority::name`], in any case.
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownName {
                what: "priority",
                value: s.into(),
                expected: "low, normal, high or critical",
            })
    }
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Accepted; no partition has been admitted yet.
    Queued,
    /// At least one partition is in the pipeline.
    Running,
    /// Every partition was proved.
    Done,
    /// A partition failed; the others were cancelled.
    Failed,
    /// Cancelled by the caller.
    Cancelled,
}

impl JobState {
    /// Every state, for status listings.
    pub const ALL: [JobState; 5] = [
        JobState::Queued,
        JobState::Running,
        JobState::Done,
        JobState::Failed,
        JobState::Cancelled,
    ];

    /// Whether the job will not change any more.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }

    /// Lower-case name: also how the job stores keep it.
    pub fn name(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }
}

impl std::str::FromStr for JobState {
    type Err = UnknownName;

    /// A state from its [`JobState::name`], exactly as written.
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        Self::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| UnknownName {
                what: "job state",
                value: s.into(),
                expected: "queued, running, done, failed or cancelled",
            })
    }
}

/// Per-proof timings, as returned to the caller: the time spent in each [`Stage`] (its
/// spans summed) and the whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProofTimings {
    /// The time spent in each stage the proof went through (a stage not here took none).
    pub by_stage: BTreeMap<Stage, Duration>,
    /// Submit → proof ready.
    pub total: Duration,
}

impl ProofTimings {
    /// The stages a proof's timings report (the API's fields, the metrics' labels besides
    /// `total`), in pipeline order.
    pub const REPORTED: [Stage; 7] = [
        Stage::QueueWait,
        Stage::KeyLoad,
        Stage::Synthesize,
        Stage::Reduce,
        Stage::DeviceWait,
        Stage::Device,
        Stage::Tail,
    ];

    /// The time spent in `stage`.
    pub fn get(&self, stage: Stage) -> Duration {
        self.by_stage.get(&stage).copied().unwrap_or_default()
    }

    /// Sets the time spent in `stage`.
    pub fn set(&mut self, stage: Stage, d: Duration) {
        self.by_stage.insert(stage, d);
    }

    /// Adds `d` to the time spent in `stage`.
    pub fn add(&mut self, stage: Stage, d: Duration) {
        *self.by_stage.entry(stage).or_default() += d;
    }

    /// The stages with time spent in them, in pipeline order.
    pub fn stages(&self) -> impl Iterator<Item = (Stage, Duration)> + '_ {
        self.by_stage
            .iter()
            .map(|(s, d)| (*s, *d))
            .filter(|(_, d)| !d.is_zero())
    }
}

/// One proved partition.
#[derive(Debug, Clone, Default)]
pub struct PartitionProof {
    /// snarkjs's `proof.json`.
    pub proof_json: String,
    /// snarkjs's `public.json`.
    pub public_json: String,
    /// Where the time went.
    pub timings: ProofTimings,
}

/// A job's state and, once final, its outcome.
#[derive(Debug, Clone)]
pub struct JobSnapshot {
    /// The job id.
    pub id: JobId,
    /// The key it proves with.
    pub key_id: String,
    /// Its priority.
    pub priority: Priority,
    /// Its state.
    pub state: JobState,
    /// Partitions in the job.
    pub partitions: usize,
    /// Partitions proved so far.
    pub partitions_done: usize,
    /// Proofs in partition order, when the job is done.
    pub proofs: Vec<PartitionProof>,
    /// Why it failed, when it failed.
    pub error: Option<String>,
    /// The caller's request id ("" if none).
    pub request_id: String,
    /// When it reached its final state on this daemon (`None` while it runs, and for a
    /// fleet's job read from the shared store).
    pub finished_at: Option<Instant>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ranks_read_back_and_unknown_ones_are_errors() {
        for p in Priority::ALL {
            assert_eq!(p.name().parse(), Ok(p));
            assert_eq!(Priority::from_rank(p.rank().into()), Ok(p));
        }
        for s in JobState::ALL {
            assert_eq!(s.name().parse(), Ok(s));
        }
        assert_eq!("HIGH".parse(), Ok(Priority::High));
        let e = Priority::from_rank(7).unwrap_err();
        assert_eq!((e.what, e.value.as_str()), ("priority", "7"));
        assert!("urgent".parse::<Priority>().is_err());
        assert!("paused".parse::<JobState>().is_err());
    }
}
