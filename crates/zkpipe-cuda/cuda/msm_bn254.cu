// BN254 G1 MSM on sppark (see msm.cuh).
#include <cuda.h>
#define FEATURE_BN254
#include <ff/alt_bn128.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#define sort zkp_sort_bn254
#define CURVE bn254
#include "msm.cuh"
