// Common to the per-curve shims (bn254.cu, bls12_381.cu), included first by msm.cuh and
// quotient.cuh: sppark's Pippenger and NTT, and ZKP_FN, which gives each extern "C" entry
// the curve's suffix. Each .cu file defines the curve's types (point_t, affine_t,
// bucket_t, their fp2 twins, scalar_t) and CURVE before including the shims. Errors cross
// to Rust as sppark's RustError (code + message), never as C++ exceptions.
#pragma once

#include <msm/pippenger.cuh>
#include <ntt/ntt.cuh>

#define ZKP_CAT(a, b) a##b
#define ZKP_FN(name, curve) ZKP_CAT(name, curve)
