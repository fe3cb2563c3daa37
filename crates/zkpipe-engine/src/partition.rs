//! One partition's proof on curve `E`, a type per step of the three pipeline stages of
//! `zkpipe_core::stages`, each holding what the next stage uses and nothing optional:
//!
//! ```text
//!   WitnessPart ──reduce──► ReducedPart ──device──► ProvedPart ──tail──► proof JSON
//!   (witness)               (+ a, b, c, w)          (witness, w, sums)
//! ```
//!
//! A stage consumes one step and makes the next, so none can run before the one it
//! follows. Their buffers come from the curve's [`PartBuffers`] and go back to them when
//! dropped, whichever step a partition is dropped in. The engine holds them per curve in
//! a [`crate::curves::Partition`].

use crate::buffers::{BufferPool, Buffers};
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

/// The pooled buffers a partition of curve `E` uses: field elements (its witness; a, b,
/// c) and MSM scalars (w; h).
pub(crate) struct PartBuffers<E: Curve> {
    fields: Buffers<E::ScalarField>,
    scalars: Buffers<ScalarInt<E>>,
}

impl<E: Curve> PartBuffers<E> {
    /// Lists of `pool` for partitions of `E`.
    pub fn new(pool: &Arc<BufferPool>) -> Self {
        Self {
            fields: pool.buffers(),
            scalars: pool.buffers(),
        }
    }
}

/// A buffer of `T` from a list, given back to it when dropped.
struct Pooled<T: Send + 'static> {
    v: Vec<T>,
    list: Buffers<T>,
}

impl<T: Send + 'static> Pooled<T> {
    /// `len` items of `list`.
    fn take(list: &Buffers<T>, len: usize) -> Self
    where
        T: Default + Clone,
    {
        Self {
            v: list.take(len),
            list: list.clone(),
        }
    }

    /// No buffer (nothing to give back).
    fn none(list: &Buffers<T>) -> Self {
        Self {
            v: Vec::new(),
            list: list.clone(),
        }
    }
}

impl<T: Send + 'static> Drop for Pooled<T> {
    fn drop(&mut self) {
        self.list.give(std::mem::take(&mut self.v));
    }
}

/// a, b, c from a list, given back to it when dropped (a, then b, then c).
struct PooledEvals<F: Send + 'static> {
    evals: QapEvals<F>,
    list: Buffers<F>,
}

impl<F: Send + 'static> Drop for PooledEvals<F> {
    fn drop(&mut self) {
        let QapEvals { a, b, c } = &mut self.evals;
        for v in [a, b, c] {
            self.list.give(std::mem::take(v));
        }
    }
}

/// A partition's witness, freed on the pool's deallocator when dropped (a witness is
/// not recycled: its length is the circuit's, not a domain's).
struct HeldWitness<F: Send + 'static> {
    witness: Witness<F>,
    list: Buffers<F>,
}

impl<F: Send + 'static> Drop for HeldWitness<F> {
    fn drop(&mut self) {
        self.list
            .free_later(std::mem::take(&mut self.witness.values));
    }
}

/// A partition with its witness (submitted, or computed by synthesis): what reduce uses.
pub(crate) struct WitnessPart<E: Curve> {
    witness: HeldWitness<E::ScalarField>,
    buffers: Arc<PartBuffers<E>>,
}

/// A reduced partition: what the device pass uses. Fields drop in order: the domain's
/// buffers go back before the witness is freed.
pub(crate) struct ReducedPart<E: Curve> {
    /// a, b, c (empty where the device reduces).
    evals: PooledEvals<E::ScalarField>,
    /// The witness as MSM scalars (empty where the device reads the field elements).
    w: Pooled<ScalarInt<E>>,
    witness: HeldWitness<E::ScalarField>,
}

/// A partition through its device pass: what the tail uses.
pub(crate) struct ProvedPart<E: Curve> {
    w: Pooled<ScalarInt<E>>,
    witness: HeldWitness<E::ScalarField>,
    sums: DeviceSums<E>,
}

impl<E: Curve> WitnessPart<E> {
    /// A partition of `witness`, its buffers from `buffers`.
    pub fn new(witness: Witness<E::ScalarField>, buffers: Arc<PartBuffers<E>>) -> Self {
        Self {
            witness: HeldWitness {
                witness,
                list: buffers.fields.clone(),
            },
            buffers,
        }
    }

    /// The reduce stage on the current rayon pool, into pooled buffers (a, b, c only
    /// where the CPU computes them; w only if `scalars`).
    pub fn reduce(
        self,
        key: &CompiledKey<E>,
        on: ReduceOn,
        scalars: bool,
    ) -> Result<ReducedPart<E>, CoreError> {
        let b = &*self.buffers;
        let n = match on {
            ReduceOn::Cpu(_) => key.domain_size(),
            ReduceOn::Device => 0,
        };
        let take = |n: usize| match n {
            0 => Vec::new(),
            n => b.fields.take(n),
        };
        let mut evals = PooledEvals {
            evals: QapEvals {
                a: take(n),
                b: take(n),
                c: take(n),
            },
            list: b.fields.clone(),
        };
        let mut w = if scalars {
            Pooled::take(&b.scalars, key.n_vars)
        } else {
            Pooled::none(&b.scalars)
        };
        reduce_stage(
            key,
            &self.witness.witness,
            &mut evals.evals,
            &mut w.v,
            on,
            scalars,
            &mut Timings::default(),
        )?;
        Ok(ReducedPart {
            evals,
            w,
            witness: self.witness,
        })
    }
}

impl<E: Curve> ReducedPart<E> {
    /// The device stage of several partitions of `bound`'s key in one pass (called inside
    /// the device's gate), results in order. The domain-sized buffers go back to the pool
    /// as soon as the pass is done with them; a partition that fails (lengths that do not
    /// fit the key) fails alone.
    pub fn device(
        mut parts: Vec<Self>,
        bound: &dyn BoundKey<E>,
    ) -> Vec<Result<ProvedPart<E>, CoreError>> {
        let n = bound.key().domain_size();
        let caps = bound.caps();
        // h, as MSM scalars, from the list w comes from.
        let mut hs: Vec<Pooled<ScalarInt<E>>> =
            parts.iter().map(|p| Pooled::take(&p.w.list, n)).collect();
        // The backends record their steps here; the engine's waterfall is its own.
        let mut steps: Vec<Timings> = parts.iter().map(|_| Timings::default()).collect();
        let mut inputs: Vec<PassInput<'_, E>> = parts
            .iter_mut()
            .zip(&mut hs)
            .zip(&mut steps)
            .map(|((p, h), t)| PassInput {
                evals: &mut p.evals.evals,
                w: PassWitness::for_caps(caps, &p.witness.witness.values, &p.w.v),
                h: &mut h.v,
                t,
            })
            .collect();
        let sums = device_stage(bound, &mut inputs);
        drop(inputs);
        parts
            .into_iter()
            .zip(hs)
            .zip(sums)
            .map(|((p, h), r)| {
                let ReducedPart { evals, w, witness } = p;
                drop(evals);
                drop(h);
                Ok(ProvedPart {
                    w,
                    witness,
                    sums: r?,
                })
            })
            .collect()
    }
}

impl<E: Curve> ProvedPart<E> {
    /// The tail stage of `parts` (of one key) on the current rayon pool: each proof
    /// assembled on a task of its own, then their self-checks together (one final
    /// exponentiation for the batch; see `zkpipe_core::stages::self_check_batch`). Each
    /// partition's (proof.json, public.json), in order.
    pub fn tail_batch(
        parts: &[&Self],
        key: &CompiledKey<E>,
        self_check: bool,
    ) -> Vec<Result<(String, String), CoreError>> {
        let proofs: Vec<Result<Proof<E>, CoreError>> =
            parts.par_iter().map(|p| p.assemble(key)).collect();
        let checks: Vec<Result<(), CoreError>> = if self_check {
            let items: Vec<(&[E::ScalarField], &Proof<E>)> = parts
                .iter()
                .zip(&proofs)
                .filter_map(|(p, r)| Some((p.public(key), r.as_ref().ok()?)))
                .collect();
            let mut outcomes = self_check_batch(key, &items, &mut rand::rngs::OsRng).into_iter();
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

    /// Its public signals.
    fn public(&self, key: &CompiledKey<E>) -> &[E::ScalarField] {
        self.witness.witness.public(key.n_public)
    }

    /// This partition's proof from its sums, with fresh randomness.
    fn assemble(&self, key: &CompiledKey<E>) -> Result<Proof<E>, CoreError> {
        assemble_stage(
            key,
            &self.witness.witness,
            &self.w.v,
            &self.sums,
            &mut rand::rngs::OsRng,
            &mut Timings::default(),
        )
    }

    /// snarkjs's (proof.json, public.json) of `proof`.
    fn json(&self, key: &CompiledKey<E>, proof: &Proof<E>) -> (String, String) {
        let public: Vec<String> = self.public(key).iter().map(field_to_decimal).collect();
        let s = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        (
            s(to_json_bytes(&proof.to_json())),
            s(to_json_bytes(&public)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkpipe_core::Bn254;

    /// A reduced partition of `n` rows and a witness of `vars`, from `buffers`.
    fn reduced(buffers: &PartBuffers<Bn254>, n: usize, vars: usize) -> ReducedPart<Bn254> {
        let f = &buffers.fields;
        ReducedPart {
            evals: PooledEvals {
                evals: QapEvals {
                    a: f.take(n),
                    b: f.take(n),
                    c: f.take(n),
                },
                list: f.clone(),
            },
            w: Pooled::take(&buffers.scalars, vars),
            witness: HeldWitness {
                witness: Witness {
                    values: vec![Default::default(); vars],
                },
                list: f.clone(),
            },
        }
    }

    /// Whichever step a partition is dropped in, its pooled buffers go back for reuse and
    /// its witness to the deallocator.
    #[test]
    fn a_partition_dropped_at_any_step_gives_its_buffers_back() {
        let pool = Arc::new(BufferPool::new(1 << 30, 4));
        let buffers = PartBuffers::<Bn254>::new(&pool);
        drop(reduced(&buffers, 64, 10));
        let s = pool.stats();
        assert_eq!((s.allocated, s.freed), (4, 1), "{s:?}");
        // a, b, c and w come back from the pool; the witness is freed.
        let p = reduced(&buffers, 64, 10);
        assert_eq!(pool.stats().recycled, 4);
        let ReducedPart { evals, w, witness } = p;
        drop(evals);
        drop(ProvedPart::<Bn254> {
            w,
            witness,
            sums: DeviceSums {
                a: Default::default(),
                b1: Default::default(),
                b2: None,
                c: Default::default(),
                h: Default::default(),
            },
        });
        let s = pool.stats();
        assert_eq!(s.freed, 2, "{s:?}");
        drop(reduced(&buffers, 64, 10));
        let s = pool.stats();
        assert_eq!((s.recycled, s.allocated, s.freed), (8, 4, 3), "{s:?}");
        pool.shutdown();
    }
}
