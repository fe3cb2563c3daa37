//! A key larger than its GPU's budget ([`zkpipe_core::Residency::Streamed`]): its points
//! stay in host memory (the compiled key's) and stream through the GPU in chunks, as its
//! [`StreamPlan`] cuts them. One walk over a set's chunks serves a whole pass: while a
//! chunk is on the device, every proof of the batch runs sppark's MSM of its scalars'
//! slice against it and adds the result to its sum, and the next chunk is copied in
//! meanwhile (double buffering: two chunk sets, one being added against, one filling,
//! each through its own pinned staging buffer, kept with the key). The four G1 sets are
//! walked as one stream, so the next set's first chunk crosses during the last one's sums.
//! Σ over chunks of Σᵢ∈chunk sᵢ·Pᵢ is Σᵢ sᵢ·Pᵢ: the sums are the in-core ones exactly.
//!
//! Pinned ([`Streamed::pin`], the engine's hot tier), the key's points (and its
//! matrices' row chunks, where the GPU reduces) are packed once into page-locked memory
//! in the device's layout, and each chunk crosses from there directly: no packing into
//! the staging buffers on every walk.
//!
//! The CPU's reference of the same walk is `zkpipe_core::msm::streamed`; the verbs and
//! the batched MSMs of a streamed [`crate::CudaBound`] that walk it are in
//! `crate::enabled::streamed_msms`.

use crate::enabled::curve::{GpuCurve, GpuGroup};
use crate::enabled::memory::PinnedBuf;
use crate::enabled::msm::Resident;
use crate::enabled::streamed_reduce::StreamedMatrices;
use crate::CudaError;
use ark_ec::AdditiveGroup;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};
use zkpipe_core::msm::stream_plan::{KeySet, ROOM_ALIGN};
use zkpipe_core::{PinnedKind, StreamPlan};

/// A streamed key's plan, the lock that runs its passes one at a time (the plan's budget
/// holds one batch's buffers and one pair of chunks in flight), the pinned buffers its
/// chunks cross through (two of the plan's chunk bytes, made at the first walk), its
/// pinned copy where it has one, and its matrices' row chunks where the GPU reduces.
pub(crate) struct Streamed {
    pub(crate) plan: StreamPlan,
    /// A's and B's rows as they cross, where a, b, c are computed on the GPU.
    pub(crate) matrices: Option<StreamedMatrices>,
    pass: Mutex<()>,
    staging: Mutex<Option<[PinnedBuf; 2]>>,
    kind: PinnedKind,
    pinned: Mutex<Option<Arc<PinnedKey>>>,
}

/// A streamed key packed in the device's layout in page-locked memory: its point sets in
/// [`KeySet::ALL`]'s order (`None`: a set that does not stream here, [B]₂ where the CPU
/// tail makes it), and its matrices' row chunks where the GPU reduces.
pub(crate) struct PinnedKey {
    sets: [Option<PinnedBuf>; 5],
    matrices: Option<PinnedBuf>,
}

impl PinnedKey {
    /// The packed row chunks of A and B, if the GPU reduces.
    pub(super) fn matrices(&self) -> Option<&PinnedBuf> {
        self.matrices.as_ref()
    }

    /// The packed points of `set`, if pinned.
    pub(super) fn set(&self, set: KeySet) -> Option<&PinnedBuf> {
        let i = KeySet::ALL.iter().position(|&s| s == set)?;
        self.sets[i].as_ref()
    }
}

impl Streamed {
    /// Chunks staged through pinned memory of `kind`; `matrices` where the GPU reduces.
    pub(crate) fn new(
        plan: StreamPlan,
        matrices: Option<StreamedMatrices>,
        kind: PinnedKind,
    ) -> Self {
        Self {
            plan,
            matrices,
            pass: Mutex::new(()),
            staging: Mutex::new(None),
            kind,
            pinned: Mutex::new(None),
        }
    }

    /// Its pinned copy, if it has one (held by a walk for the walk's length).
    pub(super) fn pinned(&self) -> Option<Arc<PinnedKey>> {
        self.pinned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Pins `sets` (each set's points and whether its MSMs run here) and `matrices`
    /// (where the GPU reduces), packing each into page-locked memory; nothing if pinned
    /// already.
    pub(super) fn pin(
        &self,
        sets: [(KeySet, Pack<'_>); 5],
        matrices: Pack<'_>,
    ) -> Result<(), CudaError> {
        if self.pinned().is_some() {
            return Ok(());
        }
        let packed = |pack: Pack<'_>| -> Result<Option<PinnedBuf>, CudaError> {
            let Some((bytes, pack)) = pack else {
                return Ok(None);
            };
            let mut buf = PinnedBuf::with_kind(bytes, self.kind)?;
            pack(&mut buf)?;
            Ok(Some(buf))
        };
        let mut out: [Option<PinnedBuf>; 5] = Default::default();
        for (i, (set, pack)) in sets.into_iter().enumerate() {
            debug_assert_eq!(set, KeySet::ALL[i]);
            out[i] = packed(pack)?;
        }
        let pinned = Arc::new(PinnedKey {
            sets: out,
            matrices: packed(matrices)?,
        });
        *self.pinned.lock().unwrap_or_else(|e| e.into_inner()) = Some(pinned);
        Ok(())
    }

    /// Drops the pinned copy (a walk reading it keeps it until it ends).
    pub(super) fn unpin(&self) {
        self.pinned.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Held for a whole pass (or verb) of the key.
    pub(crate) fn one_at_a_time(&self) -> MutexGuard<'_, ()> {
        self.pass.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The two staging buffers, made on first use (a walk or reduce that packs: not one
    /// that copies from the pinned copy), held until the guard drops. Each holds a chunk
    /// of either walk.
    pub(super) fn staging(&self) -> Result<Staging<'_>, CudaError> {
        let mut s = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_none() {
            let bytes = self.plan.chunk_bytes().max(self.plan.walk_chunk_bytes()) as usize;
            let make = || PinnedBuf::with_kind(bytes, self.kind);
            *s = Some([make()?, make()?]);
        }
        Ok(Staging(s))
    }
}

/// A streamed key's two staging buffers, lent to one walk ([`Streamed::staging`]).
pub(super) struct Staging<'a>(MutexGuard<'a, Option<[PinnedBuf; 2]>>);

impl std::ops::Deref for Staging<'_> {
    type Target = [PinnedBuf; 2];
    fn deref(&self) -> &[PinnedBuf; 2] {
        self.0.as_ref().expect("made by Streamed::staging")
    }
}

impl std::ops::DerefMut for Staging<'_> {
    fn deref_mut(&mut self) -> &mut [PinnedBuf; 2] {
        self.0.as_mut().expect("made by Streamed::staging")
    }
}

/// How one set (or the matrices) is pinned: its packed bytes and what packs them into a
/// buffer of that size; `None` where its work does not run on this device.
pub(super) type Pack<'a> = Option<(usize, Packer<'a>)>;

/// What packs one set's points (or the matrices' chunks) into a buffer of its packed size.
pub(super) type Packer<'a> = Box<dyn FnOnce(&mut PinnedBuf) -> Result<(), CudaError> + 'a>;

/// Bytes of one scalar on the device.
pub(super) const SCALAR_BYTES: usize = 32;

/// One point set's part of a walk: its points, the chunks that cover them, and the scalar
/// vectors added against them (device addresses on the walk's GPU of each proof's scalar
/// for the set's first point, `points.len()` scalars each, Montgomery form with `mont`,
/// not written meanwhile).
pub(super) struct Leg<'a, A> {
    pub(super) points: &'a [A],
    /// The same points packed in the device's layout in pinned memory, where the key is
    /// pinned: chunks cross from there without packing.
    pub(super) packed: Option<&'a PinnedBuf>,
    pub(super) chunks: Vec<Range<usize>>,
    pub(super) vectors: Vec<usize>,
    pub(super) mont: bool,
}

impl<'a, A> Leg<'a, A> {
    /// `set`'s leg as `plan` cuts it, from `pinned` where the key is pinned.
    pub(super) fn of(
        plan: &StreamPlan,
        points: &'a [A],
        set: KeySet,
        pinned: Option<&'a PinnedKey>,
        vectors: &[usize],
        mont: bool,
    ) -> Self {
        Self {
            points,
            packed: pinned.and_then(|p| p.set(set)),
            chunks: plan.chunks(set),
            vectors: vectors.to_vec(),
            mont,
        }
    }

    /// The chunks cover the points, in order.
    fn check(&self) -> Result<(), CudaError> {
        let covered = self.chunks.last().map_or(0, |c| c.end);
        let in_order = self.chunks.windows(2).all(|w| w[0].end == w[1].start);
        let from_zero = self.chunks.first().is_none_or(|c| c.start == 0);
        if covered != self.points.len() || !from_zero || !in_order {
            return Err(CudaError::Length(format!(
                "a streamed MSM's chunks cover {covered} of {} points",
                self.points.len()
            )));
        }
        Ok(())
    }

    /// Fills `set` with `chunk`'s points: from the pinned copy where there is one, else
    /// packed through `staging` (which the walk lends where a leg is not pinned).
    fn fill<E: GpuCurve, G: GpuGroup<E, Affine = A>>(
        &self,
        chunk: Range<usize>,
        set: &mut Resident<E, G>,
        staging: Option<&mut PinnedBuf>,
    ) -> Result<(), CudaError> {
        let point = Resident::<E, G>::device_point_bytes();
        match self.packed {
            Some(packed) if chunk.end * point <= packed.len() => {
                let _burst = zkpipe_core::throttle::burst();
                // SAFETY: the pinned copy holds every point of the set, packed `point`
                // bytes apart (checked for this chunk), and is never written after packing.
                unsafe {
                    let at = packed.as_ptr().add(chunk.start * point);
                    set.fill_packed(at, chunk.len())
                }
            }
            Some(_) => Err(CudaError::Length(
                "a pinned point set shorter than its chunks".into(),
            )),
            None => match staging {
                Some(staging) => set.fill(&self.points[chunk], staging),
                None => Err(CudaError::Length(
                    "an unpinned point set's chunk with no staging buffer".into(),
                )),
            },
        }
    }
}

/// Σ scalarsᵢ·pointsᵢ for every vector of every leg, walking the legs' chunks once, one
/// leg after another, as one stream: the next chunk (of this leg or the next) crosses
/// while the current one is added against, so a set of one chunk does not wait for its
/// copy either. Sums per leg, per vector.
///
/// Where the plan says so ([`StreamPlan::walk_in_room`]) the two chunks lie in the halves
/// of `room` (a device address and its bytes on `gpu`: the first proof's idle quotient
/// vectors, [`crate::enabled::quotient::GpuQuotient::idle_room`], which nothing uses
/// until this returns); else in device memory of their own.
pub(super) fn walk<E: GpuCurve, G: GpuGroup<E>>(
    streamed: &Streamed,
    legs: &[Leg<'_, G::Affine>],
    room: (usize, usize),
    gpu: usize,
) -> Result<Vec<Vec<G::Point>>, CudaError> {
    let mut sums: Vec<Vec<G::Point>> = legs
        .iter()
        .map(|l| vec![G::Point::ZERO; l.vectors.len()])
        .collect();
    for leg in legs {
        leg.check()?;
    }
    let steps: Vec<(usize, Range<usize>)> = legs
        .iter()
        .enumerate()
        .flat_map(|(l, leg)| leg.chunks.iter().map(move |c| (l, c.clone())))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    let cap = steps.iter().map(|(_, c)| c.len()).max().unwrap_or(0);
    if cap == 0 {
        return Ok(sums);
    }
    // Staging only where a leg packs its chunks (no pinned copy of its set).
    let mut staging = match legs.iter().any(|l| l.packed.is_none()) {
        true => Some(streamed.staging()?),
        false => None,
    };
    let rooms = chunk_rooms::<E, G>(&streamed.plan, room, cap)?;
    // SAFETY: each room is the caller's idle device memory on `gpu`, of at least `cap`
    // points (chunk_rooms checked), in halves that do not overlap, untouched until the
    // sets drop at the end of this function.
    let mut sets = unsafe {
        [
            Resident::<E, G>::chunk(cap, gpu, rooms.map(|r| r[0]))?,
            Resident::<E, G>::chunk(cap, gpu, rooms.map(|r| r[1]))?,
        ]
    };
    let (l0, c0) = &steps[0];
    let first_staging = staging.as_mut().map(|s| &mut s[0]);
    legs[*l0].fill(c0.clone(), &mut sets[0], first_staging)?;
    for (i, (l, chunk)) in steps.iter().enumerate() {
        let (first, second) = sets.split_at_mut(1);
        let (current, next) = match i % 2 {
            0 => (&first[0], &mut second[0]),
            _ => (&second[0], &mut first[0]),
        };
        let next_staging = staging.as_mut().map(|s| &mut s[(i + 1) % 2]);
        let upcoming = steps.get(i + 1).map(|(l, r)| (&legs[*l], r.clone()));
        let leg = &legs[*l];
        let leg_sums = &mut sums[*l];
        std::thread::scope(|s| -> Result<(), CudaError> {
            // The next chunk crosses while this one is added against.
            let filling = upcoming.map(|(leg, r)| s.spawn(move || leg.fill(r, next, next_staging)));
            let added = leg_sums
                .iter_mut()
                .zip(&leg.vectors)
                .try_for_each(|(sum, &v)| {
                    let at = (v + chunk.start * SCALAR_BYTES) as *const [u64; 4];
                    // SAFETY: `at` is this GPU's memory holding the vector's scalars from
                    // `chunk.start` on, at least `chunk.len()` of them (the leg's contract),
                    // and `current` holds the chunk's points.
                    *sum += unsafe { current.msm_device(at, chunk.len(), leg.mont)? };
                    Ok(())
                });
            let filled = filling.map_or(Ok(()), |f| {
                f.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
            });
            added.and(filled)
        })?;
    }
    Ok(sums)
}

/// Where a walk's two chunk sets of `cap` points lie: `None` (memory of their own) unless
/// the plan puts them in the room, then its two halves, each [`ROOM_ALIGN`]ed; or why
/// the room cannot hold them.
fn chunk_rooms<E: GpuCurve, G: GpuGroup<E>>(
    plan: &StreamPlan,
    (at, bytes): (usize, usize),
    cap: usize,
) -> Result<Option<[usize; 2]>, CudaError> {
    if !plan.walk_in_room() {
        return Ok(None);
    }
    let half = bytes / 2 / ROOM_ALIGN as usize * ROOM_ALIGN as usize;
    let need = cap * Resident::<E, G>::device_point_bytes();
    if need > half || at % ROOM_ALIGN as usize != 0 {
        return Err(CudaError::Length(format!(
            "a streamed walk's chunk of {need} bytes does not fit half of a proof's \
             {bytes} idle bytes at {at:#x}"
        )));
    }
    Ok(Some([at, at + half]))
}
