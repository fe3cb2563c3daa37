//! What clients do with a submitted job: read its state, wait for it, cancel it. In a
//! fleet, the shared job store answers for every job, whichever daemon accepted or runs it.

use crate::engine::Engine;
use crate::error::EngineError;
use crate::job::{JobId, JobSnapshot};
use crate::job_store::{CancelOutcome, SharedQueue};
use crate::jobs::store_error;
use crate::live_job::Job;
use crate::messages::Message;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::broadcast::error::RecvError;

/// A waiter on a fleet's job looks at the store at least this often, in case the job's
/// notification was missed.
const FLEET_POLL: Duration = Duration::from_millis(500);

impl Engine {
    fn shared(&self) -> Option<&Arc<dyn SharedQueue>> {
        self.inner.shared.as_ref().map(|(q, _)| q)
    }

    /// The job's state now.
    pub fn job_status(&self, id: JobId) -> Result<JobSnapshot, EngineError> {
        if let Some(q) = self.shared() {
            return shared_job(q, id);
        }
        Ok(self.inner.jobs.get(id)?.snapshot())
    }

    /// Waits up to `timeout` for the job to finish; returns its state either way, or
    /// [`EngineError::ShuttingDown`] if the engine stopped with the job unfinished.
    pub fn wait(&self, id: JobId, timeout: Duration) -> Result<JobSnapshot, EngineError> {
        if let Some(q) = self.shared() {
            let end = Instant::now() + timeout;
            loop {
                let s = shared_job(q, id)?;
                let left = end.saturating_duration_since(Instant::now());
                if s.state.is_final() || left.is_zero() {
                    return Ok(s);
                }
                std::thread::sleep(left.min(FLEET_POLL / 10));
            }
        }
        let job = self.inner.jobs.get(id)?;
        unless_abandoned(&job, job.wait(timeout))
    }

    /// [`Engine::wait`] for async callers (needs a tokio runtime with time enabled).
    /// Dropping the future (a client that went away) leaves the job running.
    pub async fn wait_async(
        &self,
        id: JobId,
        timeout: Duration,
    ) -> Result<JobSnapshot, EngineError> {
        let s = match self.shared() {
            Some(q) => wait_shared(q, id, timeout).await,
            None => {
                let job = self.inner.jobs.get(id)?;
                let s = job.wait_async(timeout).await;
                unless_abandoned(&job, s)
            }
        };
        if let Ok(s) = &s {
            tracing::debug!(job = id, state = s.state.name(), "job awaited");
        }
        s
    }

    /// Cancels a job: queued partitions are dropped now, running ones at their next stage
    /// boundary; everything they hold is freed. A finished job is not changed.
    pub fn cancel(&self, id: JobId) -> Result<(), EngineError> {
        let i = &*self.inner;
        if let Some(q) = self.shared() {
            // The daemons running its partitions drop them on the job's event.
            match q.cancel(id).map_err(store_error)? {
                CancelOutcome::Cancelled => {}
                CancelOutcome::Finished(s) => {
                    return Err(EngineError::AlreadyFinished {
                        id,
                        state: s.name(),
                    })
                }
                CancelOutcome::Unknown => return Err(EngineError::UnknownJob(id)),
            }
            i.outcomes.metrics.jobs_cancelled.inc();
            tracing::info!(job = id, "job cancelled in the shared store");
            return Ok(());
        }
        let job = i.jobs.get(id)?;
        job.cancel().map_err(|s| EngineError::AlreadyFinished {
            id,
            state: s.name(),
        })?;
        i.outcomes.metrics.jobs_cancelled.inc();
        tracing::info!(job = id, "job cancelled");
        fn mine<M: Message>(id: JobId) -> impl Fn(&M) -> bool {
            move |m| m.ticket().job.id == id
        }
        drop(i.admission.remove_where(mine(id)));
        drop(i.reduce.remove_where(mine(id)));
        for d in i.devices.iter() {
            drop(d.queue.remove_where(mine(id)));
        }
        drop(i.tail.remove_where(mine(id)));
        i.signal.notify();
        Ok(())
    }
}

/// A fleet's job, from the shared store.
fn shared_job(q: &Arc<dyn SharedQueue>, id: JobId) -> Result<JobSnapshot, EngineError> {
    q.job(id)
        .map_err(store_error)?
        .ok_or(EngineError::UnknownJob(id))
}

/// Waits for a fleet's job to end: woken by the job's event, checking the store at least
/// every [`FLEET_POLL`].
async fn wait_shared(
    q: &Arc<dyn SharedQueue>,
    id: JobId,
    timeout: Duration,
) -> Result<JobSnapshot, EngineError> {
    let end = tokio::time::Instant::now() + timeout;
    // Subscribed before the first look, so that an end between the two is not missed.
    let mut events = q.job_events();
    loop {
        // The store blocks its caller: off the async threads, which serve every request.
        let store = Arc::clone(q);
        let s = match tokio::task::spawn_blocking(move || shared_job(&store, id)).await {
            Ok(s) => s?,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => return Err(EngineError::ShuttingDown),
        };
        if s.state.is_final() || tokio::time::Instant::now() >= end {
            return Ok(s);
        }
        let until = end.min(tokio::time::Instant::now() + FLEET_POLL);
        loop {
            match tokio::time::timeout_at(until, events.recv()).await {
                Ok(Ok(ended)) if ended != id => continue,
                Ok(Err(RecvError::Closed)) => {
                    tokio::time::sleep_until(until).await;
                    break;
                }
                _ => break,
            }
        }
    }
}

/// A waiter's answer: the snapshot, unless the engine stopped working on the job.
fn unless_abandoned(job: &Job, s: JobSnapshot) -> Result<JobSnapshot, EngineError> {
    if job.is_abandoned() && !s.state.is_final() {
        return Err(EngineError::ShuttingDown);
    }
    Ok(s)
}
