//! The out-of-core plan: how a key whose points do not fit a device budget streams them
//! to the device in chunks, and how many proofs one stream serves. Pure arithmetic over
//! sizes; a device executes it (the CPU's reference: [`crate::cpu::CpuOptions::memory_limit`]).
//!
//! ```text
//!  budget ≥ batch × proof bytes     each proof's scalars (w: nVars, h: domain), kept for
//!                                   the whole pass, and the device's own per-proof buffers
//!         + 2 × chunk bytes         two chunks of bases in flight: one being added against,
//!                                   the next arriving (double buffering)
//!         + scratch                 what adding against a chunk takes besides its points
//!                                   (a GPU MSM's digits and buckets; none on the CPU)
//!  per set (A, B1, [B]₂, C, H):     ⌈points / (chunk bytes / point bytes)⌉ chunks of nearly
//!                                   equal length, streamed once per batch, in order
//! ```
//!
//! Where a proof's own buffers lie idle while the points are walked (a GPU's quotient
//! vectors, once h is made: [`KeySets::walk_room`]), the walk's two chunks go there (the
//! first proof's, a half each), and only their scratch needs the budget beside the proofs: the walk's chunks
//! are then as large as that room and the scratch allow, larger than the chunks the
//! matrices' rows cross in ([`StreamPlan::chunk_bytes`], still two beside the proofs).
//!
//! Every proof of a batch adds its scalars against each chunk while it is on the device,
//! so one stream of the key's points serves the whole batch: host→device bytes per proof
//! are the key's point bytes / batch (the reference system batches two). A larger batch
//! leaves less of the budget for chunks, so more, smaller chunks.
//!
//! A key whose points and one proof's buffers fit the budget stays in-core
//! ([`Residency::decide`]).

use crate::key::KeyShape;
use std::fmt;
use std::ops::Range;

/// The fewest points a chunk holds (a set with fewer is one chunk): below this, what each
/// chunk costs beyond its points (a transfer, a launch, an MSM's windows) is all it costs.
pub const MIN_CHUNK_POINTS: usize = 64;

/// A point set of a proving key, as a stream walks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeySet {
    /// [A]₁: one point per signal.
    A,
    /// [B]₁: one point per signal.
    B1,
    /// [B]₂: one G2 point per signal.
    B2,
    /// [C]₁: one point per private signal.
    C,
    /// [H]₁: one point per domain row.
    H,
}

impl KeySet {
    /// Every set, in the order of [`KeySets::points`].
    pub const ALL: [KeySet; 5] = [KeySet::A, KeySet::B1, KeySet::B2, KeySet::C, KeySet::H];

    fn index(self) -> usize {
        self as usize
    }

    /// Its name in messages and logs.
    pub fn name(self) -> &'static str {
        match self {
            KeySet::A => "A",
            KeySet::B1 => "B1",
            KeySet::B2 => "B2",
            KeySet::C => "C",
            KeySet::H => "H",
        }
    }
}

/// What a key's streaming is sized from: each set's points and their bytes on the device,
/// and what one proof keeps on the device for its whole pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySets {
    /// Points of each set, in [`KeySet::ALL`] order.
    pub points: [usize; 5],
    /// Bytes of one G1 point as the device holds it.
    pub g1_bytes: usize,
    /// Bytes of one G2 point as the device holds it.
    pub g2_bytes: usize,
    /// Bytes one proof keeps on the device for its whole pass: its MSM scalars (w, one per
    /// signal; h, one per domain row) and `extra`, the device's own per-proof buffers
    /// ([`KeySets::new`]).
    pub proof_bytes: u64,
    /// What the device needs to add scalars against the chunks in flight, besides their
    /// points ([`KeySets::with_scratch`]; none by default).
    pub scratch: ChunkScratch,
    /// Bytes of each proof's buffers, in one piece, that lie idle while the points are
    /// walked, where a device places the walk's two chunks ([`KeySets::with_walk_room`];
    /// none by default).
    pub walk_room: u64,
}

/// Where the walk's chunks start in a proof's idle buffers: two in one proof's room are
/// its halves, each rounded down to this.
pub const ROOM_ALIGN: u64 = 256;

/// What adding scalars against the chunks in flight takes on a device besides their
/// points: bytes per point of the longest chunk (less for long chunks, where `long` says),
/// and a fixed part. A GPU's MSM needs digits per point and bucket arrays; the CPU adds in
/// place (none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChunkScratch {
    /// Bytes per point of the longest chunk.
    pub per_point: u64,
    /// Bytes whatever the chunks' length.
    pub fixed: u64,
    /// A lower rate for long chunks, where the device has one.
    pub long: Option<LongChunkRate>,
}

/// [`ChunkScratch::per_point`] for chunks of at least `from` points (a GPU MSM digitizes
/// a long chunk a part at a time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongChunkRate {
    /// The fewest points of a chunk this rate is for.
    pub from: u64,
    /// Bytes per point of such a chunk.
    pub per_point: u64,
}

impl ChunkScratch {
    /// The scratch of a longest chunk of `points` points.
    pub fn bytes(&self, points: u64) -> u64 {
        let rate = match self.long {
            Some(l) if points >= l.from => l.per_point,
            _ => self.per_point,
        };
        self.fixed + rate * points
    }
}

impl KeySets {
    /// The sets of a key of `shape`, points of `g1_bytes` and `g2_bytes`, MSM scalars of
    /// `scalar_bytes`; `extra` is what else one proof keeps on the device while its pass
    /// runs (its partial sums; for a GPU, whatever per-proof buffers it holds).
    pub fn new(
        shape: &KeyShape,
        g1_bytes: usize,
        g2_bytes: usize,
        scalar_bytes: usize,
        extra: u64,
    ) -> Self {
        let n = shape.n_vars;
        let private = n.saturating_sub(shape.n_public + 1);
        let scalars = (n as u64 + shape.domain_size as u64) * scalar_bytes as u64;
        Self {
            points: [n, n, n, private, shape.domain_size],
            g1_bytes,
            g2_bytes,
            proof_bytes: scalars.saturating_add(extra),
            scratch: ChunkScratch::default(),
            walk_room: 0,
        }
    }

    /// The same sets, on a device that needs `scratch` beside the chunks in flight.
    pub fn with_scratch(self, scratch: ChunkScratch) -> Self {
        Self { scratch, ..self }
    }

    /// The same sets, on a device whose proofs each leave `bytes` of their buffers idle
    /// (in one piece) while the points are walked: the walk's chunks go there.
    pub fn with_walk_room(self, bytes: u64) -> Self {
        Self {
            walk_room: bytes,
            ..self
        }
    }

    /// The bytes of each of the walk's two chunks in the halves of the first proof's
    /// idle buffers, under what the proofs leave of a budget (`left`): no more than the
    /// scratch beside them allows, nor the largest set. 0 where the device has no room.
    /// (One proof's room, not two proofs' a chunk each: every walk has a first proof,
    /// not every walk of a batch plan has a second.)
    fn room_chunk_bytes(&self, left: u64) -> u64 {
        let per_chunk = self.walk_room / 2 / ROOM_ALIGN * ROOM_ALIGN;
        let left = left.saturating_sub(self.scratch.fixed) as u128;
        let by_scratch = match self.scratch.per_point {
            0 => u64::MAX,
            p => (left * self.smallest_point_bytes() as u128 / p as u128) as u64,
        };
        let largest_set = KeySet::ALL.iter().map(|&s| self.set_bytes(s)).max();
        per_chunk.min(by_scratch).min(largest_set.unwrap_or(0))
    }

    /// The fewest bytes of any set's point: the set whose chunks hold the most points.
    fn smallest_point_bytes(&self) -> u64 {
        KeySet::ALL
            .iter()
            .map(|&s| self.point_bytes(s) as u64)
            .min()
            .unwrap_or(1)
            .max(1)
    }

    /// Points of `set`.
    pub fn len(&self, set: KeySet) -> usize {
        self.points[set.index()]
    }

    /// Bytes of one point of `set`.
    pub fn point_bytes(&self, set: KeySet) -> usize {
        match set {
            KeySet::B2 => self.g2_bytes,
            _ => self.g1_bytes,
        }
    }

    /// Bytes of all of `set`'s points.
    pub fn set_bytes(&self, set: KeySet) -> u64 {
        self.len(set) as u64 * self.point_bytes(set) as u64
    }

    /// Bytes of all the key's points.
    pub fn key_bytes(&self) -> u64 {
        KeySet::ALL.iter().map(|&s| self.set_bytes(s)).sum()
    }

    /// The smallest chunk that still makes sense: [`MIN_CHUNK_POINTS`] points of the set
    /// with the largest points (a whole set where it is shorter).
    pub fn min_chunk_bytes(&self) -> u64 {
        KeySet::ALL
            .iter()
            .map(|&s| (self.len(s).min(MIN_CHUNK_POINTS) * self.point_bytes(s)) as u64)
            .max()
            .unwrap_or(0)
    }
}

/// Why a key cannot stream under a budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamPlanError {
    /// A stream that serves no proof.
    #[error("a stream of a key's points must serve at least one proof")]
    NoProofs,
    /// The batch's buffers and two of the smallest chunks exceed the budget.
    #[error(
        "a device budget of {} cannot stream this key ({} of points): {batch} proof(s) keep {} on the device, and two chunks of at least {} each with the MSMs' scratch need {} more",
        Bytes(*.budget), Bytes(*.key), Bytes(*.proofs), Bytes(*.min_chunk), Bytes(2 * *.min_chunk + *.scratch)
    )]
    DoesNotFit {
        /// The device budget.
        budget: u64,
        /// The key's point bytes.
        key: u64,
        /// Proofs per stream.
        batch: usize,
        /// What they keep on the device.
        proofs: u64,
        /// The smallest chunk ([`KeySets::min_chunk_bytes`]).
        min_chunk: u64,
        /// The scratch the smallest chunks need besides their points.
        scratch: u64,
    },
}

/// How one set is cut: `count` chunks of `len / count` points, the first `len % count`
/// one longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SetChunks {
    len: usize,
    count: usize,
}

/// How a key streams under a budget: proofs per stream and each set's chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamPlan {
    batch: usize,
    chunk_bytes: u64,
    /// Bytes of the points' walk's chunks: `chunk_bytes`, or larger in the proofs' room.
    walk_bytes: u64,
    in_room: bool,
    proof_bytes: u64,
    scratch: ChunkScratch,
    sets: [SetChunks; 5],
}

impl StreamPlan {
    /// The plan for `batch` proofs a stream under `budget` device bytes: chunks as large
    /// as what the batch and the scratch leave, shared by the two in flight, allows (at
    /// the long chunks' scratch rate where the chunks that makes are long).
    pub fn new(sets: &KeySets, budget: u64, batch: usize) -> Result<Self, StreamPlanError> {
        let at = |per_point: u64| {
            let flat = ChunkScratch {
                per_point,
                long: None,
                ..sets.scratch
            };
            let plan = Self::at_rate(&sets.with_scratch(flat), budget, batch)?;
            Ok(Self {
                scratch: sets.scratch,
                ..plan
            })
        };
        if let Some(long) = sets.scratch.long {
            let plan = at(long.per_point)
                .ok()
                .filter(|p: &Self| p.longest_points() >= long.from && p.device_bytes() <= budget);
            if let Some(plan) = plan {
                return Ok(plan);
            }
        }
        at(sets.scratch.per_point)
    }

    /// [`Self::new`] with `sets.scratch.per_point` for chunks of any length.
    fn at_rate(sets: &KeySets, budget: u64, batch: usize) -> Result<Self, StreamPlanError> {
        if batch == 0 {
            return Err(StreamPlanError::NoProofs);
        }
        let proofs = sets.proof_bytes.saturating_mul(batch as u64);
        let min_chunk = sets.min_chunk_bytes();
        let largest_set = KeySet::ALL.iter().map(|&s| sets.set_bytes(s)).max();
        // Two chunk buffers of B bytes and the scratch of the longest chunk, at most
        // B / (smallest point) points: B · (2 + per_point / smallest) ≤ what is left.
        let left = budget
            .saturating_sub(proofs)
            .saturating_sub(sets.scratch.fixed);
        let smallest = sets.smallest_point_bytes() as u128;
        let per_byte = 2 * smallest + sets.scratch.per_point as u128;
        let fitting = (left as u128 * smallest / per_byte) as u64;
        let chunk_bytes = fitting.min(largest_set.unwrap_or(0));
        if proofs.saturating_add(sets.scratch.fixed) > budget || chunk_bytes < min_chunk {
            return Err(StreamPlanError::DoesNotFit {
                budget,
                key: sets.key_bytes(),
                batch,
                proofs,
                min_chunk,
                scratch: sets.scratch.fixed
                    + sets.scratch.per_point * (min_chunk / sets.smallest_point_bytes()),
            });
        }
        // The walk's chunks in the proofs' idle buffers where that makes them larger.
        let room = sets.room_chunk_bytes(budget - proofs);
        let (walk_bytes, in_room) = match room > chunk_bytes {
            true => (room, true),
            false => (chunk_bytes, false),
        };
        let cut = |s: KeySet| {
            let len = sets.len(s);
            // ≥ 1: walk_bytes holds min(len, MIN_CHUNK_POINTS) ≥ 1 point of each set.
            let per_chunk = (walk_bytes / sets.point_bytes(s).max(1) as u64).max(1) as usize;
            SetChunks {
                len,
                count: len.div_ceil(per_chunk),
            }
        };
        Ok(Self {
            batch,
            chunk_bytes,
            walk_bytes,
            in_room,
            proof_bytes: sets.proof_bytes,
            scratch: sets.scratch,
            sets: KeySet::ALL.map(cut),
        })
    }

    /// The plan for as many proofs a stream as `budget` allows, at most `max_batch` (the
    /// refusal of a single proof where not even that fits).
    pub fn largest_batch(
        sets: &KeySets,
        budget: u64,
        max_batch: usize,
    ) -> Result<Self, StreamPlanError> {
        let mut last = Err(StreamPlanError::NoProofs);
        for batch in (1..=max_batch).rev() {
            last = Self::new(sets, budget, batch);
            if last.is_ok() {
                break;
            }
        }
        last
    }

    /// Proofs one stream of the points serves.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Bytes of one chunk buffer beside the proofs' (two are in flight): what the
    /// matrices' rows cross in, and the points too unless [`Self::walk_in_room`].
    pub fn chunk_bytes(&self) -> u64 {
        self.chunk_bytes
    }

    /// Bytes of each of the points' walk's two chunks: [`Self::chunk_bytes`], or more
    /// where they lie in the proofs' idle buffers.
    pub fn walk_chunk_bytes(&self) -> u64 {
        self.walk_bytes
    }

    /// Whether the points' walk places its two chunks in the first proof's idle buffers
    /// ([`KeySets::walk_room`]), one in each half (each [`ROOM_ALIGN`]ed).
    pub fn walk_in_room(&self) -> bool {
        self.in_room
    }

    /// Device bytes the plan uses at most: the batch's buffers, and beside them either
    /// two chunk buffers (the matrices' rows crossing) or the walk's two chunks (unless
    /// in the proofs' room) and the scratch of its longest chunk.
    pub fn device_bytes(&self) -> u64 {
        let proofs = self.proof_bytes * self.batch as u64;
        let walk_chunks = if self.in_room { 0 } else { 2 * self.walk_bytes };
        let walk = walk_chunks + self.scratch.bytes(self.longest_points());
        proofs + walk.max(2 * self.chunk_bytes)
    }

    /// Points of the longest chunk of any set: what the scratch is sized by.
    fn longest_points(&self) -> u64 {
        KeySet::ALL
            .iter()
            .map(|&s| self.longest_chunk(s))
            .max()
            .unwrap_or(0) as u64
    }

    /// Points of `set`'s longest chunk (its first), 0 for an empty set: what a device
    /// sizes its chunk buffers for.
    pub fn longest_chunk(&self, set: KeySet) -> usize {
        let SetChunks { len, count } = self.sets[set.index()];
        len.div_ceil(count.max(1))
    }

    /// How many chunks `set` streams in.
    pub fn chunk_count(&self, set: KeySet) -> usize {
        self.sets[set.index()].count
    }

    /// The chunks of `set`, in stream order: index ranges that cover its points, each
    /// within the chunk buffer, their lengths differing by at most one.
    pub fn chunks(&self, set: KeySet) -> Vec<Range<usize>> {
        let SetChunks { len, count } = self.sets[set.index()];
        let (base, longer) = (len / count.max(1), len % count.max(1));
        (0..count)
            .map(|i| {
                let start = i * base + i.min(longer);
                start..start + base + usize::from(i < longer)
            })
            .collect()
    }
}

/// Which path a key bound under a device budget takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Residency {
    /// All its points stay on the device; one proof a pass.
    InCore,
    /// Its points stream from host memory as the plan says.
    Streamed(StreamPlan),
}

impl Residency {
    /// In-core where there is no budget, or where the key's points and one proof's
    /// buffers fit it; else streamed, with as many proofs a stream as fit, at most
    /// `max_batch`.
    pub fn decide(
        sets: &KeySets,
        budget: Option<u64>,
        max_batch: usize,
    ) -> Result<Self, StreamPlanError> {
        match budget {
            Some(b) if sets.key_bytes().saturating_add(sets.proof_bytes) > b => Ok(
                Residency::Streamed(StreamPlan::largest_batch(sets, b, max_batch)?),
            ),
            _ => Ok(Residency::InCore),
        }
    }

    /// The streaming plan, if it streams.
    pub fn plan(&self) -> Option<&StreamPlan> {
        match self {
            Residency::InCore => None,
            Residency::Streamed(p) => Some(p),
        }
    }
}

/// "in-core", or "streamed: batch 2, chunks of 1.0 MiB, A 8, B1 8, B2 15, C 8, H 8"
/// (with ", points in 3.0 MiB in the proofs' room" after the chunks' size where the
/// walk's chunks lie there).
impl fmt::Display for Residency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = match self {
            Residency::InCore => return f.write_str("in-core"),
            Residency::Streamed(p) => p,
        };
        write!(
            f,
            "streamed: batch {}, chunks of {}",
            p.batch,
            Bytes(p.chunk_bytes)
        )?;
        if p.in_room {
            write!(f, ", points in {} in the proofs' room", Bytes(p.walk_bytes))?;
        }
        for s in KeySet::ALL {
            write!(f, ", {} {}", s.name(), p.chunk_count(s))?;
        }
        Ok(())
    }
}

/// A byte count for messages: "512 B", "1.5 KiB", "3.0 GiB".
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
        if self.0 < 1024 {
            return write!(f, "{} B", self.0);
        }
        let mut v = self.0 as f64 / 1024.0;
        let mut unit = 0;
        while v >= 1024.0 && unit + 1 < UNITS.len() {
            v /= 1024.0;
            unit += 1;
        }
        write!(f, "{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests;
