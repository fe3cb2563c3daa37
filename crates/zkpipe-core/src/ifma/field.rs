//! Eight field elements at once in AVX-512 IFMA registers: an F_p component as L limbs of
//! 52 bits ([`Fe`]: one 512-bit register per limb, one element per 64-bit lane), an F_p or
//! F_p² element as D such components ([`El`]); Montgomery arithmetic on them modulo a
//! [`Modulus`], fully reduced after every operation; and the moves between registers and
//! memory (gathers and scatters of point coordinates, packing and unpacking per-lane arrays).
//!
//! The MSM's pair additions (`msm::ifma`) and the quotient's NTT ([`super::ntt`]) are built
//! from these. `unsafe` and the limb loops' indexing are allowed for the whole module, at
//! the top of its `mod.rs`.

use std::arch::x86_64::*;

use ark_ff::PrimeField;

const MASK: u64 = (1 << 52) - 1;

/// Pairs per group: one per 64-bit lane of a 512-bit register.
pub(crate) const LANES: usize = 8;

/// The modulus in radix 2^52 and the constants the lanes need.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Modulus<const L: usize> {
    p: [u64; L],
    /// −p⁻¹ mod 2^52.
    n0: u64,
    /// R' mod p: one, in lane form.
    pub(crate) one: [u64; L],
    /// R'² mod p: multiplying a standard-form integer by it gives lane form.
    pub(crate) r2: [u64; L],
}

impl<const L: usize> Modulus<L> {
    pub(crate) fn of<F: PrimeField>() -> Self {
        let p = to52(F::MODULUS.as_ref());
        let mut inv = 1u64; // p⁻¹ mod 2^64 by Newton's iteration (p is odd)
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(p[0].wrapping_mul(inv)));
        }
        let pow2 = |e: u64| to52(F::from(2u64).pow([e]).into_bigint().as_ref());
        Modulus {
            p,
            n0: inv.wrapping_neg() & MASK,
            one: pow2(52 * L as u64),
            r2: pow2(104 * L as u64),
        }
    }

    /// p − a for a in [1, p), on 52-bit limbs; 0 stays 0.
    pub(crate) fn neg(&self, a: &[u64; L]) -> [u64; L] {
        if a.iter().all(|&w| w == 0) {
            return *a;
        }
        let mut out = [0; L];
        let mut borrow = 0u64;
        for j in 0..L {
            let v = self.p[j].wrapping_sub(a[j]).wrapping_sub(borrow);
            borrow = v >> 63;
            out[j] = v & MASK;
        }
        out
    }
}

/// 52-bit limbs of a little-endian 64-bit-limb integer (which must fit in 52·L bits).
pub(crate) fn to52<const L: usize>(words: &[u64]) -> [u64; L] {
    std::array::from_fn(|i| {
        let (w, s) = (52 * i / 64, 52 * i % 64);
        let lo = words.get(w).map_or(0, |&v| v >> s);
        let hi = match words.get(w + 1) {
            Some(&v) if s > 12 => v << (64 - s),
            _ => 0,
        };
        (lo | hi) & MASK
    })
}

/// The inverse of [`to52`], into `out` (bits past its end must be zero).
pub(crate) fn from52<const L: usize>(limbs: &[u64; L], out: &mut [u64]) {
    out.fill(0);
    for (i, &limb) in limbs.iter().enumerate() {
        let (w, s) = (52 * i / 64, 52 * i % 64);
        if let Some(o) = out.get_mut(w) {
            *o |= limb << s;
        }
        if s > 12 {
            if let Some(o) = out.get_mut(w + 1) {
                *o |= limb >> (64 - s);
            }
        }
    }
}

/// The modulus broadcast to all lanes.
pub(crate) struct VMod<const L: usize> {
    p: [__m512i; L],
    n0: __m512i,
    mask: __m512i,
}

/// One F_p component of eight elements: limb j of lane l is `.0[j]`'s lane l.
#[derive(Clone, Copy)]
pub(crate) struct Fe<const L: usize>(pub(crate) [__m512i; L]);

/// Eight elements of F_p or F_p²: D components.
pub(crate) type El<const L: usize, const D: usize> = [Fe<L>; D];

#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn vmod<const L: usize>(m: &Modulus<L>) -> VMod<L> {
    VMod {
        p: m.p.map(|w| _mm512_set1_epi64(w as i64)),
        n0: _mm512_set1_epi64(m.n0 as i64),
        mask: _mm512_set1_epi64(MASK as i64),
    }
}

#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn splat<const L: usize>(limbs: &[u64; L]) -> Fe<L> {
    Fe(limbs.map(|w| _mm512_set1_epi64(w as i64)))
}

/// Carries propagated so every limb is below 2^52 (the value must be non-negative and
/// fit in L limbs).
#[target_feature(enable = "avx512f,avx512ifma")]
fn normalize<const L: usize>(mut t: [__m512i; L], m: &VMod<L>) -> [__m512i; L] {
    let mut carry = _mm512_setzero_si512();
    for limb in &mut t {
        let v = _mm512_add_epi64(*limb, carry);
        carry = _mm512_srli_epi64::<52>(v);
        *limb = _mm512_and_si512(v, m.mask);
    }
    t
}

/// t − p where t ≥ p, else t (t normalized, below 2p).
#[target_feature(enable = "avx512f,avx512ifma")]
fn reduce_once<const L: usize>(t: [__m512i; L], m: &VMod<L>) -> Fe<L> {
    let mut u = t;
    let mut borrow = _mm512_setzero_si512();
    for j in 0..L {
        let v = _mm512_sub_epi64(_mm512_sub_epi64(t[j], m.p[j]), borrow);
        borrow = _mm512_srli_epi64::<63>(v);
        u[j] = _mm512_and_si512(v, m.mask);
    }
    let below_p = _mm512_test_epi64_mask(borrow, borrow);
    Fe(std::array::from_fn(|j| {
        _mm512_mask_blend_epi64(below_p, u[j], t[j])
    }))
}

#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn fe_add<const L: usize>(a: Fe<L>, b: Fe<L>, m: &VMod<L>) -> Fe<L> {
    let s = std::array::from_fn(|j| _mm512_add_epi64(a.0[j], b.0[j]));
    reduce_once(normalize(s, m), m)
}

#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn fe_sub<const L: usize>(a: Fe<L>, b: Fe<L>, m: &VMod<L>) -> Fe<L> {
    let mut t = [_mm512_setzero_si512(); L];
    let mut borrow = _mm512_setzero_si512();
    for j in 0..L {
        let v = _mm512_sub_epi64(_mm512_sub_epi64(a.0[j], b.0[j]), borrow);
        borrow = _mm512_srli_epi64::<63>(v);
        t[j] = _mm512_and_si512(v, m.mask);
    }
    // A borrow out of the top limb means a < b: add p back (the carry out cancels it).
    let negative = _mm512_test_epi64_mask(borrow, borrow);
    for j in 0..L {
        t[j] = _mm512_mask_add_epi64(t[j], negative, t[j], m.p[j]);
    }
    Fe(normalize(t, m))
}

/// Montgomery product a·b/R' mod p, fully reduced (operand scanning; the 52-bit products
/// accumulate in 64-bit lanes, which hold 2^12 of them, so carries wait until the end).
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn fe_mul<const L: usize>(a: Fe<L>, b: Fe<L>, m: &VMod<L>) -> Fe<L> {
    let zero = _mm512_setzero_si512();
    let mut t = [zero; L];
    let mut top = zero;
    for i in 0..L {
        let ai = a.0[i];
        // t += a_i·b: low halves into limb j, high halves into limb j + 1.
        for j in 0..L {
            t[j] = _mm512_madd52lo_epu64(t[j], ai, b.0[j]);
        }
        for j in 0..L - 1 {
            t[j + 1] = _mm512_madd52hi_epu64(t[j + 1], ai, b.0[j]);
        }
        top = _mm512_madd52hi_epu64(top, ai, b.0[L - 1]);
        // t += q·p with q = t₀·(−p⁻¹) mod 2^52, which clears limb 0; then shift one limb.
        let q = _mm512_madd52lo_epu64(zero, t[0], m.n0);
        for j in 0..L {
            t[j] = _mm512_madd52lo_epu64(t[j], q, m.p[j]);
        }
        for j in 0..L - 1 {
            t[j + 1] = _mm512_madd52hi_epu64(t[j + 1], q, m.p[j]);
        }
        top = _mm512_madd52hi_epu64(top, q, m.p[L - 1]);
        let carry = _mm512_srli_epi64::<52>(t[0]);
        for j in 0..L - 1 {
            t[j] = t[j + 1];
        }
        t[0] = _mm512_add_epi64(t[0], carry);
        t[L - 1] = top;
        top = zero;
    }
    reduce_once(normalize(t, m), m)
}

#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn el_add<const L: usize, const D: usize>(
    a: El<L, D>,
    b: El<L, D>,
    m: &VMod<L>,
) -> El<L, D> {
    std::array::from_fn(|c| fe_add(a[c], b[c], m))
}

#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn el_sub<const L: usize, const D: usize>(
    a: El<L, D>,
    b: El<L, D>,
    m: &VMod<L>,
) -> El<L, D> {
    std::array::from_fn(|c| fe_sub(a[c], b[c], m))
}

/// a·b; in F_p² (u² = −1) by Karatsuba, three F_p products.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn el_mul<const L: usize, const D: usize>(
    a: El<L, D>,
    b: El<L, D>,
    m: &VMod<L>,
) -> El<L, D> {
    if D == 1 {
        return std::array::from_fn(|_| fe_mul(a[0], b[0], m));
    }
    let v0 = fe_mul(a[0], b[0], m);
    let v1 = fe_mul(a[1], b[1], m);
    let v2 = fe_mul(fe_add(a[0], a[1], m), fe_add(b[0], b[1], m), m);
    let c0 = fe_sub(v0, v1, m);
    let c1 = fe_sub(fe_sub(v2, v0, m), v1, m);
    std::array::from_fn(|c| if c == 0 { c0 } else { c1 })
}

/// a²; in F_p², (a₀ + a₁)(a₀ − a₁) + 2a₀a₁·u, two F_p products.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn el_square<const L: usize, const D: usize>(a: El<L, D>, m: &VMod<L>) -> El<L, D> {
    if D == 1 {
        return std::array::from_fn(|_| fe_mul(a[0], a[0], m));
    }
    let c0 = fe_mul(fe_add(a[0], a[1], m), fe_sub(a[0], a[1], m), m);
    let p = fe_mul(a[0], a[1], m);
    let c1 = fe_add(p, p, m);
    std::array::from_fn(|c| if c == 0 { c0 } else { c1 })
}

#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn el_blend<const L: usize, const D: usize>(
    k: __mmask8,
    a: El<L, D>,
    b: El<L, D>,
) -> El<L, D> {
    std::array::from_fn(|c| {
        Fe(std::array::from_fn(|j| {
            _mm512_mask_blend_epi64(k, a[c].0[j], b[c].0[j])
        }))
    })
}

/// The coordinate at word `offset` of the points at word indices `at` (one per lane).
///
/// # Safety
/// Every lane's `at + offset + L·D` must lie within the slice `base` points into.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) unsafe fn gather<const L: usize, const D: usize>(
    base: *const u64,
    at: __m512i,
    offset: usize,
) -> El<L, D> {
    std::array::from_fn(|c| {
        Fe(std::array::from_fn(|j| {
            let idx = _mm512_add_epi64(at, _mm512_set1_epi64((offset + c * L + j) as i64));
            // SAFETY: in bounds by the caller's contract.
            unsafe { _mm512_i64gather_epi64::<8>(idx, base as *const i64) }
        }))
    })
}

/// Stores `v` at word `offset` of the points at `at`, in the lanes set in `k`.
///
/// # Safety
/// As [`gather`], for the lanes in `k`; those lanes' `at` must be distinct.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) unsafe fn scatter<const L: usize, const D: usize>(
    base: *mut u64,
    at: __m512i,
    offset: usize,
    k: __mmask8,
    v: El<L, D>,
) {
    for c in 0..D {
        for j in 0..L {
            let idx = _mm512_add_epi64(at, _mm512_set1_epi64((offset + c * L + j) as i64));
            // SAFETY: in bounds by the caller's contract.
            unsafe { _mm512_mask_i64scatter_epi64::<8>(base as *mut i64, k, idx, v[c].0[j]) };
        }
    }
}

/// Eight lane elements out to arrays, one per lane.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn unpack<const L: usize, const D: usize>(v: El<L, D>) -> [[[u64; L]; D]; LANES] {
    let mut out = [[[0u64; L]; D]; LANES];
    for c in 0..D {
        for j in 0..L {
            let mut lane = [0u64; LANES];
            // SAFETY: `lane` holds 8 u64s; unaligned stores are allowed.
            unsafe { _mm512_storeu_si512(lane.as_mut_ptr().cast(), v[c].0[j]) };
            for (l, o) in out.iter_mut().enumerate() {
                o[c][j] = lane[l];
            }
        }
    }
    out
}

/// The lanes' raw registers, for scratch.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn dump<const L: usize, const D: usize>(v: El<L, D>) -> [[[u64; LANES]; L]; D] {
    let mut out = [[[0u64; LANES]; L]; D];
    for c in 0..D {
        for j in 0..L {
            // SAFETY: 8 u64s; unaligned stores are allowed.
            unsafe { _mm512_storeu_si512(out[c][j].as_mut_ptr().cast(), v[c].0[j]) };
        }
    }
    out
}

/// The inverse of [`dump`].
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn undump<const L: usize, const D: usize>(raw: &[[[u64; LANES]; L]; D]) -> El<L, D> {
    // SAFETY: 8 u64s; unaligned loads are allowed.
    std::array::from_fn(|c| {
        Fe(std::array::from_fn(|j| unsafe {
            _mm512_loadu_si512(raw[c][j].as_ptr().cast())
        }))
    })
}

/// Arrays, one per lane, into eight lane elements.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn pack<const L: usize, const D: usize>(xs: &[[[u64; L]; D]; LANES]) -> El<L, D> {
    std::array::from_fn(|c| {
        Fe(std::array::from_fn(|j| {
            let lane: [u64; LANES] = std::array::from_fn(|l| xs[l][c][j]);
            // SAFETY: `lane` holds 8 u64s; unaligned loads are allowed.
            unsafe { _mm512_loadu_si512(lane.as_ptr().cast()) }
        }))
    })
}
