// Shared body of the per-curve MSM shims: resident point sets and one-shot MSMs over
// sppark's Pippenger. Each .cu file defines the curve's types and CURVE, then includes
// this. Errors cross to Rust as sppark's RustError (code + message), never as exceptions.

#include <msm/pippenger.cuh>

#define ZKP_CAT(a, b) a##b
#define ZKP_FN(name, curve) ZKP_CAT(name, curve)

typedef msm_t<bucket_t, point_t, affine_t, scalar_t> zkp_msm_t;

// Uploads `npoints` affine points (stride `affine_sz` bytes, (x, y) Montgomery first) once.
extern "C" RustError ZKP_FN(zkp_g1_points_new_, CURVE)(zkp_msm_t** out, const affine_t* points,
                                                      size_t npoints, size_t affine_sz)
{
    try {
        *out = new zkp_msm_t(points, npoints, affine_sz);
        return RustError{cudaSuccess};
    } catch (const cuda_error& e) {
        *out = nullptr;
        return RustError{e.code(), e.what()};
    } catch (const std::bad_alloc&) {
        *out = nullptr;
        return RustError{cudaErrorMemoryAllocation, "host allocation failed"};
    }
}

extern "C" void ZKP_FN(zkp_g1_points_drop_, CURVE)(zkp_msm_t* msm)
{
    delete msm;
}

// Σ scalars[i]·points[i] against the resident points; scalars in standard form.
extern "C" RustError ZKP_FN(zkp_g1_msm_, CURVE)(zkp_msm_t* msm, point_t* out,
                                               const scalar_t* scalars, size_t nscalars)
{
    try {
        // points == nullptr: use the resident points. (sppark's scalars-only overload
        // routes nullptr through a template that dereferences it, so call the core one.)
        return msm->invoke(*out, static_cast<const affine_t*>(nullptr), nscalars, scalars,
                           false, sizeof(affine_t));
    } catch (const cuda_error& e) {
        out->inf();
        return RustError{e.code(), e.what()};
    }
}

// One-shot MSM (points uploaded with the scalars, sppark's own entry point): the
// reference the resident path is checked against.
extern "C" RustError ZKP_FN(zkp_g1_msm_oneshot_, CURVE)(point_t* out, const affine_t* points,
                                                       size_t npoints, const scalar_t* scalars,
                                                       size_t affine_sz)
{
    return mult_pippenger<bucket_t>(out, points, npoints, scalars, false, affine_sz);
}
