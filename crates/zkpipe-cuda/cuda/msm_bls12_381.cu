// BLS12-381 G1 MSM on sppark (see msm.cuh).
#include <cuda.h>
#define FEATURE_BLS12_381
#include <ff/bls12-381.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#define sort zkp_sort_bls12_381
#define CURVE bls12_381
#include "msm.cuh"
