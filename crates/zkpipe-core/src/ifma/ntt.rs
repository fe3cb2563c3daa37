//! The quotient's change of basis ([`crate::quotient::coset`]) in IFMA lanes: the same
//! inverse NTT (decimation in frequency), shift and forward NTT (decimation in time), eight
//! butterflies per instruction sequence.
//!
//! Why: the scalar transform spends nearly all its time in arkworks' Montgomery
//! multiplication (~20 ns per product on the devbox); eight lanes of 52-bit limbs do eight
//! products in far less (lab/experiments/028-quotient-ntt.md).
//!
//! ```text
//!  element a: arkworks' limbs of a·R mod p (R = 2^256), regrouped into 5 limbs of 52 bits;
//!      never converted: lane products are Montgomery products for R' = 2^260, and every
//!      constant (twiddle, shift) is stored as c·R' mod p, so a·R ⊗ c·R' = (a·c)·R
//!  group: 8 consecutive elements, limb-major ([`Group`]); a level of half-size m ≥ 8 pairs
//!      group k with group k + m/8, each lane with its own twiddle
//!  octet: 8 groups (64 elements), transposed so that vector l holds element l of each
//!      group; the levels m = 4, 2, 1 (both transforms) and the shift run on it vertically,
//!      with one twiddle per vector
//! ```

use std::arch::x86_64::*;

use rayon::prelude::*;

use super::field::{fe_add, fe_mul, fe_sub, from52, splat, to52, vmod, Fe, Modulus, VMod, LANES};
use crate::curve::MontLimbs;

/// Limbs of 52 bits per element (both scalar fields have ≤ 255 bits).
const L: usize = 5;

/// Eight elements, limb-major: `g[j][l]` is limb j of element l.
type Group = [[u64; LANES]; L];

/// Elements one task transforms alone (as in the scalar transform).
const BLOCK: usize = 1 << 12;

/// Groups per task in a shared level.
const SPAN: usize = 1 << 7;

/// The smallest domain the lanes take: one octet.
pub(crate) const MIN_SIZE: usize = 64;

/// One domain's constants in lane form.
pub(crate) struct LaneNtt {
    modulus: Modulus<L>,
    n: usize,
    /// Forward twiddles: level m ≥ 8 in groups m/8 .. m/4 (the scalar table's layout).
    fwd: Vec<Group>,
    /// Inverse twiddles, the same layout.
    inv: Vec<Group>,
    /// Levels 1, 2, 4: `small[m + j]` (index 0 unused), forward and inverse.
    fwd_small: [[u64; L]; 8],
    inv_small: [[u64; L]; 8],
    /// The shift, in octet order: octet b's vector l, lane g, is element 64b + 8g + l.
    shift: Vec<Group>,
}

impl LaneNtt {
    /// The transform for the domain ⟨`omega`⟩ of size `n` (a power of two, at least
    /// [`MIN_SIZE`]) and the coset `shift`·⟨`omega`⟩. None where this CPU has no IFMA.
    ///
    /// Every table is made in lanes, one lane product per eight entries: a level's
    /// twiddles are a geometric sequence, and each octet's shifts are one fixed pattern
    /// times the octet's own factor (below).
    pub(crate) fn new<F: MontLimbs>(n: usize, omega: F, shift: F) -> Option<Self> {
        if !super::available() || n < MIN_SIZE || !n.is_power_of_two() {
            return None;
        }
        let modulus = Modulus::<L>::of::<F>();
        let r_prime = F::from(2u64).pow([52 * L as u64]);
        // c·R' mod p in 52-bit limbs: a constant's lane form.
        let lane = |c: F| -> [u64; L] { to52((c * r_prime).into_bigint().as_ref()) };
        let omega_inv = omega.inverse().expect("a root of unity is not zero");
        let n_inv = F::from(n as u64)
            .inverse()
            .expect("n < field characteristic");
        let small = |w: F| -> [[u64; L]; 8] {
            let mut t = [[0; L]; 8];
            for m in [1usize, 2, 4] {
                let w_2m = w.pow([(n / (2 * m)) as u64]);
                for j in 0..m {
                    t[m + j] = lane(w_2m.pow([j as u64]));
                }
            }
            t
        };
        // The shift of element e = 64b + 8g + l (octet b, vector l, lane g) is
        // shift^rev(e)/n, and rev(e) = rev₃(l)·n/8 + rev₃(g)·n/64 + rev(b): the same 8 × 8
        // pattern in every octet, times the octet's own factor.
        let bits = n.trailing_zeros();
        let pattern: [Group; 8] = std::array::from_fn(|l| {
            let mut g = [[0; LANES]; L];
            for lane_g in 0..LANES {
                let e = reverse_bits(l, 3) * (n / 8) + reverse_bits(lane_g, 3) * (n / 64);
                let limbs = lane(shift.pow([e as u64]));
                for j in 0..L {
                    g[j][lane_g] = limbs[j];
                }
            }
            g
        });
        // Allocated once, then written in place on every thread.
        let mut shift_table = vec![[[0; LANES]; L]; n / LANES];
        shift_table
            .par_chunks_mut(8)
            .enumerate()
            .for_each(|(b, octet)| {
                let factor = lane(shift.pow([reverse_bits(b, bits - 6) as u64]) * n_inv);
                // SAFETY: `available()` checked the CPU above.
                unsafe { scale_groups(&pattern, &factor, &modulus, octet) }
            });
        Some(LaneNtt {
            fwd: twiddle_table(n, omega, &lane, &modulus),
            inv: twiddle_table(n, omega_inv, &lane, &modulus),
            fwd_small: small(omega),
            inv_small: small(omega_inv),
            shift: shift_table,
            modulus,
            n,
        })
    }

    /// Evaluations on the domain → on the coset, in place (as the scalar transform).
    pub(crate) fn to_coset<F: MontLimbs>(&self, v: &mut [F]) {
        let n = self.n;
        assert_eq!(v.len(), n, "evaluations of the wrong domain size");
        let mut x: Vec<Group> = v
            .par_chunks(LANES)
            .map(|xs| {
                let mut g = [[0; LANES]; L];
                pack(xs, &mut g);
                g
            })
            .collect();
        let block = n.min(BLOCK) / LANES;
        let groups = n / LANES;
        // The inverse's levels above one block: shared passes.
        let mut mg = groups / 2;
        while 2 * mg > block {
            // SAFETY (each call below): `new` found IFMA on this CPU.
            self.shared_level(&mut x, mg, &self.inv, |lo, hi, tw, m| unsafe {
                dif(lo, hi, tw, m)
            });
            mg /= 2;
        }
        x.par_chunks_mut(block)
            .zip(self.shift.par_chunks(block))
            // SAFETY: as above.
            .for_each(|(x, shift)| unsafe { self.block(x, shift) });
        let mut mg = block;
        while mg < groups {
            self.shared_level(&mut x, mg, &self.fwd, |lo, hi, tw, m| unsafe {
                dit(lo, hi, tw, m)
            });
            mg *= 2;
        }
        v.par_chunks_mut(LANES)
            .zip(x.par_iter())
            .for_each(|(xs, g)| unpack(g, xs));
    }

    /// One level of `mg` groups per half (twiddles `table[mg..2mg]`) whose pairs are
    /// shared out in spans of [`SPAN`] groups; `f(lo, hi, twiddles, modulus)` runs a span.
    fn shared_level(
        &self,
        x: &mut [Group],
        mg: usize,
        table: &[Group],
        f: impl Fn(&mut [Group], &mut [Group], &[Group], &VMod<L>) + Sync,
    ) {
        x.par_chunks_mut(2 * mg).for_each(|pair| {
            let (lo, hi) = pair.split_at_mut(mg);
            lo.par_chunks_mut(SPAN)
                .zip(hi.par_chunks_mut(SPAN))
                .enumerate()
                .for_each(|(k, (lo, hi))| {
                    // SAFETY: `new` found IFMA on this CPU.
                    let m = unsafe { vmod(&self.modulus) };
                    let at = mg + k * SPAN;
                    f(lo, hi, &table[at..at + lo.len()], &m)
                });
        });
    }

    /// Every level inside one block, the shift between the two transforms included.
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn block(&self, x: &mut [Group], shift: &[Group]) {
        let m = vmod(&self.modulus);
        let mut mg = x.len() / 2;
        while mg >= 1 {
            for pair in x.chunks_exact_mut(2 * mg) {
                let (lo, hi) = pair.split_at_mut(mg);
                dif(lo, hi, &self.inv[mg..2 * mg], &m);
            }
            mg /= 2;
        }
        let inv_small = self.inv_small.map(|t| splat(&t));
        let fwd_small = self.fwd_small.map(|t| splat(&t));
        for (oct, s) in x.chunks_exact_mut(8).zip(shift.chunks_exact(8)) {
            octet(oct, s, &inv_small, &fwd_small, &m);
        }
        let mut mg = 1;
        while mg < x.len() {
            for pair in x.chunks_exact_mut(2 * mg) {
                let (lo, hi) = pair.split_at_mut(mg);
                dit(lo, hi, &self.fwd[mg..2 * mg], &m);
            }
            mg *= 2;
        }
    }
}

/// The twiddles ω_{2m}^j of every level m ≥ 8, in groups m/8 .. m/4 (group 0 unused):
/// each level's groups form a geometric sequence of ratio ω_{2m}^8, run in chunks from a
/// power computed afresh.
fn twiddle_table<F: MontLimbs>(
    n: usize,
    omega: F,
    lane: &(impl Fn(F) -> [u64; L] + Sync),
    modulus: &Modulus<L>,
) -> Vec<Group> {
    const CHUNK: usize = 256;
    let groups = n / LANES;
    let mut table = vec![[[0; LANES]; L]; groups];
    table
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut t = (c * CHUNK).max(1);
            let last = ((c + 1) * CHUNK).min(groups);
            while t < last {
                // Level m = 8·2^⌊log₂ t⌋ holds groups m/8 .. m/4.
                let mg = 1usize << t.ilog2();
                let end = last.min(2 * mg);
                let w = omega.pow([(groups / (2 * mg)) as u64]); // ω_{2m}, m = 8·mg
                let start = w.pow([(8 * (t - mg)) as u64]);
                let first: [[u64; L]; LANES] =
                    std::array::from_fn(|l| lane(start * w.pow([l as u64])));
                let out = &mut chunk[t - c * CHUNK..end - c * CHUNK];
                // SAFETY: the caller made this table only where IFMA is available.
                unsafe { geometric_groups(&first, &lane(w.pow([8])), modulus, out) };
                t = end;
            }
        });
    table
}

/// `out` filled with `first` (eight lane-form elements), then each group the one before
/// times `step`.
#[target_feature(enable = "avx512f,avx512ifma")]
fn geometric_groups(
    first: &[[u64; L]; LANES],
    step: &[u64; L],
    modulus: &Modulus<L>,
    out: &mut [Group],
) {
    let m = vmod(modulus);
    let mut g = [[0; LANES]; L];
    for (l, limbs) in first.iter().enumerate() {
        for j in 0..L {
            g[j][l] = limbs[j];
        }
    }
    let mut v = load(&g);
    let step = splat(step);
    for g in out {
        store(g, v);
        v = fe_mul(v, step, &m);
    }
}

/// `out` = the eight groups of `pattern`, each times `factor` (lane forms).
#[target_feature(enable = "avx512f,avx512ifma")]
fn scale_groups(pattern: &[Group; 8], factor: &[u64; L], modulus: &Modulus<L>, out: &mut [Group]) {
    let m = vmod(modulus);
    let f = splat(factor);
    for (g, p) in out.iter_mut().zip(pattern) {
        store(g, fe_mul(load(p), f, &m));
    }
}

/// `i` with its low `bits` bits reversed.
fn reverse_bits(i: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        i.reverse_bits() >> (usize::BITS - bits)
    }
}

/// Up to eight elements' limbs into a group (missing lanes zero).
fn pack<F: MontLimbs>(xs: &[F], out: &mut Group) {
    for (l, x) in xs.iter().enumerate() {
        let limbs: [u64; L] = to52(&x.mont_limbs());
        for j in 0..L {
            out[j][l] = limbs[j];
        }
    }
}

/// A group back into eight elements.
fn unpack<F: MontLimbs>(g: &Group, xs: &mut [F]) {
    for (l, x) in xs.iter_mut().enumerate() {
        let limbs: [u64; L] = std::array::from_fn(|j| g[j][l]);
        let mut words = [0u64; 4];
        from52(&limbs, &mut words);
        *x = F::from_mont_limbs(words);
    }
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn load(g: &Group) -> Fe<L> {
    // SAFETY: each row holds 8 u64s; unaligned loads are allowed.
    Fe(std::array::from_fn(|j| unsafe {
        _mm512_loadu_si512(g[j].as_ptr().cast())
    }))
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn store(g: &mut Group, v: Fe<L>) {
    for j in 0..L {
        // SAFETY: each row holds 8 u64s; unaligned stores are allowed.
        unsafe { _mm512_storeu_si512(g[j].as_mut_ptr().cast(), v.0[j]) };
    }
}

/// Inverse butterflies on groups: (u, v) → (u + v, (u − v)·w).
#[target_feature(enable = "avx512f,avx512ifma")]
fn dif(lo: &mut [Group], hi: &mut [Group], tw: &[Group], m: &VMod<L>) {
    for ((u, v), w) in lo.iter_mut().zip(hi.iter_mut()).zip(tw) {
        let (a, b) = (load(u), load(v));
        store(u, fe_add(a, b, m));
        store(v, fe_mul(fe_sub(a, b, m), load(w), m));
    }
}

/// Forward butterflies on groups: (u, v) → (u + w·v, u − w·v).
#[target_feature(enable = "avx512f,avx512ifma")]
fn dit(lo: &mut [Group], hi: &mut [Group], tw: &[Group], m: &VMod<L>) {
    for ((u, v), w) in lo.iter_mut().zip(hi.iter_mut()).zip(tw) {
        let (a, t) = (load(u), fe_mul(load(v), load(w), m));
        store(u, fe_add(a, t, m));
        store(v, fe_sub(a, t, m));
    }
}

/// The levels m = 4, 2, 1 of the inverse, the shift, and m = 1, 2, 4 of the forward
/// transform, on 64 elements (see the module notes).
#[target_feature(enable = "avx512f,avx512ifma")]
fn octet(x: &mut [Group], shift: &[Group], inv: &[Fe<L>; 8], fwd: &[Fe<L>; 8], m: &VMod<L>) {
    let mut r: [Fe<L>; 8] = std::array::from_fn(|g| load(&x[g]));
    transpose(&mut r);
    for half in [4, 2, 1] {
        for base in (0..8).step_by(2 * half) {
            for l in 0..half {
                let (a, b) = (r[base + l], r[base + l + half]);
                r[base + l] = fe_add(a, b, m);
                let d = fe_sub(a, b, m);
                r[base + l + half] = if half == 1 {
                    d
                } else {
                    fe_mul(d, inv[half + l], m)
                };
            }
        }
    }
    for (v, s) in r.iter_mut().zip(shift) {
        *v = fe_mul(*v, load(s), m);
    }
    for half in [1, 2, 4] {
        for base in (0..8).step_by(2 * half) {
            for l in 0..half {
                let a = r[base + l];
                let b = r[base + l + half];
                let t = if half == 1 {
                    b
                } else {
                    fe_mul(b, fwd[half + l], m)
                };
                r[base + l] = fe_add(a, t, m);
                r[base + l + half] = fe_sub(a, t, m);
            }
        }
    }
    transpose(&mut r);
    for (g, v) in x.iter_mut().zip(r) {
        store(g, v);
    }
}

/// The 8 × 8 transpose of every limb: afterwards vector i's lane p is vector p's lane i
/// before. Three rounds swap blocks of 4, 2 and 1 lanes between vectors 4, 2 and 1 apart.
#[target_feature(enable = "avx512f,avx512ifma")]
fn transpose(r: &mut [Fe<L>; 8]) {
    for b in [4usize, 2, 1] {
        // Vector i keeps its lanes p with p & b = 0 and takes vector i + b's lanes p − b
        // for the others; vector i + b gets the lanes swapped out.
        let lo: [i64; 8] = std::array::from_fn(|p| if p & b == 0 { p } else { p - b + 8 } as i64);
        let hi: [i64; 8] = std::array::from_fn(|p| if p & b == 0 { p + b } else { p + 8 } as i64);
        // SAFETY: 8 i64s; unaligned loads are allowed.
        let (lo, hi) = unsafe {
            (
                _mm512_loadu_si512(lo.as_ptr().cast()),
                _mm512_loadu_si512(hi.as_ptr().cast()),
            )
        };
        for i in (0..8).filter(|i| i & b == 0) {
            for j in 0..L {
                let (x, y) = (r[i].0[j], r[i + b].0[j]);
                r[i].0[j] = _mm512_permutex2var_epi64(x, lo, y);
                r[i + b].0[j] = _mm512_permutex2var_epi64(x, hi, y);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_transposes() {
        if !super::super::available() {
            eprintln!("ifma: this CPU has no AVX-512 IFMA; the transpose not exercised");
            return;
        }
        let groups: Vec<Group> = (0..8)
            .map(|g| {
                std::array::from_fn(|j| std::array::from_fn(|l| (100 * g + 10 * j + l) as u64))
            })
            .collect();
        let mut out = groups.clone();
        // SAFETY: IFMA checked above.
        unsafe {
            let mut r: [Fe<L>; 8] = std::array::from_fn(|g| load(&groups[g]));
            transpose(&mut r);
            for (o, v) in out.iter_mut().zip(r) {
                store(o, v);
            }
        }
        for i in 0..8 {
            for j in 0..L {
                for p in 0..8 {
                    assert_eq!(
                        out[i][j][p], groups[p][j][i],
                        "vector {i}, limb {j}, lane {p}"
                    );
                }
            }
        }
    }
}
