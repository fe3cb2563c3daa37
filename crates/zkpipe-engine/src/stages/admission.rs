//! Admission: the one place partitions enter the pipeline. It looks at the
//! highest-priority waiting partition and admits it only when its host-memory reservation
//! (plus its key's, if the key is cold) fits the budget, evicting idle keys to make room.
//! If the head does not fit, nothing behind it is admitted either, so a large job cannot
//! be starved by a stream of small ones. Jobs that could never fit were refused at submit.
//! A partition whose key's last load failed (its file unchanged since) fails here.
//! Admitted partitions with circuit inputs or a packed witness go on to the synthesis
//! stage, with memory reserved for the witness it will compute or convert; those with a
//! witness go straight to reduce.

use crate::keys::store::KeyStore;
use crate::memory::Signal;
use crate::messages::{send, Admitted, PartitionInput, Queued, Synthesized, ToSynthesize};
use crate::outcome::Outcomes;
use crate::queue::PriorityQueue;
use std::sync::Arc;
use std::time::Duration;
use zkpipe_core::Stage;

/// The admission stage: one thread.
pub(crate) struct Admission {
    pub input: Arc<PriorityQueue<Queued>>,
    /// Partitions with circuit inputs.
    pub synthesize: Arc<PriorityQueue<Admitted>>,
    /// Partitions with a witness.
    pub reduce: Arc<PriorityQueue<Synthesized>>,
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
                let bytes = match q.input {
                    PartitionInput::Synthesize(ToSynthesize::Inputs(_)) => {
                        meta.partition_bytes + meta.synthesis_bytes
                    }
                    PartitionInput::Witness(_) | PartitionInput::Synthesize(_) => {
                        meta.partition_bytes
                    }
                };
                match self.keys.try_lease(&q.entry, bytes) {
                    Ok(None) => {
                        blocked = Some(meta.host_bytes + bytes);
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
                        input, mut ticket, ..
                    } = q;
                    let now = ticket.end_wait(Stage::QueueWait);
                    ticket.job.mark_running();
                    let sent = match input {
                        PartitionInput::Witness(data) => {
                            ticket.queued_for("reduce", now);
                            let m = Synthesized {
                                data,
                                lease,
                                host,
                                ticket,
                            };
                            send(&self.reduce, m).is_ok()
                        }
                        PartitionInput::Synthesize(inputs) => {
                            ticket.queued_for("synthesize", now);
                            let m = Admitted {
                                inputs,
                                lease,
                                host,
                                ticket,
                            };
                            send(&self.synthesize, m).is_ok()
                        }
                    };
                    if !sent {
                        return;
                    }
                }
            }
        }
    }
}
