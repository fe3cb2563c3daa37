// bn254 on sppark: G1 and G2 MSMs, quotient NTTs and the reduce
// (msm.cuh, quotient.cuh, reduce.cuh; common.cuh says what they need defined).
#include <cuda.h>
#define FEATURE_BN254
#include <ff/alt_bn128.hpp>
#include <ff/alt_bn128-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef jacobian_t<fp2_t> point_fp2_t;
typedef xyzz_t<fp2_t> bucket_fp2_t;
typedef bucket_fp2_t::affine_t affine_fp2_t;
typedef fr_t scalar_t;

// sppark's names that do not mention the curve's types (the sort kernel, the NTT classes
// whose inline members and function-local statics hold per-curve twiddles) would be
// merged across the two curves' units by the linker, one curve then running with the
// other's tables: give each unit its own names for them.
#define sort zkp_sort_bn254
#define NTT zkp_ntt_bn254
#define NTTParameters zkp_ntt_parameters_bn254
#define CT_launcher zkp_ct_launcher_bn254
#define GS_launcher zkp_gs_launcher_bn254
#define CURVE bn254
#include "msm.cuh"
#include "quotient.cuh"
#include "reduce.cuh"
#include "setup.cuh"
