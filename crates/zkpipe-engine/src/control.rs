//! What clients do with a submitted job: read its state, wait for it, cancel it.

use crate::engine::Engine;
use crate::error::EngineError;
use crate::job::{JobId, JobSnapshot};
use crate::live_job::Job;
use crate::messages::Message;
use std::time::Duration;

impl Engine {
    /// The job's state now.
    pub fn job_status(&self, id: JobId) -> Result<JobSnapshot, EngineError> {
        Ok(self.inner.jobs.get(id)?.snapshot())
    }

    /// Waits up to `timeout` for the job to finish; returns its state either way, or
    /// [`EngineError::ShuttingDown`] if the engine stopped with the job unfinished.
    pub fn wait(&self, id: JobId, timeout: Duration) -> Result<JobSnapshot, EngineError> {
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
        let job = self.inner.jobs.get(id)?;
        let s = job.wait_async(timeout).await;
        unless_abandoned(&job, s)
    }

    /// Cancels a job: queued partitions are dropped now, running ones at their next stage
    /// boundary; everything they hold is freed. A finished job is not changed.
    pub fn cancel(&self, id: JobId) -> Result<(), EngineError> {
        let i = &*self.inner;
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

/// A waiter's answer: the snapshot, unless the engine stopped working on the job.
fn unless_abandoned(job: &Job, s: JobSnapshot) -> Result<JobSnapshot, EngineError> {
    if job.is_abandoned() && !s.state.is_final() {
        return Err(EngineError::ShuttingDown);
    }
    Ok(s)
}
