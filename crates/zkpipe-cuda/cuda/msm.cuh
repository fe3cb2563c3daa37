// Resident G1/G2 point sets and their MSMs: sppark's Pippenger for one scalar vector
// (host or device memory), the batched MSM of batch_msm.cuh for several, and sppark's
// one-shot entry (the reference the resident path is checked against).
#pragma once

#include "common.cuh"

typedef msm_t<bucket_t, point_t, affine_t, scalar_t> zkp_g1_msm_t;
typedef msm_t<bucket_fp2_t, point_fp2_t, affine_fp2_t, scalar_t> zkp_g2_msm_t;

// sppark's msm_t::invoke reads scalars already on the device when their pointer type is
// marked by is_device_ptr; gpu_ptr_t/dev_ptr_t would free the memory they hold, so this
// span only borrows memory zkpipe owns (the quotient's h, the uploaded witness).
template<typename T> struct zkp_dev_span {
    T* p;
    T& operator[](size_t i) const { return p[i]; }
};
template<typename T> struct is_device_ptr<zkp_dev_span<T>> {
    static const bool value{true};
};

#include "batch_msm.cuh"

// One resident point set on device `dev`: the points (affine, Montgomery; `pad` points at
// infinity first, so a set over a suffix of w — the C query skips the public inputs —
// lines up with the whole w in a batch plan) and sppark's MSM state sized for them.
// sppark reads the points from here through a device span, so there is one copy. With a
// window table (table_wbits > 0) the points are its row 0, followed by table_rows − 1
// more rows of pad + n points each (batch_msm_kernels.cuh, zkp_bm_table).
template<class M, class A>
struct zkp_set_t {
    typedef typename A::mem_t affine_h;
    int dev;
    size_t pad, n;
    // A chunk set's room (zkp_chunk_new): the caller refills its points, ≤ cap at a time.
    size_t cap = 0;
    uint32_t table_wbits = 0, table_rows = 1;
    affine_h* points = nullptr;
    M* msm = nullptr;
    // False where the points lie in memory the set borrows (zkp_chunk_new's `room`).
    bool owns_points = true;

    ~zkp_set_t()
    {
        delete msm;
        if (points && owns_points) {
            cudaSetDevice(dev);
            cudaFree(points);
        }
    }
};

template<class M, class A, class B>
static RustError zkp_points_new(zkp_set_t<M, A>** out, const A* points, size_t npoints,
                                size_t affine_sz, size_t pad, uint32_t table_wbits, int dev)
{
    typedef typename zkp_set_t<M, A>::affine_h affine_h;
    *out = nullptr;
    if (table_wbits > 24)
        return RustError{cudaErrorInvalidValue, "window table wider than 24 bits"};
    auto* set = new (std::nothrow) zkp_set_t<M, A>{dev, pad, npoints};
    if (set == nullptr)
        return RustError{cudaErrorMemoryAllocation, "host allocation failed"};
    try {
        const gpu_t& gpu = select_gpu(dev);
        const size_t len = pad + npoints;
        if (table_wbits) {
            set->table_wbits = table_wbits;
            set->table_rows = (scalar_t::nbits + table_wbits - 1) / table_wbits;
        }
        CUDA_OK(cudaMalloc(&set->points,
                           std::max<size_t>(len * set->table_rows, 1) * sizeof(affine_h)));
        CUDA_OK(cudaMemset(set->points, 0, pad * sizeof(affine_h)));
        gpu.HtoD(set->points + pad, points, npoints, affine_sz);
        gpu.sync();
        if (set->table_rows > 1 && len > 0) {
            // On a stream of its own: other keys may be proving on this GPU meanwhile.
            zkp_stream_t stream(dev);
            const uint32_t threads = 128;
            zkp_bm_table<B, affine_h>
                <<<zkp_grid(len * B::degree, threads), threads, 0, stream.st>>>(
                    set->points, len, table_wbits, set->table_rows);
            CUDA_OK(cudaGetLastError());
            CUDA_OK(cudaStreamSynchronize(stream.st));
        }
        set->msm = new M(nullptr, npoints, affine_sz, dev);
    } catch (const cuda_error& e) {
        delete set;
        return RustError{e.code(), e.what()};
    } catch (const std::bad_alloc&) {
        delete set;
        return RustError{cudaErrorMemoryAllocation, "host allocation failed"};
    }
    *out = set;
    return RustError{cudaSuccess};
}

// A chunk set on device `dev`: `cap` points at `room` (device memory the caller keeps, does
// not touch while the set's MSMs run, and refills between them: a key too large for the
// device streams through it, crate::enabled::streamed), and sppark's MSM state sized for
// `cap` (its buckets; the points are handed to each call).
template<class M, class A>
static RustError zkp_chunk_new(zkp_set_t<M, A>** out, size_t cap, size_t affine_sz,
                               void* room, int dev)
{
    typedef typename zkp_set_t<M, A>::affine_h affine_h;
    *out = nullptr;
    if (room == nullptr)
        return RustError{cudaErrorInvalidValue, "a chunk set with no room for its points"};
    auto* set = new (std::nothrow) zkp_set_t<M, A>{dev, 0, 0};
    if (set == nullptr)
        return RustError{cudaErrorMemoryAllocation, "host allocation failed"};
    try {
        select_gpu(dev);
        set->cap = cap;
        set->points = static_cast<affine_h*>(room);
        set->owns_points = false;
        set->msm = new M(nullptr, cap, affine_sz, dev);
    } catch (const cuda_error& e) {
        delete set;
        return RustError{e.code(), e.what()};
    } catch (const std::bad_alloc&) {
        delete set;
        return RustError{cudaErrorMemoryAllocation, "host allocation failed"};
    }
    *out = set;
    return RustError{cudaSuccess};
}

// Σ scalars[i]·points[i] against a resident set (sppark's Pippenger). `mont`: scalars are
// in Montgomery form; `on_device`: `scalars` is device memory (else host, ideally pinned).
template<class M, class P, class A>
static RustError zkp_msm(zkp_set_t<M, A>* set, P* out, const scalar_t* scalars,
                         size_t nscalars, bool mont, bool on_device)
{
    typedef typename zkp_set_t<M, A>::affine_h affine_h;
    try {
        // Kernels go to streams of the set's device: it must be this thread's current one.
        select_gpu(set->dev);
        // Typed as affine_t (the memory is affine_h, the same bytes) so that sppark's
        // device-pointer overload hands on to its core invoke instead of recursing.
        zkp_dev_span<const A> resident{reinterpret_cast<const A*>(set->points + set->pad)};
        if (on_device)
            return set->msm->invoke(*out, resident, nscalars,
                                    zkp_dev_span<const scalar_t>{scalars}, mont, sizeof(A));
        return set->msm->invoke(*out, resident, nscalars, scalars, mont, sizeof(A));
    } catch (const cuda_error& e) {
        out->inf();
        return RustError{e.code(), e.what()};
    }
}

// The batch plan's k MSMs against a resident set, as bit sums (zkp_bm_run): k·nwins·wbits
// xyzz points (X, Y, ZZZ, ZZ) into `out`.
template<class B, class M, class A>
static RustError zkp_set_batch(const zkp_set_t<M, A>* set, const zkp_bm_plan_t* plan,
                               typename B::mem_t* out)
{
    if (plan->dev != set->dev || plan->n != set->pad + set->n)
        return RustError{cudaErrorInvalidValue,
                         "batch plan and point set differ in device or length"};
    if (plan->groups == 1 && plan->nwins > 1
        && (plan->wbits != set->table_wbits || plan->nwins > set->table_rows))
        return RustError{cudaErrorInvalidValue,
                         "batch plan made for a window table the point set does not have"};
    return zkp_bm_run<B>(plan, set->points, out);
}

#include "bits.cuh"

#define ZKP_MSM_ENTRIES(G, M, P, A, B)                                                     \
typedef zkp_set_t<M, A> ZKP_FN(zkp_##G##_set_t_, CURVE);                                    \
extern "C" RustError ZKP_FN(zkp_##G##_points_new_, CURVE)(                                  \
    ZKP_FN(zkp_##G##_set_t_, CURVE)** out, const A* points, size_t npoints,                 \
    size_t affine_sz, size_t pad, uint32_t table_wbits, int dev)                            \
{   return zkp_points_new<M, A, B>(out, points, npoints, affine_sz, pad, table_wbits, dev); } \
extern "C" RustError ZKP_FN(zkp_##G##_chunk_new_, CURVE)(                                   \
    ZKP_FN(zkp_##G##_set_t_, CURVE)** out, size_t cap, size_t affine_sz, void* room,        \
    int dev)                                                                                \
{   return zkp_chunk_new<M, A>(out, cap, affine_sz, room, dev);   }                         \
extern "C" void ZKP_FN(zkp_##G##_points_drop_, CURVE)(ZKP_FN(zkp_##G##_set_t_, CURVE)* set) \
{   delete set;   }                                                                         \
extern "C" RustError ZKP_FN(zkp_##G##_msm_, CURVE)(ZKP_FN(zkp_##G##_set_t_, CURVE)* set,    \
                                                   P* out, const scalar_t* scalars,         \
                                                   size_t nscalars, bool mont, bool on_device) \
{   return zkp_msm<M, P, A>(set, out, scalars, nscalars, mont, on_device);   }              \
extern "C" RustError ZKP_FN(zkp_##G##_batch_msm_, CURVE)(                                   \
    const ZKP_FN(zkp_##G##_set_t_, CURVE)* set, const zkp_bm_plan_t* plan,                  \
    typename B::mem_t* out)                                                                 \
{   return zkp_set_batch<B, M, A>(set, plan, out);   }                                       \
extern "C" RustError ZKP_FN(zkp_##G##_bits_sum_, CURVE)(                                    \
    const ZKP_FN(zkp_##G##_set_t_, CURVE)* set, size_t first, size_t npoints,               \
    const uint32_t* ones, size_t bit0, typename B::mem_t* out)                              \
{   return zkp_bits_sum_run<B, M, A>(set, first, npoints, ones, bit0, out);   }

ZKP_MSM_ENTRIES(g1, zkp_g1_msm_t, point_t, affine_t, bucket_t)
ZKP_MSM_ENTRIES(g2, zkp_g2_msm_t, point_fp2_t, affine_fp2_t, bucket_fp2_t)

// A batch plan for k scalar vectors of n scalars each, all in device memory
// (`scalars`: a host array of k device pointers), for sets with a window table of width
// `table_wbits` (0: without); `shape` receives [wbits, groups].
extern "C" RustError ZKP_FN(zkp_bm_plan_new_, CURVE)(zkp_bm_plan_t** out,
                                                    const scalar_t* const* scalars,
                                                    uint32_t k, uint32_t n, bool mont,
                                                    uint32_t piece, uint32_t run,
                                                    uint32_t gap, bool order,
                                                    bool constant_work,
                                                    uint32_t table_wbits, uint32_t* shape,
                                                    int dev)
{
    return zkp_bm_plan_new<scalar_t>(out, scalars, k, n, mont, piece, run, gap, order,
                                     constant_work, table_wbits, shape, dev);
}

extern "C" void ZKP_FN(zkp_bm_plan_drop_, CURVE)(zkp_bm_plan_t* plan)
{   delete plan;   }

// The bit path's split of a witness on the device (bits.cuh).
extern "C" RustError ZKP_FN(zkp_bits_split_, CURVE)(const scalar_t* w, size_t n, bool mont,
                                                   const uint64_t* one, uint32_t* ones,
                                                   size_t words, uint32_t cap, uint32_t* count,
                                                   uint32_t* idx, scalar_t* vals, int dev)
{
    return zkp_bits_split_run<scalar_t>(w, n, mont, one, ones, words, cap, count, idx, vals,
                                        dev);
}

// One-shot G1 MSM (points uploaded with the scalars, sppark's own entry point): the
// reference the resident path is checked against.
extern "C" RustError ZKP_FN(zkp_g1_msm_oneshot_, CURVE)(point_t* out, const affine_t* points,
                                                       size_t npoints, const scalar_t* scalars,
                                                       size_t affine_sz)
{
    return mult_pippenger<bucket_t>(out, points, npoints, scalars, false, affine_sz);
}
