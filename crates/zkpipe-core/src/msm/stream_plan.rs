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
}

/// What adding scalars against the chunks in flight takes on a device besides their
/// points: bytes per point of the longest chunk, and a fixed part. A GPU's MSM needs
/// digits per point and bucket arrays; the CPU adds in place (none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChunkScratch {
    /// Bytes per point of the longest chunk.
    pub per_point: u64,
    /// Bytes whatever the chunks' length.
    pub fixed: u64,
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
        }
    }

    /// The same sets, on a device that needs `scratch` beside the chunks in flight.
    pub fn with_scratch(self, scratch: ChunkScratch) -> Self {
        Self { scratch, ..self }
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
        "a device budget of {} cannot stream this key ({} of points): {batch} proof(s) keep {} on the device and two chunks of at least {} each need {} more",
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
    proof_bytes: u64,
    scratch: ChunkScratch,
    sets: [SetChunks; 5],
}

impl StreamPlan {
    /// The plan for `batch` proofs a stream under `budget` device bytes: chunks as large
    /// as what the batch and the scratch leave, shared by the two in flight, allows.
    pub fn new(sets: &KeySets, budget: u64, batch: usize) -> Result<Self, StreamPlanError> {
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
        let cut = |s: KeySet| {
            let len = sets.len(s);
            // ≥ 1: chunk_bytes holds min(len, MIN_CHUNK_POINTS) ≥ 1 point of each set.
            let per_chunk = (chunk_bytes / sets.point_bytes(s).max(1) as u64).max(1) as usize;
            SetChunks {
                len,
                count: len.div_ceil(per_chunk),
            }
        };
        Ok(Self {
            batch,
            chunk_bytes,
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

    /// Bytes of one chunk buffer (two are in flight).
    pub fn chunk_bytes(&self) -> u64 {
        self.chunk_bytes
    }

    /// Device bytes the plan uses at most: the batch's buffers, two chunk buffers and
    /// the scratch of the longest chunk.
    pub fn device_bytes(&self) -> u64 {
        let longest = KeySet::ALL
            .iter()
            .map(|&s| self.longest_chunk(s))
            .max()
            .unwrap_or(0) as u64;
        self.proof_bytes * self.batch as u64
            + 2 * self.chunk_bytes
            + self.scratch.fixed
            + self.scratch.per_point * longest
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

/// "in-core", or "streamed: batch 2, chunks of 1.0 MiB, A 8, B1 8, B2 15, C 8, H 8".
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
mod tests {
    use super::*;
    use zkpipe_formats::CurveId;

    /// A key of domain `n` with `n` signals, 4 of them public; BN254's sizes in memory.
    fn sets(n: usize) -> KeySets {
        let shape = KeyShape {
            curve: CurveId::Bn254,
            n_vars: n,
            n_public: 4,
            domain_size: n,
            n_coefficients: 0,
        };
        KeySets::new(&shape, 64, 128, 32, 0)
    }

    /// Every set's chunks cover it in order, none longer than a chunk buffer holds, and
    /// the plan within `budget`.
    fn check_cover(s: &KeySets, p: &StreamPlan, budget: u64) {
        for set in KeySet::ALL {
            let chunks = p.chunks(set);
            assert_eq!(chunks.len(), p.chunk_count(set), "{set:?}");
            let mut next = 0;
            for c in &chunks {
                assert_eq!(c.start, next, "{set:?}: {chunks:?}");
                assert!(!c.is_empty(), "{set:?}: {chunks:?}");
                assert!(
                    (c.len() * s.point_bytes(set)) as u64 <= p.chunk_bytes(),
                    "{set:?}: {c:?} over {} B",
                    p.chunk_bytes()
                );
                next = c.end;
            }
            assert_eq!(next, s.len(set), "{set:?}");
        }
        assert!(
            p.device_bytes() <= budget,
            "{} > {budget}",
            p.device_bytes()
        );
    }

    #[test]
    fn a_2_16_key_streams_in_8_chunks_or_more_under_a_small_budget() {
        let s = sets(1 << 16);
        assert_eq!(s.proof_bytes, 4 << 20); // 2 · 2^16 scalars of 32 B
                                            // 2^16 G1 points are 4 MiB: chunks of 512 KiB make 8 of each G1 set, 16 of B2.
        let budget = 2 * s.proof_bytes + 2 * (512 << 10);
        let p = StreamPlan::new(&s, budget, 2).unwrap();
        assert_eq!(p.chunk_bytes(), 512 << 10);
        assert_eq!(p.device_bytes(), budget);
        for set in [KeySet::A, KeySet::B1, KeySet::H] {
            assert_eq!(p.chunk_count(set), 8, "{set:?}");
        }
        assert_eq!(p.chunk_count(KeySet::C), 8); // 2^16 − 5 points
        assert_eq!(p.chunk_count(KeySet::B2), 16);
        check_cover(&s, &p, budget);
        let r = Residency::decide(&s, Some(budget), 2).unwrap();
        assert_eq!(r.plan(), Some(&p));
        assert_eq!(
            r.to_string(),
            "streamed: batch 2, chunks of 512.0 KiB, A 8, B1 8, B2 16, C 8, H 8"
        );
    }

    #[test]
    fn the_budget_is_exact_at_the_boundaries() {
        let s = sets(1000);
        // In-core exactly where the points and one proof fit.
        let whole = s.key_bytes() + s.proof_bytes;
        assert_eq!(
            Residency::decide(&s, Some(whole), 4).unwrap(),
            Residency::InCore
        );
        assert_eq!(Residency::decide(&s, None, 4).unwrap(), Residency::InCore);
        assert!(Residency::decide(&s, Some(whole - 1), 4)
            .unwrap()
            .plan()
            .is_some());
        // The smallest chunk: 64 G2 points, twice, beside the batch's buffers.
        assert_eq!(s.min_chunk_bytes(), 64 * 128);
        let least = 3 * s.proof_bytes + 2 * 64 * 128;
        let p = StreamPlan::new(&s, least, 3).unwrap();
        assert_eq!(p.chunk_bytes(), 64 * 128);
        assert_eq!(p.chunk_count(KeySet::B2), 16); // ⌈1000 / 64⌉
        assert_eq!(p.chunk_count(KeySet::A), 8); // ⌈1000 / 128⌉
        check_cover(&s, &p, least);
        let err = StreamPlan::new(&s, least - 1, 3).unwrap_err();
        assert_eq!(
            err,
            StreamPlanError::DoesNotFit {
                budget: least - 1,
                key: s.key_bytes(),
                batch: 3,
                proofs: 3 * s.proof_bytes,
                min_chunk: 64 * 128,
                scratch: 0,
            }
        );
        // The largest batch that fits is taken, never more than asked.
        assert_eq!(
            StreamPlan::largest_batch(&s, least - 1, 8).unwrap().batch(),
            2
        );
        assert_eq!(StreamPlan::largest_batch(&s, least, 3).unwrap().batch(), 3);
        assert_eq!(StreamPlan::largest_batch(&s, least, 2).unwrap().batch(), 2);
    }

    #[test]
    fn one_point_sets_are_one_chunk() {
        // One signal (the constant): A, B1, B2 hold one point, C none.
        let s = sets(1);
        assert_eq!(s.points, [1, 1, 1, 0, 1]);
        assert_eq!(s.min_chunk_bytes(), 128);
        let p = StreamPlan::new(&s, s.proof_bytes + 2 * 128, 1).unwrap();
        for set in [KeySet::A, KeySet::B1, KeySet::B2, KeySet::H] {
            assert_eq!(p.chunks(set), vec![0..1], "{set:?}");
        }
        assert_eq!(p.chunks(KeySet::C), Vec::<Range<usize>>::new());
        check_cover(&s, &p, s.proof_bytes + 2 * 128);
        assert!(StreamPlan::new(&s, s.proof_bytes + 2 * 128 - 1, 1).is_err());
    }

    #[test]
    fn chunks_are_as_large_as_the_budget_allows_and_no_larger_than_the_largest_set() {
        let s = sets(1000);
        // A generous budget (the key does not fit it, but any one set does): one chunk each.
        let p = StreamPlan::new(&s, s.key_bytes(), 1).unwrap();
        check_cover(&s, &p, s.key_bytes());
        assert_eq!(p.chunk_bytes(), s.set_bytes(KeySet::B2));
        for set in KeySet::ALL {
            assert_eq!(p.chunk_count(set), 1, "{set:?}");
        }
        // Uneven lengths differ by one at most.
        let budget = s.proof_bytes + 2 * 300 * 64;
        let p = StreamPlan::new(&s, budget, 1).unwrap();
        let lens: Vec<usize> = p.chunks(KeySet::A).iter().map(|c| c.len()).collect();
        assert_eq!(lens, vec![250; 4]);
        let lens: Vec<usize> = p.chunks(KeySet::C).iter().map(|c| c.len()).collect();
        assert_eq!(lens, vec![249, 249, 249, 248]); // 995 private signals
        check_cover(&s, &p, budget);
    }

    #[test]
    fn a_batch_that_does_not_fit_is_refused_in_one_line_naming_sizes() {
        let s = sets(1 << 16);
        let budget = 3 << 20;
        // 2 proofs' scalars alone are 8 MiB.
        let err = StreamPlan::new(&s, budget, 2).unwrap_err();
        let msg = err.to_string();
        assert_eq!(
            msg,
            "a device budget of 3.0 MiB cannot stream this key (24.0 MiB of points): 2 proof(s) \
             keep 8.0 MiB on the device and two chunks of at least 8.0 KiB each need 16.0 KiB more"
        );
        assert!(!msg.contains('\n'));
        assert_eq!(
            StreamPlan::largest_batch(&s, budget, 4).unwrap_err(),
            StreamPlan::new(&s, budget, 1).unwrap_err()
        );
        assert_eq!(
            StreamPlan::new(&s, budget, 0).unwrap_err(),
            StreamPlanError::NoProofs
        );
        assert_eq!(
            StreamPlan::largest_batch(&s, budget, 0).unwrap_err(),
            StreamPlanError::NoProofs
        );
    }

    #[test]
    fn a_devices_scratch_shrinks_the_chunks_and_stays_in_the_budget() {
        let s = sets(1 << 16).with_scratch(ChunkScratch {
            per_point: 192,
            fixed: 1 << 20,
        });
        // Per G1 point of a chunk: 2 × 64 B in flight and 192 B of scratch.
        let budget = 2 * s.proof_bytes + (1 << 20) + (1 << 17) * 5;
        let p = StreamPlan::new(&s, budget, 2).unwrap();
        assert_eq!(p.chunk_bytes(), 1 << 17); // 2^11 G1 points
        assert_eq!(p.longest_chunk(KeySet::A), 1 << 11);
        assert_eq!(p.chunk_count(KeySet::A), 32);
        assert_eq!(p.device_bytes(), budget);
        check_cover(&s, &p, budget);
        assert!(StreamPlan::new(&s, budget - 1, 2).unwrap().chunk_bytes() < 1 << 17);
        // Where the batch and the fixed scratch leave too little, the refusal counts it.
        let err = StreamPlan::new(&s, 2 * s.proof_bytes + (1 << 20), 2).unwrap_err();
        assert!(err.to_string().ends_with("each need 1.0 MiB more"), "{err}");
    }
}
