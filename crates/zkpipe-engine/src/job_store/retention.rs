//! How long, how many and how much of finished jobs are remembered ([`Retention`]), and the
//! ledger that decides which to forget ([`Ledger`]): finished jobs in the order they
//! ended, with their size, so that the oldest go first whichever bound is passed. The
//! engine's job table and the stores that keep their own record (memory, SQLite) each hold
//! one; forgetting costs the jobs forgotten, not the jobs kept. Only finished jobs enter a
//! ledger, so an unfinished job is never forgotten.

use crate::job::{JobId, PartitionProof};
use std::collections::BTreeMap;
use std::time::Duration;

/// The bounds on finished jobs: whichever is passed first, the oldest finished jobs are
/// forgotten until every bound holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// How long after its end a job is remembered (`pipeline.job_retention`).
    pub time: Duration,
    /// At most this many finished jobs (`pipeline.retain_jobs`).
    pub jobs: usize,
    /// At most this many bytes of finished jobs' results, as [`result_bytes`] counts them
    /// (`pipeline.retain_bytes`).
    pub bytes: u64,
}

impl Retention {
    /// Only a time bound (the count and bytes unbounded).
    pub fn time(time: Duration) -> Self {
        Self {
            time,
            jobs: usize::MAX,
            bytes: u64::MAX,
        }
    }
}

/// The size a finished job counts for against [`Retention::bytes`]: its proofs' JSON
/// (proof and public inputs) and its error message, what it holds until forgotten.
pub fn result_bytes<'a>(
    proofs: impl IntoIterator<Item = &'a PartitionProof>,
    error: Option<&str>,
) -> u64 {
    let proofs: usize = proofs
        .into_iter()
        .map(|p| p.proof_json.len() + p.public_json.len())
        .sum();
    (proofs + error.map_or(0, str::len)) as u64
}

/// Finished jobs by the time they ended (`T`: an `Instant`, or milliseconds since the
/// epoch for a database), each with its size (see the module doc).
#[derive(Debug)]
pub struct Ledger<T> {
    ended: BTreeMap<(T, JobId), u64>,
    bytes: u64,
}

impl<T> Default for Ledger<T> {
    fn default() -> Self {
        Self {
            ended: BTreeMap::new(),
            bytes: 0,
        }
    }
}

impl<T: Ord + Copy> Ledger<T> {
    /// Enters job `id`, which ended at `at` and holds `bytes`.
    pub fn ended(&mut self, id: JobId, at: T, bytes: u64) {
        if let Some(old) = self.ended.insert((at, id), bytes) {
            self.bytes -= old;
        }
        self.bytes += bytes;
    }

    /// Finished jobs entered and not forgotten.
    pub fn len(&self) -> usize {
        self.ended.len()
    }

    /// Whether none is entered.
    pub fn is_empty(&self) -> bool {
        self.ended.is_empty()
    }

    /// Their bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Takes out the oldest jobs until those left ended after `too_old` (when given) and
    /// are at most `r.jobs` holding at most `r.bytes`; returns them, oldest first.
    pub fn forget(&mut self, too_old: Option<T>, r: &Retention) -> Vec<(T, JobId)> {
        let mut out = Vec::new();
        while let Some((&(at, _), _)) = self.ended.first_key_value() {
            let over = self.ended.len() > r.jobs
                || self.bytes > r.bytes
                || too_old.is_some_and(|limit| at <= limit);
            if !over {
                break;
            }
            let Some((key, bytes)) = self.ended.pop_first() else {
                break;
            };
            self.bytes -= bytes;
            out.push(key);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(jobs: usize, bytes: u64) -> Retention {
        Retention {
            time: Duration::from_secs(600),
            jobs,
            bytes,
        }
    }

    /// Each bound takes out the oldest jobs (by end, not by id) and only as many as it
    /// must.
    #[test]
    fn each_bound_forgets_the_oldest_first_and_no_more() {
        let mut l = Ledger::default();
        // Job 3 ended first, then 1, 2, 4.
        for (id, at, bytes) in [(3, 10, 100), (1, 20, 100), (2, 30, 300), (4, 40, 100)] {
            l.ended(id, at, bytes);
        }
        assert_eq!((l.len(), l.bytes()), (4, 600));
        assert!(
            l.forget(Some(9), &bounds(4, 600)).is_empty(),
            "within every bound"
        );
        assert_eq!(l.forget(None, &bounds(3, u64::MAX)), [(10, 3)]);
        assert_eq!(
            l.forget(None, &bounds(usize::MAX, 200)),
            [(20, 1), (30, 2)],
            "500 bytes left: 1 (100) is not enough, 2 (300) is"
        );
        assert_eq!((l.len(), l.bytes()), (1, 100));
        assert_eq!(l.forget(Some(40), &bounds(9, 999)), [(40, 4)], "too old");
        assert!(l.is_empty() && l.bytes() == 0);
    }

    #[test]
    fn a_result_counts_its_proofs_and_error() {
        let p = PartitionProof {
            proof_json: "{}".into(),
            public_json: "[1]".into(),
            timings: Default::default(),
        };
        assert_eq!(result_bytes([&p, &p], None), 10);
        assert_eq!(result_bytes([], Some("bad")), 3);
    }
}
