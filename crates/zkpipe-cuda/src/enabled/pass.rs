//! A [`CudaBound`]'s device pass: one proof ([`CudaBound::single_pass`]: its five MSMs at
//! once, each from its own host thread) or a batch ([`CudaBound::batch_pass`]: each
//! proof's reduce and quotient on its own stream, then one batched MSM per point set for
//! all of them). Either way w crosses once and h never leaves the GPU.

use crate::enabled::bits::{resident_sum, WitnessBits};
use crate::enabled::bound::{CudaBound, KeyPoints};
use crate::enabled::curve::GpuCurve;
use crate::enabled::msm::{BatchPlan, ResidentG1};
use crate::shape::{constant_work, takes_bits};
use crate::CudaError;
use ark_ec::pairing::Pairing;
use std::time::Instant;
use zkpipe_core::msm::DeviceSums;
use zkpipe_core::timings::{Span, Stage};
use zkpipe_core::{Curve, PassInput};

impl<E: Curve + GpuCurve> CudaBound<E> {
    /// Several proofs (or a lone one of a small key) in one pass: each proof's quotient
    /// (h left on the GPU) and witness upload, then one plan of bucket digits for all the
    /// w's and one for all the h's, and the five batched MSMs at once — one kernel
    /// sequence per point set for the batch.
    pub(super) fn batch_pass(
        &self,
        inputs: &mut [PassInput<'_, E>],
    ) -> Result<Vec<DeviceSums<E>>, CudaError> {
        for p in inputs.iter() {
            self.check_pass(p.evals, p.w)?;
        }
        // One plan reads every proof's w: they come in one form (the key's caps choose it).
        let mont_w = inputs.first().is_some_and(|p| p.w.is_montgomery());
        if inputs.iter().any(|p| p.w.is_montgomery() != mont_w) {
            return Err(CudaError::Length(
                "a batch mixes witnesses in Montgomery and standard form".into(),
            ));
        }
        let mut lent = Vec::with_capacity(inputs.len());
        for _ in 0..inputs.len() {
            lent.push(self.pool.lend()?);
        }
        // Each proof's reduce and quotient as a task of its own on the device's pool, on
        // its quotient's own stream: at small domains one proof's kernels fill little of
        // the GPU. The pool's threads, not a thread spawned per proof: with several GPUs,
        // hundreds of thread starts and exits a second (each exit unmaps a stack, which
        // interrupts every core running the process) slowed every pass.
        let (matrices, mask) = (self.matrices.as_ref(), self.mask.as_ref());
        let pass_start = Instant::now();
        let streamed_matrices = match &self.points {
            KeyPoints::Streamed(s) => s.matrices.as_ref().map(|m| (s, m)),
            KeyPoints::Resident(_) => None,
        };
        match streamed_matrices {
            // a, b, c from matrices that cross in chunks: one walk over them for the batch.
            Some((s, m)) if inputs.iter().all(|p| p.evals.a.is_empty()) => {
                self.streamed_quotients(s, m, inputs, &mut lent)?
            }
            _ => {
                use rayon::prelude::*;
                inputs
                    .par_iter_mut()
                    .zip(lent.par_iter_mut())
                    .with_max_len(1)
                    .try_for_each(|(p, bufs)| {
                        bufs.quotient_and_w(p.evals, p.w, matrices, mask, p.t)
                    })?;
            }
        }
        let start = Instant::now();
        // Device addresses as integers, to hand to the planning threads.
        let ws: Vec<usize> = lent.iter().map(|b| b.w.device_ptr(0) as usize).collect();
        let hs: Vec<usize> = lent
            .iter()
            .map(|b| b.quotient.h_on_device() as usize)
            .collect();
        let room = lent.first().map_or((0, 0), |b| b.quotient.idle_room());
        // A streamed key's w sets take the bit path where every proof's w splits (its
        // walk's sums are sppark's otherwise; an in-core batch's plans skip 0 digits).
        let n_vars = self.key.n_vars;
        let streamed = matches!(self.points, KeyPoints::Streamed(_));
        let bits = match streamed && takes_bits(&self.tuning) {
            true => {
                let split = lent.iter_mut().zip(&ws).map(|(b, &w)| {
                    // SAFETY: `w` holds the proof's n_vars scalars, which nothing writes
                    // until the pass ends; the bitmap is the proof's own.
                    unsafe { WitnessBits::split(w, n_vars, mont_w, &mut b.ones, self.gpu) }
                });
                split.collect::<Result<Option<Vec<_>>, _>>()?
            }
            false => None,
        };
        let sums = self.batch_msms(&ws, &hs, bits.as_deref(), mont_w, room);
        drop(bits);
        drop(lent);
        let mut sums = sums?;
        let end = Instant::now();
        if self.cuda.pass_trace {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            eprintln!(
                "pass trace: gpu={} k={} quotients={:.3} msms={:.3} ms",
                self.gpu,
                inputs.len(),
                ms(start - pass_start),
                ms(end - start)
            );
        }
        for (p, s) in inputs.iter_mut().zip(sums.iter_mut()) {
            // The batch's MSMs are shared; each proof's waterfall shows them whole.
            p.t.spans.push(Span {
                stage: Stage::MsmBatch,
                start,
                end,
            });
            self.unmask(s);
        }
        Ok(sums)
    }

    /// The five batched MSMs of k proofs: `ws` and `hs` are the device addresses of each
    /// proof's w (nVars values, Montgomery form with `mont_w`) and h (domain-size values,
    /// Montgomery), which must stay as they are until this returns. One plan of bucket
    /// digits for all the w's and one for all the h's, one kernel sequence per point set;
    /// for a streamed key, one walk over each set's chunks instead, which may put its
    /// chunks in `room` (the first proof's idle quotient vectors, `GpuQuotient::idle_room`),
    /// and whose w sets take the bit path where `bits` gives each proof's split.
    pub(super) fn batch_msms(
        &self,
        ws: &[usize],
        hs: &[usize],
        bits: Option<&[WitnessBits<'_, E>]>,
        mont_w: bool,
        room: (usize, usize),
    ) -> Result<Vec<DeviceSums<E>>, CudaError> {
        let sets = match &self.points {
            KeyPoints::Resident(sets) => sets,
            KeyPoints::Streamed(s) => return self.streamed_msms(s, ws, hs, bits, mont_w, room),
        };
        let g2 = self.caps.g2;
        let n = self.pool.domain_size();
        let (nw, gpu) = (sets.a.len(), self.gpu);
        // Masked scalars are as good as random: by default the plan keeps its shortcuts.
        let constant = constant_work(&self.tuning).is_some_and(|c| c.full_width);
        // w's plan serves A, B₁, B₂ and C, whose tables (if any) share one width.
        let plan = |v: &[usize], len: usize, mont: bool, table: u32| {
            let v: Vec<*const [u64; 4]> = v.iter().map(|&p| p as *const [u64; 4]).collect();
            // SAFETY: each address is this GPU's memory holding `len` scalars (a lent
            // witness buffer, quotient h or mask), not written until this returns.
            unsafe { BatchPlan::<E>::new(&v, len, mont, constant, table, gpu, &self.cuda) }
        };
        let start = Instant::now();
        let pw = plan(ws, nw, mont_w, sets.a.table_wbits())?;
        let planned = start.elapsed();
        let (a, b1, b2, c, h) = std::thread::scope(|s| {
            // h's plan is made while w's MSMs run.
            let h = s.spawn(|| {
                ended(
                    start,
                    plan(hs, n, true, sets.h.table_wbits()).and_then(|p| sets.h.batch_msm(&p)),
                )
            });
            let b2 = g2.then(|| s.spawn(|| ended(start, sets.b2.batch_msm(&pw))));
            let b1 = s.spawn(|| ended(start, sets.b1.batch_msm(&pw)));
            let c = s.spawn(|| ended(start, sets.c.batch_msm(&pw)));
            let a = ended(start, sets.a.batch_msm(&pw));
            (a, join(b1), b2.map(join), join(c), join(h))
        });
        if self.cuda.pass_trace {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            eprintln!(
                "pass trace: k={} plan_w={:.3} a={:.3} b1={:.3} b2={} c={:.3} h={:.3} ms (ends from the plan's start)",
                ws.len(),
                ms(planned),
                ms(a.1),
                ms(b1.1),
                b2.as_ref().map_or("-".into(), |b| format!("{:.3}", ms(b.1))),
                ms(c.1),
                ms(h.1)
            );
        }
        let (a, b1, b2, c, h) = (a.0, b1.0, b2.map(|b| b.0), c.0, h.0);
        let (a, b1, c, h) = (a?, b1?, c?, h?);
        let b2 = b2.transpose()?;
        let k = ws.len();
        if [a.len(), b1.len(), c.len(), h.len()]
            .iter()
            .any(|&l| l != k)
            || b2.as_ref().is_some_and(|v| v.len() != k)
        {
            return Err(CudaError::Length(
                "a batched MSM returned the wrong count".into(),
            ));
        }
        Ok(per_proof(k, &a, &b1, b2.as_deref(), &c, &h))
    }

    /// Takes the key's mask (if any) off a proof's sums.
    fn unmask(&self, sums: &mut DeviceSums<E>) {
        if let Some(m) = &self.mask {
            sums.take_off(m.sums());
        }
    }

    /// One proof: the quotient with h left on the GPU, then the five MSMs (B₂ where
    /// [`zkpipe_core::Caps::g2`]): w crosses once.
    pub(super) fn single_pass(&self, p: &mut PassInput<'_, E>) -> Result<DeviceSums<E>, CudaError> {
        let KeyPoints::Resident(sets) = &self.points else {
            return Err(CudaError::Length(
                "a streamed key's proof on the single-proof path".into(),
            ));
        };
        let (evals, w, t) = (&*p.evals, p.w, &mut *p.t);
        self.check_pass(evals, w)?;
        let g2 = self.caps.g2;
        let n = self.pool.domain_size();
        let n_public = self.key.n_public;
        let mut bufs = self.pool.lend()?;
        // w crosses once, in the form the pass got it.
        bufs.quotient_and_w(evals, w, self.matrices.as_ref(), self.mask.as_ref(), t)?;
        let mont_w = w.is_montgomery();
        let nw = w.len();
        let bufs = &mut *bufs;
        // Device addresses as integers, to hand to the MSM threads.
        let wd = bufs.w.device_ptr(0) as usize;
        let bits = match takes_bits(&self.tuning) {
            // SAFETY: `wd` holds the witness's nw scalars, which nothing writes until the
            // pass ends; the bitmap is this proof's own.
            true => unsafe { WitnessBits::split(wd, nw, mont_w, &mut bufs.ones, self.gpu)? },
            false => None,
        };
        let (quotient, w_dev) = (&bufs.quotient, &bufs.w);
        let private = w_dev.device_ptr((n_public + 1) * 32) as usize;
        let hd = quotient.h_on_device() as usize;
        let n_private = nw - n_public - 1;
        let host = &self.key.points;
        let msm = |set: &ResidentG1<E>, at: usize, len: usize, mont: bool, stage| {
            let start = Instant::now();
            // A w set by the bit path where w splits (H's scalars are h's: full-size).
            let r = match (&bits, stage) {
                (Some(bits), Stage::MsmA) => resident_sum(set, &host.a, bits, 0),
                (Some(bits), Stage::MsmB1) => resident_sum(set, &host.b1, bits, 0),
                (Some(bits), Stage::MsmC) => resident_sum(set, &host.c, bits, n_public + 1),
                // SAFETY: `at` is device memory on this GPU holding `len` scalars (w, its
                // private part, or the quotient's h), lent to this call alone.
                _ => unsafe { set.msm_device(at as *const [u64; 4], len, mont) },
            };
            (r, span(stage, start))
        };
        let g2_msm = || {
            let start = Instant::now();
            let r = match &bits {
                Some(bits) => resident_sum(&sets.b2, &host.b2, bits, 0),
                // SAFETY: as above, for w.
                None => unsafe { sets.b2.msm_device(wd as *const [u64; 4], nw, mont_w) },
            };
            (r, span(Stage::MsmB2, start))
        };
        type G1R<E> = (Result<<E as Pairing>::G1, CudaError>, Span);
        let (a, b1, b2, c, h): (G1R<E>, G1R<E>, _, G1R<E>, G1R<E>) = if self.tuning.lab.serial_msms
        {
            (
                msm(&sets.a, wd, nw, mont_w, Stage::MsmA),
                msm(&sets.b1, wd, nw, mont_w, Stage::MsmB1),
                g2.then(g2_msm),
                msm(&sets.c, private, n_private, mont_w, Stage::MsmC),
                msm(&sets.h, hd, n, true, Stage::MsmH),
            )
        } else {
            // The MSMs run at once, each from its own host thread: sppark's per-call host
            // work (launches, synchronizes, the final window sums on the CPU) then overlaps
            // the others' kernels. Each point set has its own buckets; they share the
            // device's streams, so kernels stay in stream order.
            std::thread::scope(|s| {
                let b2 = g2.then(|| s.spawn(g2_msm));
                let b1 = s.spawn(|| msm(&sets.b1, wd, nw, mont_w, Stage::MsmB1));
                let c = s.spawn(|| msm(&sets.c, private, n_private, mont_w, Stage::MsmC));
                let h = s.spawn(|| msm(&sets.h, hd, n, true, Stage::MsmH));
                let a = msm(&sets.a, wd, nw, mont_w, Stage::MsmA);
                (a, join(b1), b2.map(join), join(c), join(h))
            })
        };
        let (a, a_span) = a;
        let b2 = b2.map(|(r, sp)| {
            t.spans.push(sp);
            r
        });
        t.spans.extend([a_span, b1.1, c.1, h.1]);
        let mut sums = DeviceSums {
            a: a?,
            b1: b1.0?,
            b2: b2.transpose()?,
            c: c.0?,
            h: h.0?,
        };
        self.unmask(&mut sums);
        Ok(sums)
    }
}

/// Each of `k` proofs' sums, from each set's sums in proof order.
pub(super) fn per_proof<E: Curve>(
    k: usize,
    a: &[E::G1],
    b1: &[E::G1],
    b2: Option<&[E::G2]>,
    c: &[E::G1],
    h: &[E::G1],
) -> Vec<DeviceSums<E>> {
    (0..k)
        .map(|j| DeviceSums {
            a: a[j],
            b1: b1[j],
            b2: b2.map(|v| v[j]),
            c: c[j],
            h: h[j],
        })
        .collect()
}

/// A scoped thread's result; its panic goes on up.
fn join<T>(j: std::thread::ScopedJoinHandle<'_, T>) -> T {
    j.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// A result with the time since `start` (for the pass trace).
fn ended<T>(start: Instant, r: T) -> (T, std::time::Duration) {
    (r, start.elapsed())
}

fn span(stage: Stage, start: Instant) -> Span {
    Span {
        stage,
        start,
        end: Instant::now(),
    }
}
