//! The synthesis stage: each worker takes the highest-priority admitted partition that
//! came with circuit inputs, computes its witness with its key's generator (circom's wasm
//! on wasmtime, or its native generator), checks the witness against the key, and queues
//! it for reduce. A partition that came with a packed witness is converted here, once it
//! holds its memory reservation. A generator is compiled once per key and shared; each
//! worker keeps its own instance of it, reused from one witness to the next. Inputs the
//! circuit refuses (an unknown signal, a failed `assert`) fail their job with circom's
//! message.

use crate::curves::PartitionBuffers;
use crate::error::EngineError;
use crate::messages::{send, Admitted, Synthesized, Ticket, ToSynthesize};
use crate::outcome::Outcomes;
use crate::queue::PriorityQueue;
use crate::submit::{packed_partition, witness_partition};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use zkpipe_core::Stage;
use zkpipe_witness::{Generator, Worker};

/// Instances a worker keeps, by generator; more than this and it starts afresh.
const INSTANCES_PER_WORKER: usize = 8;

/// The synthesis stage: a few workers sharing one rayon pool (which turns the computed
/// witness into field elements).
pub(crate) struct Synthesize {
    pub input: Arc<PriorityQueue<Admitted>>,
    pub output: Arc<PriorityQueue<Synthesized>>,
    pub pool: Arc<rayon::ThreadPool>,
    pub buffers: Arc<PartitionBuffers>,
    pub outcomes: Arc<Outcomes>,
}

/// A worker's instances, keyed by the generator they were made from (held, so that its
/// address is not reused while the instance lives).
type Instances = HashMap<*const Generator, (Arc<Generator>, Worker)>;

impl Synthesize {
    /// One worker; runs until its input queue is closed.
    pub fn run(&self) {
        let mut instances = Instances::new();
        while let Some(a) = self.input.pop() {
            let Admitted {
                inputs,
                lease,
                host,
                mut ticket,
            } = a;
            if ticket.is_cancelled() {
                continue;
            }
            let start = ticket.end_wait(Stage::SynthesizeWait);
            // Each witness is one step of synthesis's loop: it waits out a bandwidth burst.
            zkpipe_core::throttle::check(0);
            let (meta, buffers) = (lease.meta(), &self.buffers);
            let data = match inputs {
                ToSynthesize::Inputs(inputs) => self
                    .witness(&mut instances, &inputs.generator, &inputs.inputs, &ticket)
                    .and_then(|wtns| {
                        drop(inputs);
                        self.pool.install(|| {
                            witness_partition(meta, ticket.index, wtns.as_view(), buffers)
                        })
                    }),
                // Checked at submit: this converts it, and fails only where that did.
                ToSynthesize::Packed(bytes) => self
                    .pool
                    .install(|| packed_partition(meta, ticket.index, &bytes, buffers)),
            };
            let end = Instant::now();
            ticket.trace.span(Stage::Synthesize, start, end);
            let data = match data {
                Ok(d) => d,
                Err(e) => {
                    self.outcomes.fail(&mut ticket, e);
                    continue;
                }
            };
            ticket.log_stage_done("synthesize", start, end);
            ticket.queued_for("reduce", end);
            let m = Synthesized {
                data,
                lease,
                host,
                ticket,
            };
            if send(&self.output, m).is_err() {
                return;
            }
        }
    }

    /// The witness of `inputs`, computed by this worker's instance of `generator`.
    fn witness(
        &self,
        instances: &mut Instances,
        generator: &Arc<Generator>,
        inputs: &zkpipe_witness::Inputs,
        ticket: &Ticket,
    ) -> Result<zkpipe_formats::wtns::Wtns, EngineError> {
        let partition = ticket.index;
        let (job, key) = (ticket.job.id, ticket.job.key_id.as_str());
        let id = Arc::as_ptr(generator);
        if !instances.contains_key(&id) {
            if instances.len() >= INSTANCES_PER_WORKER {
                instances.clear();
            }
            let worker = generator.worker().map_err(|e| EngineError::Generator {
                key: key.to_string(),
                message: e.to_string(),
            })?;
            instances.insert(id, (Arc::clone(generator), worker));
        }
        let (_, worker) = instances.get_mut(&id).expect("inserted above");
        // circom's log() lines, as snarkjs would print them, go to the daemon's log.
        let mut log = |line: &str| tracing::info!(job, partition, key, "circuit log: {line}");
        worker.calculate(inputs, &mut log).map_err(|e| {
            if e.is_bad_input() {
                return EngineError::BadInputs {
                    partition,
                    message: e.to_string(),
                };
            }
            // A trapped or crashed instance may be left in any state: start afresh.
            instances.remove(&id);
            EngineError::Generator {
                key: key.to_string(),
                message: e.to_string(),
            }
        })
    }
}
