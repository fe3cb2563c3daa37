//! Groth16 for BN254 and BLS12-381 in snarkjs's conventions, on arkworks.
//!
//! ```text
//!  ZkeyFile ──compile once──► CompiledKey (CSR A, B; points; domain)
//!  Wtns ──► Witness ─┐
//!                    ▼
//!   1. reduce     a = A·w, b = B·w, c = a∘b
//!   2. quotient   iNTT → odd-coset NTT → h = a·b − c        (a device: BoundKey)
//!   3. msm        [A]₁, [B]₁, [B]₂, [C]₁, [H]₁              (a device: BoundKey)
//!   4. assemble   π_A, π_B, π_C with fresh r, s
//!   5. verify     the pairing check (self-check of every proof by default)
//! ```
//!
//! [`stages`] groups these steps into the three pipeline stages (reduce, device, tail)
//! that `prove` and the engine run; [`device`] is the seam to whatever runs steps 2–3
//! ([`cpu`] is the reference). Everything is generic over [`curve::Curve`]; concrete
//! curves appear only at the edges, where a file's header decides which one to use.
// Unsafe code is denied everywhere but the two `ifma` modules (SIMD intrinsics: gathers,
// scatters, loads).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod csr;
pub mod curve;
pub mod error;
pub mod key;
pub mod key_cache;
pub mod witness;

pub mod assemble;
pub mod blinding;
pub mod msm;
mod prepared_vk;
pub mod prover;
pub mod quotient;
pub mod reduce;
pub mod stages;
pub mod verify;

pub mod check;
pub mod cpu;
pub mod device;
#[cfg(target_arch = "x86_64")]
mod ifma;
pub mod proof;
pub mod throttle;
pub mod timings;

pub mod setup;
pub mod subgroup;
pub mod synth;

// The prover end to end on the committed snarkjs fixtures. A unit test, not an
// integration test: a test binary of its own instantiates the prover for both curves
// again, ~100 s of CI's build (lab/experiments/033-ci-build-time.md).
#[cfg(test)]
mod fixture_tests;
// The CPU device streaming a key under a memory limit, against its in-core result (a unit
// test for the same reason).
#[cfg(test)]
mod stream_tests;

pub use cpu::{CpuBound, CpuDevices, CpuOptions};
pub use curve::Curve;
pub use device::{
    BindCurve, BindOptions, BoundKey, Caps, DeviceInfo, Devices, G1Set, KeyShape, PassInput,
    PassWitness, PinnedKind,
};
pub use error::{Error, PointError};
pub use key::{CompiledKey, PointChecks, VerifyingKey};
pub use msm::stream_plan::{Residency, StreamPlan, StreamPlanError};
pub use proof::Proof;
pub use prover::{prove, prove_batch, ProveOptions};
pub use timings::{Stage, Timings};
pub use verify::verify;
pub use witness::Witness;

/// The BN254 pairing engine.
pub type Bn254 = ark_bn254::Bn254;
/// The BLS12-381 pairing engine.
pub type Bls12_381 = ark_bls12_381::Bls12_381;
