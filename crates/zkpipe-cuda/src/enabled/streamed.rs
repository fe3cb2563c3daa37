//! A key larger than its GPU's budget ([`zkpipe_core::Residency::Streamed`]): its points
//! stay in host memory (the compiled key's) and stream through the GPU in chunks, as its
//! [`StreamPlan`] cuts them. One walk over a set's chunks serves a whole pass: while a
//! chunk is on the device, every proof of the batch runs sppark's MSM of its scalars'
//! slice against it (or, on the bit path, sums the chunk's points its witness's bitmap
//! picks: `crate::enabled::bits`) and adds the result to its sum, and the next chunk is copied in
//! meanwhile (double buffering: two chunks, one being added against, one filling, each
//! through its own pinned staging buffer, kept with the key). The four G1 sets and then
//! [B]₂ are walked as one stream, so each set's first chunk crosses during the previous
//! one's sums.
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
use crate::enabled::memory::{upload_to, DeviceBuf, PinnedBuf};
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

    /// Host bytes it holds beside the key and its pinned copy: the matrices' narrow
    /// values where the GPU reduces, and the two staging buffers, which the first walk or
    /// reduce that packs makes and which stay until the key is unbound (counted from the
    /// start: a binding's first pass comes before its pinned copy).
    pub(crate) fn host_bytes(&self) -> u64 {
        let matrices = self.matrices.as_ref().map_or(0, |m| m.host_bytes());
        (2 * self.staging_bytes() + matrices) as u64
    }

    /// Bytes of each staging buffer: a chunk of either walk, the matrices' or the points'.
    fn staging_bytes(&self) -> usize {
        self.plan.chunk_bytes().max(self.plan.walk_chunk_bytes()) as usize
    }

    /// The two staging buffers, made on first use (a walk or reduce that packs: not one
    /// that copies from the pinned copy), held until the guard drops. Each holds a chunk
    /// of either walk.
    pub(super) fn staging(&self) -> Result<Staging<'_>, CudaError> {
        let mut s = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_none() {
            let make = || PinnedBuf::with_kind(self.staging_bytes(), self.kind);
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
    /// Where the vectors' sums take the bit path (`crate::enabled::bits`): each vector's
    /// bitmap of 1s, and the bit of the set's first point.
    pub(super) bits: Option<LegBits>,
}

/// A leg's bitmaps ([`Leg::bits`]): device addresses on the walk's GPU, one a vector, not
/// written while the walk runs; the set's point i is bit `offset + i`.
pub(super) struct LegBits {
    pub(super) ones: Vec<usize>,
    pub(super) offset: usize,
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
            bits: None,
        }
    }

    /// The leg with its sums on the bit path ([`LegBits`]).
    pub(super) fn with_bits(self, bits: Option<LegBits>) -> Self {
        Self { bits, ..self }
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

    /// Copies `chunk`'s points to the device address `at` on `gpu`, in the device's
    /// layout: from the pinned copy where there is one, else packed through `staging`
    /// (which the walk lends where a leg is not pinned); returns when they are there.
    ///
    /// # Safety
    /// `at` must be device memory on `gpu` with room for the chunk's points that nothing
    /// reads or writes until this returns.
    unsafe fn fill<E: GpuCurve, G: GpuGroup<E, Affine = A>>(
        &self,
        chunk: Range<usize>,
        at: usize,
        staging: Option<&mut PinnedBuf>,
        gpu: usize,
    ) -> Result<(), CudaError> {
        let point = Resident::<E, G>::device_point_bytes();
        let bytes = chunk.len() * point;
        let from = match (self.packed, staging) {
            (Some(packed), _) if chunk.end * point <= packed.len() => {
                // SAFETY: within the pinned copy (checked), never written after packing.
                unsafe { packed.as_ptr().add(chunk.start * point) }
            }
            (Some(_), _) => {
                return Err(CudaError::Length(
                    "a pinned point set shorter than its chunks".into(),
                ))
            }
            (None, Some(staging)) if bytes <= staging.len() => {
                // SAFETY: the first `bytes` bytes of the staging buffer (checked), which
                // the walk lends to this fill alone.
                let dst = unsafe { std::slice::from_raw_parts_mut(staging.ptr_at(0), bytes) };
                Resident::<E, G>::pack(&self.points[chunk], dst);
                staging.ptr_at(0) as *const u8
            }
            (None, _) => {
                return Err(CudaError::Length(format!(
                    "an unpinned point set's chunk of {bytes} bytes with no staging buffer \
                     that holds it"
                )))
            }
        };
        let _burst = zkpipe_core::throttle::burst();
        // SAFETY: `from` holds the chunk's `bytes` packed bytes; `at` as the caller says.
        unsafe { upload_to(gpu, at, from, bytes) }
    }
}

/// Where a pass's walks put their two chunks: the halves of the first proof's idle
/// quotient vectors where the plan says so ([`StreamPlan::walk_in_room`]), else two
/// buffers of the plan's walk chunk bytes, made here and held until the pass's walks end.
/// A pass's G1 and G2 sets walk through them as one stream ([`walk`]), so [B]₂'s first
/// chunk crosses while the last G1 chunk is added against.
pub(super) struct ChunkHalves {
    at: [usize; 2],
    bytes: usize,
    _own: Option<[DeviceBuf; 2]>,
}

impl ChunkHalves {
    /// The halves for `plan`'s walks on `gpu`, in `room` (a device address and its bytes:
    /// the first proof's idle quotient vectors,
    /// [`crate::enabled::quotient::GpuQuotient::idle_room`], which nothing may use while
    /// the halves live) where the plan walks there; or why the room cannot take them.
    pub(super) fn new(
        plan: &StreamPlan,
        (at, bytes): (usize, usize),
        gpu: usize,
    ) -> Result<Self, CudaError> {
        if plan.walk_in_room() {
            let half = bytes / 2 / ROOM_ALIGN as usize * ROOM_ALIGN as usize;
            if at % ROOM_ALIGN as usize != 0 {
                return Err(CudaError::Length(format!(
                    "a proof's idle bytes at {at:#x} are not {ROOM_ALIGN}-byte aligned"
                )));
            }
            return Ok(Self {
                at: [at, at + half],
                bytes: half,
                _own: None,
            });
        }
        let bytes = plan.walk_chunk_bytes() as usize;
        let own = [DeviceBuf::new(gpu, bytes)?, DeviceBuf::new(gpu, bytes)?];
        Ok(Self {
            at: [own[0].device_ptr(0) as usize, own[1].device_ptr(0) as usize],
            bytes,
            _own: Some(own),
        })
    }

    /// Whether chunks of `cap` points of `G` fit a half; why not if they do not.
    fn fit<E: GpuCurve, G: GpuGroup<E>>(&self, cap: usize) -> Result<(), CudaError> {
        let need = cap * Resident::<E, G>::device_point_bytes();
        if need > self.bytes {
            return Err(CudaError::Length(format!(
                "a streamed walk's chunk of {need} bytes in a half of {} bytes",
                self.bytes
            )));
        }
        Ok(())
    }

    /// The chunk sets of `G` over the two halves, `cap` points each.
    ///
    /// # Safety
    /// Chunks of `cap` points must fit a half ([`Self::fit`], which the walk checks before
    /// its first copy), and no other sets over the halves may run MSMs while these live.
    unsafe fn sets<E: GpuCurve, G: GpuGroup<E>>(
        &self,
        cap: usize,
        gpu: usize,
    ) -> Result<[Resident<E, G>; 2], CudaError> {
        // SAFETY: each half is device memory on `gpu` of at least `cap` points (the caller)
        // that outlives the sets (they drop within the walk that borrows `self`); the
        // walk writes into a half only while no MSM runs over it.
        unsafe {
            Ok([
                Resident::chunk(cap, gpu, self.at[0])?,
                Resident::chunk(cap, gpu, self.at[1])?,
            ])
        }
    }
}

/// One step of a walk: chunk `chunk` of leg `leg` of its first or its second part.
struct Step {
    second: bool,
    leg: usize,
    chunk: Range<usize>,
}

/// The steps of the legs of one part of a walk, in stream order (empty chunks skipped).
fn steps<'a, A>(legs: &'a [Leg<'a, A>], second: bool) -> impl Iterator<Item = Step> + 'a {
    legs.iter().enumerate().flat_map(move |(l, leg)| {
        leg.chunks
            .iter()
            .filter(|c| !c.is_empty())
            .map(move |c| Step {
                second,
                leg: l,
                chunk: c.clone(),
            })
    })
}

/// A walk's sums, per leg, per vector: of its first part (points of one group) and of
/// its second (of another).
pub(super) type WalkSums<P, Q> = (Vec<Vec<P>>, Vec<Vec<Q>>);

/// Σ scalarsᵢ·pointsᵢ for every vector of every leg of `first` (points of `G`) and then
/// of `second` (points of `H`: [B]₂ after the G1 sets), walking the legs' chunks once, one
/// after another, as one stream through the two `halves`: the next chunk (of this leg or
/// the next, of either part) crosses while the current one is added against, so a set of
/// one chunk does not wait for its copy, nor does the second part's first chunk. Each
/// part's chunk sets (sppark's state over the halves) live only while its steps run.
/// Sums per leg, per vector, for each part.
pub(super) fn walk<E: GpuCurve, G: GpuGroup<E>, H: GpuGroup<E>>(
    streamed: &Streamed,
    first: &[Leg<'_, G::Affine>],
    second: &[Leg<'_, H::Affine>],
    halves: &ChunkHalves,
    gpu: usize,
) -> Result<WalkSums<G::Point, H::Point>, CudaError> {
    let mut sums: Vec<Vec<G::Point>> = first
        .iter()
        .map(|l| vec![G::Point::ZERO; l.vectors.len()])
        .collect();
    let mut then: Vec<Vec<H::Point>> = second
        .iter()
        .map(|l| vec![H::Point::ZERO; l.vectors.len()])
        .collect();
    first.iter().try_for_each(Leg::check)?;
    second.iter().try_for_each(Leg::check)?;
    let steps: Vec<Step> = steps(first, false).chain(steps(second, true)).collect();
    if steps.is_empty() {
        return Ok((sums, then));
    }
    let cap = |second: bool| {
        let lens = steps.iter().filter(|s| s.second == second);
        lens.map(|s| s.chunk.len()).max().unwrap_or(0)
    };
    // Every chunk of either part must fit a half before the first is copied: the second
    // part's first chunk crosses before its sets are made.
    halves.fit::<E, G>(cap(false))?;
    halves.fit::<E, H>(cap(true))?;
    // Staging only where a leg packs its chunks (no pinned copy of its set).
    let packs =
        first.iter().any(|l| l.packed.is_none()) || second.iter().any(|l| l.packed.is_none());
    let mut staging = match packs {
        true => Some(streamed.staging()?),
        false => None,
    };
    let fill = |step: &Step, half: usize, staging: Option<&mut PinnedBuf>| {
        let (at, chunk) = (halves.at[half], step.chunk.clone());
        // SAFETY: each half holds a chunk of either part (checked above), and the walk
        // fills a half only while no MSM runs over it.
        unsafe {
            match step.second {
                false => first[step.leg].fill::<E, G>(chunk, at, staging, gpu),
                true => second[step.leg].fill::<E, H>(chunk, at, staging, gpu),
            }
        }
    };
    fill(&steps[0], 0, staging.as_mut().map(|s| &mut s[0]))?;
    let mut g_sets: Option<[Resident<E, G>; 2]> = None;
    let mut h_sets: Option<[Resident<E, H>; 2]> = None;
    for (i, step) in steps.iter().enumerate() {
        // Each part's sets are made at its first step, the first part's dropped before
        // the second's are made: sppark's state of one part at a time, as the plan counts
        // it.
        // SAFETY: one part's sets live at a time, over halves that hold either's chunks
        // (checked above).
        unsafe {
            match step.second {
                false if g_sets.is_none() => g_sets = Some(halves.sets(cap(false), gpu)?),
                true if h_sets.is_none() => {
                    g_sets = None;
                    h_sets = Some(halves.sets(cap(true), gpu)?);
                }
                _ => {}
            }
        }
        let half = i % 2;
        let next = steps.get(i + 1);
        let next_staging = staging.as_mut().map(|s| &mut s[(i + 1) % 2]);
        std::thread::scope(|s| -> Result<(), CudaError> {
            let filling = next.map(|n| s.spawn(move || fill(n, (i + 1) % 2, next_staging)));
            // SAFETY (both arms): the set's half was filled with this step's chunk after
            // its last MSM returned (the previous step's fill, joined).
            let added = match step.second {
                false => {
                    let sets = g_sets.as_mut().expect("made at the part's first step");
                    let (leg, sums) = (&first[step.leg], &mut sums[step.leg]);
                    unsafe { add(&mut sets[half], leg, &step.chunk, sums) }
                }
                true => {
                    let sets = h_sets.as_mut().expect("made at the part's first step");
                    let (leg, sums) = (&second[step.leg], &mut then[step.leg]);
                    unsafe { add(&mut sets[half], leg, &step.chunk, sums) }
                }
            };
            let filled = filling.map_or(Ok(()), |f| {
                f.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
            });
            added.and(filled)
        })?;
    }
    Ok((sums, then))
}

/// Adds Σ scalarsᵢ·pointsᵢ over `chunk` of each of `leg`'s vectors to its sum in `sums`,
/// against `set`.
///
/// # Safety
/// `set`'s room must hold the chunk's points, copied there after its last MSM returned.
unsafe fn add<E: GpuCurve, G: GpuGroup<E>>(
    set: &mut Resident<E, G>,
    leg: &Leg<'_, G::Affine>,
    chunk: &Range<usize>,
    sums: &mut [G::Point],
) -> Result<(), CudaError> {
    // SAFETY: as the caller says.
    unsafe { set.filled(chunk.len())? };
    if let Some(bits) = &leg.bits {
        return sums
            .iter_mut()
            .zip(&bits.ones)
            .try_for_each(|(sum, &ones)| {
                // SAFETY: the bitmap covers the set's points' bits (the leg's contract), and
                // `set` holds the chunk's points.
                *sum += unsafe { set.bits_sum(ones, 0, chunk.len(), bits.offset + chunk.start)? };
                Ok(())
            });
    }
    sums.iter_mut().zip(&leg.vectors).try_for_each(|(sum, &v)| {
        let at = (v + chunk.start * SCALAR_BYTES) as *const [u64; 4];
        // SAFETY: `at` is this GPU's memory holding the vector's scalars from
        // `chunk.start` on, at least `chunk.len()` of them (the leg's contract), and `set`
        // holds the chunk's points.
        *sum += unsafe { set.msm_device(at, chunk.len(), leg.mont)? };
        Ok(())
    })
}
