//! One partition's proof on curve `E`: its witness, its pooled buffers and its sums as
//! they move through the three pipeline stages of `zkpipe_core::stages`. The engine holds
//! it erased (`Box<dyn Any + Send>`, see [`crate::curves`]); dropping it gives every buffer
//! back to the pool, whichever stage it is dropped in.

use crate::buffers::BufferPool;
use rayon::prelude::*;
use std::sync::Arc;
use zkpipe_core::curve::field_to_decimal;
use zkpipe_core::device::{BoundKey, PassInput, PassWitness};
use zkpipe_core::msm::{DeviceSums, ScalarInt};
use zkpipe_core::reduce::QapEvals;
use zkpipe_core::stages::{assemble_stage, device_stage, reduce_stage, self_check_batch, ReduceOn};
use zkpipe_core::Proof;
use zkpipe_core::{CompiledKey, Curve, Error as CoreError, Timings, Witness};
use zkpipe_formats::json::to_json_bytes;

/// The buffers and intermediate results of one partition of curve `E`.
pub(crate) struct Part<E: Curve> {
    witness: Witness<E::ScalarField>,
    /// a, b, c after the reduce stage (empty where the device reduces, and once the
    /// device stage has given them back).
    evals: QapEvals<E::ScalarField>,
    w: Vec<ScalarInt<E>>,
    /// Set by the device stage.
    sums: Option<DeviceSums<E>>,
    pool: Arc<BufferPool>,
}

impl<E: Curve> Part<E> {
    pub fn new(witness: Witness<E::ScalarField>, pool: Arc<BufferPool>) -> Self {
        Self {
            witness,
            evals: QapEvals::zeroed(0),
            w: Vec::new(),
            sums: None,
            pool,
        }
    }

    /// The reduce stage on the current rayon pool, into pooled buffers (a, b, c only
    /// where the CPU computes them; w only if `scalars`).
    pub fn reduce(
        &mut self,
        key: &CompiledKey<E>,
        on: ReduceOn,
        scalars: bool,
    ) -> Result<(), CoreError> {
        if let ReduceOn::Cpu(_) = on {
            let n = key.domain_size();
            self.evals = QapEvals {
                a: self.pool.take(n),
                b: self.pool.take(n),
                c: self.pool.take(n),
            };
        }
        if scalars {
            self.w = self.pool.take::<ScalarInt<E>>(key.n_vars);
        }
        reduce_stage(
            key,
            &self.witness,
            &mut self.evals,
            &mut self.w,
            on,
            scalars,
            &mut Timings::default(),
        )
    }

    /// The device stage of several partitions of `bound`'s key in one pass (called inside
    /// the device's gate), results in order. The domain-sized buffers go back to the pool
    /// as soon as the pass is done with them; a partition that fails (lengths that do not
    /// fit the key) fails alone.
    pub fn device(
        parts: &mut [&mut Part<E>],
        bound: &dyn BoundKey<E>,
    ) -> Vec<Result<(), CoreError>> {
        let n = bound.key().domain_size();
        let caps = bound.caps();
        let mut hs: Vec<Vec<ScalarInt<E>>> = parts.iter().map(|p| p.pool.take(n)).collect();
        // The pass records its steps' spans; the engine times the stage as a whole.
        let mut ts: Vec<Timings> = parts.iter().map(|_| Timings::default()).collect();
        let mut inputs: Vec<PassInput<'_, E>> = parts
            .iter_mut()
            .zip(&mut hs)
            .zip(&mut ts)
            .map(|((p, h), t)| PassInput {
                evals: &mut p.evals,
                w: PassWitness::for_caps(caps, &p.witness.values, &p.w),
                h,
                t,
            })
            .collect();
        let sums = device_stage(bound, &mut inputs);
        drop(inputs);
        parts
            .iter_mut()
            .zip(hs)
            .zip(sums)
            .map(|((p, h), r)| {
                give_evals(
                    &p.pool,
                    std::mem::replace(&mut p.evals, QapEvals::zeroed(0)),
                );
                p.pool.give(h);
                p.sums = Some(r?);
                Ok(())
            })
            .collect()
    }

    /// The tail stage of `parts` (of one key) on the current rayon pool: each proof
    /// assembled on a task of its own, then their self-checks together (one final
    /// exponentiation for the batch; see `zkpipe_core::stages::self_check_batch`). Each
    /// partition's (proof.json, public.json), in order.
    pub fn tail_batch(
        parts: &mut [&mut Self],
        key: &CompiledKey<E>,
        self_check: bool,
    ) -> Vec<Result<(String, String), CoreError>> {
        let proofs: Vec<Result<Proof<E>, CoreError>> =
            parts.par_iter_mut().map(|p| p.assemble(key)).collect();
        let checks: Vec<Result<(), CoreError>> = if self_check {
            let items: Vec<(&[E::ScalarField], &Proof<E>)> = parts
                .iter()
                .zip(&proofs)
                .filter_map(|(p, r)| Some((p.witness.public(key.n_public), r.as_ref().ok()?)))
                .collect();
            let outcomes = self_check_batch(key, &items, &mut rand::rngs::OsRng);
            let mut outcomes = outcomes.into_iter();
            proofs
                .iter()
                .map(|r| match r {
                    Ok(_) => outcomes.next().unwrap_or(Err(CoreError::NotSatisfied)),
                    Err(_) => Ok(()),
                })
                .collect()
        } else {
            proofs.iter().map(|_| Ok(())).collect()
        };
        parts
            .iter()
            .zip(proofs)
            .zip(checks)
            .map(|((p, proof), check)| {
                let proof = proof?;
                check?;
                Ok(p.json(key, &proof))
            })
            .collect()
    }

    /// This partition's proof from its sums, with fresh randomness.
    fn assemble(&mut self, key: &CompiledKey<E>) -> Result<Proof<E>, CoreError> {
        let sums = self.sums.ok_or_else(|| CoreError::Backend {
            backend: "engine",
            message: "tail stage before the device stage".into(),
        })?;
        assemble_stage(
            key,
            &self.witness,
            &self.w,
            &sums,
            &mut rand::rngs::OsRng,
            &mut Timings::default(),
        )
    }

    /// snarkjs's (proof.json, public.json) of `proof`.
    fn json(&self, key: &CompiledKey<E>, proof: &Proof<E>) -> (String, String) {
        let public: Vec<String> = self
            .witness
            .public(key.n_public)
            .iter()
            .map(field_to_decimal)
            .collect();
        let s = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        (
            s(to_json_bytes(&proof.to_json())),
            s(to_json_bytes(&public)),
        )
    }
}

fn give_evals<F: Send + 'static>(pool: &BufferPool, e: QapEvals<F>) {
    pool.give(e.a);
    pool.give(e.b);
    pool.give(e.c);
}

impl<E: Curve> Drop for Part<E> {
    fn drop(&mut self) {
        give_evals(
            &self.pool,
            std::mem::replace(&mut self.evals, QapEvals::zeroed(0)),
        );
        self.pool.give(std::mem::take(&mut self.w));
        self.pool
            .free_later(std::mem::take(&mut self.witness.values));
    }
}
