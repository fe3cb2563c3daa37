//! Admission: the one place partitions enter the pipeline. It looks at the
//! highest-priority waiting partition and admits it only when its host-memory reservation
//! (plus its key's, if the key is cold) fits the budget, evicting idle keys to make room.
//! If the head does not fit, nothing behind it is admitted either, so a large job cannot
//! be starved by a stream of small ones. Jobs that could never fit were refused at submit.
//! A partition whose key's last load failed (its file unchanged since) fails here.

use crate::keys::store::KeyStore;
use crate::memory::Signal;
use crate::messages::{send, Admitted, Queued};
use crate::outcome::Outcomes;
use crate::queue::PriorityQueue;
use std::sync::Arc;
use std::time::Duration;

/// The admission stage: one thread.
pub(crate) struct Admission {
    pub input: Arc<PriorityQueue<Queued>>,
    pub output: Arc<PriorityQueue<Admitted>>,
    pub keys: Arc<KeyStore>,
    pub signal: Arc<Signal>,
    pub outcomes: Arc<Outcomes>,
}

impl Admission {
    /// Runs until its input queue is closed.
    pub fn run(&self) {
        while !self.input.is_closed() {
            let seen = self.signal.generation();
            let mut lease = None;
            let mut blocked = None;
            let head = self.input.pop_if(|q: &mut Queued| {
                if q.ticket.is_cancelled() {
                    return true;
                }
                let meta = &q.entry.meta;
                match self.keys.try_lease(&q.entry, meta.partition_bytes) {
                    Ok(None) => {
                        blocked = Some(meta.host_bytes + meta.partition_bytes);
                        false
                    }
                    Ok(Some(got)) => {
                        lease = Some(Ok(got));
                        true
                    }
                    Err(e) => {
                        lease = Some(Err(e));
                        true
                    }
                }
            });
            let Some(mut q) = head else {
                if let Some(bytes) = blocked {
                    if self.keys.evict_for(bytes) {
                        continue;
                    }
                }
                self.signal.wait_past(seen, Duration::from_millis(100));
                continue;
            };
            match lease {
                // Cancelled: dropping it frees everything.
                None => {}
                Some(Err(e)) => self.outcomes.fail(&mut q.ticket, e),
                Some(Ok((lease, host))) => {
                    let Queued {
                        data, mut ticket, ..
                    } = q;
                    let now = ticket.end_wait("queued");
                    ticket.queued_for("reduce", now);
                    ticket.job.mark_running();
                    let admitted = Admitted {
                        data,
                        lease,
                        host,
                        ticket,
                    };
                    if send(&self.output, admitted).is_err() {
                        return;
                    }
                }
            }
        }
    }
}
