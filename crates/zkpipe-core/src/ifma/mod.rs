//! Field arithmetic on eight elements at once in AVX-512 IFMA registers ([`field`]), and
//! the quotient's NTT built on it ([`ntt`]). The MSM's pair additions (`msm::ifma`) use
//! [`field`] too.
//!
//! Everything here runs only where [`available`] says so; callers keep a scalar path.

#![allow(unsafe_code)]
// Limb loops index several arrays by the same j, as the arithmetic is written on paper.
#![allow(clippy::needless_range_loop)]

pub(crate) mod field;
pub(crate) mod ntt;

/// Whether this CPU runs the lanes (`std` caches the CPUID). Callers that may be told not
/// to use them ([`crate::cpu::CpuOptions::ifma`]) ask that first.
pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512ifma")
}
