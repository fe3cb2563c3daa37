//! What a key of a given shape does on a GPU and needs there, from its header alone: its
//! [`Caps`] ([`caps`], which [`crate::CudaDevices`] and [`crate::CudaBound`] both report)
//! and its device memory (resident key, one proof in flight).

use crate::options::{ConstantMode, CudaOptions, LabSwitches};
use zkpipe_core::msm::stream_plan::{ChunkScratch, KeySets, LongChunkRate};
use zkpipe_core::{BindOptions, Bls12_381, Bn254, Caps, Curve, KeyShape};
use zkpipe_core::{Residency, StreamPlan, StreamPlanError};
use zkpipe_formats::CurveId;

/// What decides a key's plan on a GPU besides its shape: the device set's lab switches
/// ([`CudaOptions`]) and the key's own options ([`BindOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Tuning {
    pub(crate) lab: LabSwitches,
    /// Whether the key's MSMs do constant work.
    pub(crate) constant_work: bool,
}

impl Tuning {
    /// A key bound with `bind` on a device set made with `cuda`.
    pub(crate) fn new(cuda: &CudaOptions, bind: &BindOptions) -> Self {
        Self {
            lab: cuda.lab(),
            constant_work: bind.constant_work,
        }
    }
}

/// Keys whose domain is at most this prove several proofs per device pass (batched MSMs);
/// larger ones fill the GPU alone. Measured on an H100 (lab/experiments/010-batched-msm.md): at
/// 2^14 a batch of 4 already costs half of sppark's per-proof time; at 2^16 batches under ~8 lose
/// (BLS12-381 G1: 9.2 ms per proof at k = 4 against sppark's 6.9 ms).
pub(crate) const BATCH_MAX_DOMAIN: usize = 1 << 15;

/// A lone proof of a key whose domain is at most this runs its MSMs on the batched
/// kernels too (a batch of one): their chains are short, while sppark's MSM costs ~3 ms a
/// call at any size below 2^16. On an H100 a lone G1 MSM took 0.72 / 1.25 / 2.94 / 8.42 ms
/// there at 2^13 / 2^16 / 2^18 / 2^20 against sppark's 2.92 / 4.25 / 12.10 / 12.62
/// (lab/experiments/019-latency-floor.md). Larger domains (not measured) keep sppark's MSM, unless
/// the key's MSMs do constant work (the path their checks cover, and the only one with
/// [`ConstantMode::Full`]). [`LabSwitches::lone_msm`] forces one path.
pub(crate) const LONE_BATCH_MAX_DOMAIN: usize = 1 << 20;

/// Whether a lone proof of a key of `domain` runs on the batched kernels.
pub(crate) fn lone_on_batch(t: &Tuning, domain: usize) -> bool {
    t.constant_work || t.lab.lone_msm.unwrap_or(domain <= LONE_BATCH_MAX_DOMAIN)
}

/// Whether a key of `domain` proves on the batched kernels: in batches, or alone
/// ([`lone_on_batch`]).
fn on_batch_kernels(t: &Tuning, domain: usize) -> bool {
    domain <= BATCH_MAX_DOMAIN || lone_on_batch(t, domain)
}

/// How constant-work MSMs (`zkpipe_core::BindOptions::constant_work`) are kept constant
/// on the GPU. By default by masking (`crate::enabled::mask`): the MSMs read w + m and
/// h + m' for a random mask drawn at binding, so their scalars look uniformly random for
/// any witness. [`ConstantMode::Full`] instead turns the batched plan's shortcuts off
/// (every digit an entry, every piece in every bit sum),
/// [`ConstantMode::Both`] does both (lab switches for comparing them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConstantWork {
    /// Whether a bound key draws a mask.
    pub(crate) mask: bool,
    /// Whether the plans turn their value-dependent shortcuts off.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) full_width: bool,
}

/// The constant-work mode, or `None` where the key's MSMs do not do constant work.
pub(crate) fn constant_work(t: &Tuning) -> Option<ConstantWork> {
    let (mask, full_width) = match t.lab.constant {
        ConstantMode::Mask => (true, false),
        ConstantMode::Full => (false, true),
        ConstantMode::Both => (true, true),
    };
    t.constant_work.then_some(ConstantWork { mask, full_width })
}

/// Whether a key's w MSMs take the bit path where its sppark MSMs would run (a large
/// key's lone proof, a streamed key's walk): a witness of 0s and 1s summed as a bitmap,
/// its few other values on the host (`crate::enabled::bits`). Not for constant-work keys,
/// whose MSMs must not depend on the values; off with [`LabSwitches::no_bits`].
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn takes_bits(t: &Tuning) -> bool {
    !t.lab.no_bits && !t.constant_work
}

/// Device bytes of one proof's bitmap of w's 1s (a word per 32 values and two zero words
/// past the end, which a sum may read) and the bit path's stream-ordered scratch (the
/// split's other values, a sum's block sums: under 1 MiB).
pub(crate) fn bits_bytes(n_vars: usize) -> usize {
    bitmap_bytes(n_vars) + (1 << 20)
}

/// Device bytes of one proof's bitmap of w's 1s ([`bits_bytes`]).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn bitmap_bytes(n_vars: usize) -> usize {
    (n_vars.div_ceil(32) + 2) * 4
}

/// Whether a key binds with window tables (fixed-base precomputation: [`table_wbits`]):
/// `resident` ones (`CompiledKey::is_resident`) that prove on the batched kernels. On
/// unless [`LabSwitches::no_tables`].
pub(crate) fn binds_tables(t: &Tuning, resident: bool, domain: usize) -> bool {
    resident && !t.lab.no_tables && on_batch_kernels(t, domain)
}

/// The window width of a table for a set of `n` points (padding included) and scalars
/// of `bits` bits: the c minimizing a plan's additions for one proof with the table, E +
/// (c/2)·(E/L + min(2^c, E)), where E = n·⌈bits/c⌉ entries (one addition each) and the
/// bit sums add each piece (L entries, or one bucket's) c/2 times on average. With one
/// group of buckets per proof instead of one per window, the bucket side costs ~⌈bits/c⌉
/// times less, so the width is wider than a plan without a table takes (batch_msm.cuh,
/// zkp_bm_wbits): 12 at 2^13, 15 at 2^16, 17 at 2^20 points, for 22, 17, 15 rows. (With
/// runs a piece costs about 2 + 2c/R additions on the bucket side
/// instead; that model picks the same widths at 2^14 and 2^20, so this one stays.)
pub(crate) fn table_wbits(n: usize, bits: u32) -> u32 {
    let n = n.max(1) as f64;
    let piece = default_piece_len(1, n as usize) as f64;
    let cost = |c: u32| {
        let entries = n * table_rows(c, bits) as f64;
        entries + 0.5 * c as f64 * (entries / piece + entries.min((1u64 << c) as f64))
    };
    (4..=20)
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
        .unwrap_or(16)
}

/// Rows of a window table of width `wbits` (0: no table, one row) for `bits`-bit scalars.
pub(crate) fn table_rows(wbits: u32, bits: u32) -> usize {
    if wbits == 0 {
        1
    } else {
        bits.div_ceil(wbits) as usize
    }
}

/// Entries one GPU thread sums per piece of a bucket: about √(k·n / 64), a power of two
/// in 8..=64. The piece sums' serial chain is L additions and the bit sums' is about
/// (k·n / L) / (128 threads × splits), so this balances the two; a batch of many proofs
/// takes longer pieces (fewer partial sums in memory, where latency matters less).
///
/// [`LabSwitches::piece`] (8..=1024) forces L, for measuring the trade-off.
pub(crate) fn piece_len(lab: &LabSwitches, k: usize, n: usize) -> u32 {
    let forced = lab.piece.filter(|l| (8..=1024).contains(l));
    forced.unwrap_or_else(|| default_piece_len(k, n))
}

/// The piece length of a plan of k vectors of n scalars, for sets with a window table
/// (`tabled`) or without: with one, pieces twice as long as [`piece_len`] gives (the
/// L of 4k vectors). A proof's entries then fall into one group of buckets, ~⌈bits/c⌉
/// times fuller, and longer pieces mean fewer partial sums for the bit sums to add. On an
/// H100 (lab/experiments/021-window-tables.md, lone MSMs with the table) L = 64 instead of 32 at
/// 2^16 took 1.18 → 1.06 ms (BN254 G1), 2.56 → 2.11 (G2), 2.38 → 2.02 (BLS12-381 G1); at 2^13,
/// L = 16 was faster than 8 and 64.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn plan_piece_len(lab: &LabSwitches, k: usize, n: usize, tabled: bool) -> u32 {
    piece_len(lab, if tabled { 4 * k } else { k }, n)
}

/// Whether a plan orders its pieces longest first for the piece sums (batch_msm_kernels.cuh,
/// zkp_bm_sum_pieces): a warp's 32 threads each sum one piece, and pieces (whole buckets
/// of ~Poisson-many entries, or a big bucket's last, short piece) differ in length, so
/// in plan order every warp waits for its longest one (Nsight Compute at 2^14, k = 16:
/// 21 of 32 threads active in the G1 piece sums, 11 in G2's,
/// lab/experiments/030-ordered-pieces.md). On unless
/// [`LabSwitches::pieces_in_plan_order`].
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn orders_pieces(lab: &LabSwitches) -> bool {
    !lab.pieces_in_plan_order
}

/// Pieces per run (batch_msm_kernels.cuh, zkp_bm_runs) in a plan of k vectors of n scalars:
/// each run's running sum leaves two entries for the bit sums instead of one per piece.
/// Longer runs leave fewer entries but are longer serial chains and fewer threads, and
/// in a sparse group (few entries per bucket) their digit steps are double-and-adds, so
/// small plans take short runs: 4 up to k·n = 2^14, 8 up to 2^17, 16 up to 2^19, then
/// 32 (lab/experiments/024-running-sums-over-runs.md on an H100: run 1 timed R = 2, 4, 8, 16 per
/// size and kept 4 where a witness-like distribution at 2^13 lost with 8; run 4 timed 32 against 16
/// in whole proofs at 2^20, 1–2% faster on both curves).
///
/// [`LabSwitches::run`] (0 or 2..=64) forces R; 0 turns runs off, so the bit sums read
/// the pieces themselves.
pub(crate) fn run_len(lab: &LabSwitches, k: usize, n: usize) -> u32 {
    let forced = lab.run.filter(|&r| r == 0 || (2..=64).contains(&r));
    forced.unwrap_or(match k.max(1) * n.max(1) {
        0..=0x4000 => 4,
        0x4001..=0x20000 => 8,
        0x20001..=0x80000 => 16,
        _ => 32,
    })
}

/// The widest digit step a run takes (batch_msm_kernels.cuh, zkp_bm_segment_flags): a
/// wider one starts a new run. A step of g costs a run's chain ~2·log₂ g additions, a new
/// run two more entries for the bit sums (which add in parallel), so runs stop at steps
/// over 4, and a run costs at most ~3 additions a piece. Where a group is dense (random
/// scalars: every digit present) nothing changes; where it is sparse, the chain is cut: a
/// batch of 64 proofs of a 2^14 key with a SHA-256 circuit's values (six values neither 0
/// nor 1 a proof, 120 entries spread over 8,192 digits) had runs of 32 steps of ~68,
/// ~400 additions each, 3.0 ms of a G1 MSM's pass in one kernel
/// (lab/experiments/042o-sparse-runs.md).
///
/// [`LabSwitches::run_gap`] forces it (0: any step, as before).
pub(crate) fn run_gap(lab: &LabSwitches) -> u32 {
    lab.run_gap.unwrap_or(RUN_GAP)
}

/// [`run_gap`]'s default.
const RUN_GAP: u32 = 4;

/// [`piece_len`] unless forced: what the table width and memory estimates assume.
fn default_piece_len(k: usize, n: usize) -> u32 {
    let target = ((k.max(1) * n.max(1)) as f64 / 64.0).sqrt();
    let mut len = 8u32;
    while len < 64 && (2 * len) as f64 <= target {
        len *= 2;
    }
    len
}

/// The most proofs one batched device pass takes (unless [`LabSwitches::batch`]). A pass
/// has a fixed cost (plans, launches, the host's sums) that a larger batch shares: on one
/// H200 under 192–256 clients of a 2^14 key, passes of up to 64 proved 2,203–2,227
/// proofs/s against 1,678–1,743 with 32 (two hosts, six pairs of six), and at 64 clients
/// no slower (lab/experiments/042k-pass-size.md).
pub(crate) const BATCH_MAX_PROOFS: usize = 64;

/// The most proofs one batched pass of an in-core key takes: [`BATCH_MAX_PROOFS`], or the
/// lab's own.
pub(crate) fn batch_max_proofs(lab: &LabSwitches) -> usize {
    lab.batch.unwrap_or(BATCH_MAX_PROOFS)
}

/// What a key of this shape bound to a GPU does in its pass: the reduce (unless
/// [`reduces_on_gpu`] is off), always [B]₂, batches of up to [`BATCH_MAX_PROOFS`]
/// proofs where the domain is at most [`BATCH_MAX_DOMAIN`], and the witness read as
/// field elements (unless [`converts_on_host`]). A streamed key ([`residency`]) batches
/// as its plan says; where it reduces on the GPU its matrices cross in chunks of rows
/// with its points (`crate::enabled::streamed_reduce`).
pub(crate) fn caps(lab: &LabSwitches, shape: &KeyShape, residency: &Residency) -> Caps {
    let in_core = Caps {
        reduces: reduces_on_gpu(lab),
        g2: true,
        batch_limit: if shape.domain_size <= BATCH_MAX_DOMAIN {
            batch_max_proofs(lab)
        } else {
            1
        },
        montgomery_w: !converts_on_host(lab),
    };
    match residency.plan() {
        None => in_core,
        Some(plan) => Caps {
            batch_limit: plan.batch(),
            ..in_core
        },
    }
}

/// What a streamed key's pass needs per point of the longest chunk it adds against,
/// besides the points (sppark 0.1.16's `msm_t`, pippenger.cuh): the digits and sort
/// temporaries of one MSM at a time, (16 + 4 × windows) bytes per point of a stride, where
/// a stride is a quarter of the chunk from 2^18 / 1.5 points on, half of it from 2^17 / 1.5
/// and all of a shorter one (26 windows there: 120 bytes a point); and the buckets of the
/// two chunk sets, fixed up to 2^19 / 1.5 points ([`STREAM_SCRATCH_FIXED`]), then about
/// windows × 1.5 / 512 × (bucket + 4) bytes a point each. Rounded up from the largest, 120.
const STREAM_SCRATCH_PER_POINT: u64 = 128;

/// The same for chunks of at least 2^18 points (a quarter a stride): at most 30 bytes of
/// digits and 2 × 30 of buckets a BLS12-381 G2 point (26 windows of 388-byte buckets and
/// histogram), per point of the longest chunk, a G1 chunk (a G2 chunk of the same bytes
/// has half the points): at most 60 bytes (BLS12-381 G1: 30 + 2 × 15), 50 on BN254.
const STREAM_SCRATCH_LONG: LongChunkRate = LongChunkRate {
    from: 1 << 18,
    per_point: 64,
};

/// The fixed part: two chunk sets' buckets at sppark's smallest window width (26 windows
/// of 512 BLS12-381 G2 buckets, 5.4 MB each), rounded up.
const STREAM_SCRATCH_FIXED: u64 = 16 << 20;

/// A key's point sets as a GPU streams them: points as the device holds them (x, y),
/// 32-byte scalars, and per proof its quotient buffers (five domain-size vectors, h
/// among them) besides the w and h the sets count; beside the chunks, sppark's MSM state.
/// The quotient's a, b, c (three of its vectors, in one piece) lie idle once h is made:
/// the points' walk puts its chunks there ([`zkpipe_core::StreamPlan::walk_in_room`]),
/// unless [`LabSwitches::walk_beside`].
pub(crate) fn gpu_key_sets(lab: &LabSwitches, shape: &KeyShape) -> KeySets {
    let fp = match shape.curve {
        CurveId::Bn254 => 32,
        CurveId::Bls12_381 => 48,
    };
    let quotient = (4 * shape.domain_size * 32 + bits_bytes(shape.n_vars)) as u64;
    let room = match lab.walk_beside {
        true => 0,
        false => 3 * shape.domain_size as u64 * 32,
    };
    KeySets::new(shape, 2 * fp, 4 * fp, 32, quotient)
        .with_scratch(ChunkScratch {
            per_point: STREAM_SCRATCH_PER_POINT,
            fixed: STREAM_SCRATCH_FIXED,
            long: Some(STREAM_SCRATCH_LONG),
        })
        .with_walk_room(room)
}

/// Which path a key of `shape` takes on a GPU of `budget` bytes: in-core where its
/// resident copy and one proof fit ([`device_bytes_for_shape`], with window tables where
/// `tables`), else streamed with as many proofs a stream as fit, at most `max_batch`;
/// or why it cannot stream.
pub(crate) fn residency(
    t: &Tuning,
    shape: &KeyShape,
    tables: bool,
    budget: u64,
    max_batch: usize,
) -> Result<Residency, StreamPlanError> {
    if device_bytes_for_shape(t, shape, tables) <= budget {
        return Ok(Residency::InCore);
    }
    StreamPlan::largest_batch(&gpu_key_sets(&t.lab, shape), budget, max_batch.max(1))
        .map(Residency::Streamed)
}

/// Whether the host turns the witness into standard-form scalars before the upload. By
/// default the GPU reads the field elements as they are (Montgomery form): the reduce and
/// the MSMs convert as they read, and the host skips a pass over the witness (3.1 ms at
/// 2^20 on 16 cores). [`LabSwitches::host_scalars`] compares the two.
pub(crate) fn converts_on_host(lab: &LabSwitches) -> bool {
    lab.host_scalars
}

/// Whether a, b, c are computed on the GPU from the uploaded witness (the default: the
/// key's A and B matrices are then resident there too). [`LabSwitches::host_reduce`]
/// computes them on the CPU and uploads them instead.
pub(crate) fn reduces_on_gpu(lab: &LabSwitches) -> bool {
    !lab.host_reduce
}

/// Device memory one key needs on the GPU, in bytes (an upper estimate): its resident
/// points (with their window tables where `tables`, see [`binds_tables`]) and matrices,
/// sppark's buckets per point set, the quotient buffers, and the scratch of the largest
/// MSM. A, B₁, B₂ have `n_vars` points, C has `n_vars − n_public − 1`, H has
/// `domain_size`; A and B have `n_coefficients` entries. Binding refuses a key whose need
/// exceeds the GPU's free memory.
pub(crate) fn device_bytes_for_shape(t: &Tuning, shape: &KeyShape, tables: bool) -> u64 {
    let KeyShape {
        n_vars,
        n_public,
        domain_size: domain,
        n_coefficients: coefficients,
        ..
    } = *shape;
    let c = n_vars.saturating_sub(n_public + 1);
    let sets = [n_vars, n_vars, c, domain];
    let points = match shape.curve {
        CurveId::Bn254 => bytes_for::<Bn254>(t, sets, n_vars, domain, tables),
        CurveId::Bls12_381 => bytes_for::<Bls12_381>(t, sets, n_vars, domain, tables),
    };
    let matrices = matrices_bytes(&t.lab, coefficients, domain);
    (points + matrices + mask_bytes(t, n_vars, domain)) as u64
}

/// The constant-work mask (a value per signal and per domain row) where the key's MSMs
/// do constant work by masking (`crate::enabled::mask`).
fn mask_bytes(t: &Tuning, n_vars: usize, domain: usize) -> usize {
    if constant_work(t).is_some_and(|c| c.mask) {
        (n_vars + domain) * 32
    } else {
        0
    }
}

/// Device memory each proof in flight on a key takes beyond the first (whose buffers
/// [`device_bytes_for_shape`] counts): for the engine's per-partition reservation.
pub(crate) fn device_bytes_per_pass(t: &Tuning, shape: &KeyShape) -> u64 {
    let (n_vars, domain) = (shape.n_vars, shape.domain_size);
    pass_bytes(t, n_vars, domain, n_vars.max(domain)) as u64
}

/// A and B resident for the reduce on the GPU: row offsets, and a column and a value per
/// entry (none where [`reduces_on_gpu`] is off).
fn matrices_bytes(lab: &LabSwitches, coefficients: usize, rows: usize) -> usize {
    if reduces_on_gpu(lab) {
        2 * (rows + 1) * 4 + coefficients * (4 + 32)
    } else {
        0
    }
}

fn bytes_for<E: Curve>(
    t: &Tuning,
    g1_sets: [usize; 4],
    g2_points: usize,
    n: usize,
    tables: bool,
) -> usize {
    use ark_ff::PrimeField;
    let g1 = std::mem::size_of::<E::G1Affine>();
    let g2 = std::mem::size_of::<E::G2Affine>();
    let sets = g1_sets.map(|len| (len, g1));
    let bits = E::ScalarField::MODULUS_BIT_SIZE;
    let mut bytes: usize = sets
        .iter()
        .chain(std::iter::once(&(g2_points, g2)))
        .map(|&(len, affine)| len * affine + buckets_bytes(len, affine))
        .sum();
    // The window tables' rows past the first (on the device an affine point is its two
    // coordinates, no larger than arkworks' layout). C's table covers its padding too, so
    // every set but H spans w.
    if tables {
        let w = g1_sets[0];
        let extra = |len: usize, affine: usize| {
            (table_rows(table_wbits(len, bits), bits) - 1) * len * affine
        };
        bytes += 3 * extra(w, g1) + extra(n, g1) + extra(w, g2);
    }
    bytes += pass_bytes(
        t,
        g1_sets[0],
        n,
        g1_sets.iter().copied().max().unwrap_or(0).max(g2_points),
    );
    bytes + bytes / 20 + (64 << 20)
}

/// Device memory of one proof in flight: the quotient's buffers (a, b, c, scratch, coset
/// powers), the witness uploaded once for its MSMs with its bitmap ([`bits_bytes`]), and
/// the scalars and digits of its five MSMs, which run at once.
fn pass_bytes(t: &Tuning, n_vars: usize, n: usize, largest: usize) -> usize {
    let batched = if on_batch_kernels(t, n) {
        batch_bytes(&t.lab, n_vars, n)
    } else {
        0
    };
    5 * n * 32
        + n_vars * 32
        + bits_bytes(n_vars)
        + 5 * largest * (32 + 4 * windows(largest).0)
        + batched
}

/// One proof's share of a batched pass's scratch (an upper estimate): its bucket digits
/// (key, index, sorted copies and sort temp) for w and h, and its summed pieces in five
/// MSMs at once (one per present bucket, about 2·n of them at the chosen window width,
/// plus one per L entries, L as a lone proof's plan takes it; XYZZ points, 256 bytes on
/// average over 4 G1 + 1 G2), plus the runs' two entries per R pieces and per digit step
/// wider than [`run_gap`] (at most one per gap + 1 bucket keys), and the runs' segment
/// slots (five u32 a piece in each of the w and h plans; counted as 80 bytes a piece).
fn batch_bytes(lab: &LabSwitches, n_vars: usize, n: usize) -> usize {
    // ⌈255 / c⌉: the plan's cost model (batch_msm.cuh, zkp_bm_wbits) takes c ≥ 8 from
    // 2^12 scalars on, and c ≥ 4 always.
    let len = n_vars.max(n);
    let windows = if len >= 1 << 12 { 32 } else { 64 };
    let items = windows * (n_vars + n);
    let piece = default_piece_len(1, len) as usize;
    let pieces = items / piece + 2 * len;
    // A lone proof's runs: the shortest a plan of n scalars takes, so the most entries.
    let (run_entries, segment_bytes) = match run_len(lab, 1, len) {
        0 => (0, 0),
        r => {
            let breaks = match run_gap(lab) {
                0 => 0,
                g => plan_keys(len).div_ceil(g as usize + 1),
            };
            (2 * (pieces.div_ceil(r as usize) + breaks), 80 * pieces)
        }
    };
    items * 28 + 5 * (pieces + run_entries) * 256 + segment_bytes
}

/// Bucket keys of one proof in a plan of `n` scalars (an upper estimate): ⌈255/c⌉ groups
/// of 2^c without a window table (c as batch_msm.cuh's zkp_bm_wbits takes it), or one
/// group of 2^c with one ([`table_wbits`]), whichever is more.
fn plan_keys(n: usize) -> usize {
    let cost =
        |c: u32| 255u32.div_ceil(c) as f64 * (n as f64 + 0.5 * c as f64 * (1u64 << c) as f64);
    let c = (4..=16u32)
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
        .unwrap_or(16);
    let untabled = 255usize.div_ceil(c as usize) << c;
    untabled.max(1 << table_wbits(n, 255))
}

/// sppark's window count and width for an MSM of `n` points.
fn windows(n: usize) -> (usize, usize) {
    let lg = |x: usize| (usize::BITS - 1 - x.max(1).leading_zeros()) as usize;
    let wbits = if n > 192 {
        (lg(n + n / 2).saturating_sub(8)).clamp(10, 18)
    } else {
        10
    };
    (255usize.div_ceil(wbits), wbits)
}

/// sppark's bucket array (XYZZ buckets, twice an affine point) and histogram.
fn buckets_bytes(n: usize, affine: usize) -> usize {
    let (nwins, wbits) = windows(n);
    let row = 1usize << (wbits - 1);
    nwins * row * (2 * affine + 4) + 132 * 1024 * 2 * affine
}

#[cfg(test)]
mod tests;
