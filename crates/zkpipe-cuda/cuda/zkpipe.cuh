// Shared body of the per-curve shims: resident G1/G2 point sets and MSMs over sppark's
// Pippenger, and the quotient stage (iNTT, coset shift, NTT, a·b − c) over sppark's NTT.
// Each .cu file defines the curve's types and CURVE, then includes this. Errors cross to
// Rust as sppark's RustError (code + message), never as C++ exceptions.

#include <msm/pippenger.cuh>
#include <ntt/ntt.cuh>

#define ZKP_CAT(a, b) a##b
#define ZKP_FN(name, curve) ZKP_CAT(name, curve)

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
// sppark reads the points from here through a device span, so there is one copy.
template<class M, class A>
struct zkp_set_t {
    typedef typename A::mem_t affine_h;
    int dev;
    size_t pad, n;
    affine_h* points = nullptr;
    M* msm = nullptr;

    ~zkp_set_t()
    {
        delete msm;
        if (points) {
            cudaSetDevice(dev);
            cudaFree(points);
        }
    }
};

template<class M, class A>
static RustError zkp_points_new(zkp_set_t<M, A>** out, const A* points, size_t npoints,
                                size_t affine_sz, size_t pad, int dev)
{
    typedef typename zkp_set_t<M, A>::affine_h affine_h;
    *out = nullptr;
    auto* set = new (std::nothrow) zkp_set_t<M, A>{dev, pad, npoints};
    if (set == nullptr)
        return RustError{cudaErrorMemoryAllocation, "host allocation failed"};
    try {
        const gpu_t& gpu = select_gpu(dev);
        CUDA_OK(cudaMalloc(&set->points, std::max<size_t>(pad + npoints, 1) * sizeof(affine_h)));
        CUDA_OK(cudaMemset(set->points, 0, pad * sizeof(affine_h)));
        gpu.HtoD(set->points + pad, points, npoints, affine_sz);
        gpu.sync();
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

// The batch plan's k MSMs against a resident set: k xyzz points (X, Y, ZZZ, ZZ) into `out`.
template<class B, class M, class A>
static RustError zkp_set_batch(const zkp_set_t<M, A>* set, const zkp_bm_plan_t* plan,
                               typename B::mem_t* out)
{
    if (plan->dev != set->dev || plan->n != set->pad + set->n)
        return RustError{cudaErrorInvalidValue,
                         "batch plan and point set differ in device or length"};
    return zkp_bm_run<B>(plan, set->points, out);
}

#define ZKP_MSM_ENTRIES(G, M, P, A, B)                                                     \
typedef zkp_set_t<M, A> ZKP_FN(zkp_##G##_set_t_, CURVE);                                    \
extern "C" RustError ZKP_FN(zkp_##G##_points_new_, CURVE)(                                  \
    ZKP_FN(zkp_##G##_set_t_, CURVE)** out, const A* points, size_t npoints,                 \
    size_t affine_sz, size_t pad, int dev)                                                  \
{   return zkp_points_new<M, A>(out, points, npoints, affine_sz, pad, dev);   }             \
extern "C" void ZKP_FN(zkp_##G##_points_drop_, CURVE)(ZKP_FN(zkp_##G##_set_t_, CURVE)* set) \
{   delete set;   }                                                                         \
extern "C" RustError ZKP_FN(zkp_##G##_msm_, CURVE)(ZKP_FN(zkp_##G##_set_t_, CURVE)* set,    \
                                                   P* out, const scalar_t* scalars,         \
                                                   size_t nscalars, bool mont, bool on_device) \
{   return zkp_msm<M, P, A>(set, out, scalars, nscalars, mont, on_device);   }              \
extern "C" RustError ZKP_FN(zkp_##G##_batch_msm_, CURVE)(                                   \
    const ZKP_FN(zkp_##G##_set_t_, CURVE)* set, const zkp_bm_plan_t* plan,                  \
    typename B::mem_t* out)                                                                 \
{   return zkp_set_batch<B, M, A>(set, plan, out);   }

ZKP_MSM_ENTRIES(g1, zkp_g1_msm_t, point_t, affine_t, bucket_t)
ZKP_MSM_ENTRIES(g2, zkp_g2_msm_t, point_fp2_t, affine_fp2_t, bucket_fp2_t)

// A batch plan for k scalar vectors of n scalars each, all in device memory
// (`scalars`: a host array of k device pointers).
extern "C" RustError ZKP_FN(zkp_bm_plan_new_, CURVE)(zkp_bm_plan_t** out,
                                                    const scalar_t* const* scalars,
                                                    uint32_t k, uint32_t n, bool mont, int dev)
{   return zkp_bm_plan_new<scalar_t>(out, scalars, k, n, mont, dev);   }

extern "C" void ZKP_FN(zkp_bm_plan_drop_, CURVE)(zkp_bm_plan_t* plan)
{   delete plan;   }

// One-shot G1 MSM (points uploaded with the scalars, sppark's own entry point): the
// reference the resident path is checked against.
extern "C" RustError ZKP_FN(zkp_g1_msm_oneshot_, CURVE)(point_t* out, const affine_t* points,
                                                       size_t npoints, const scalar_t* scalars,
                                                       size_t affine_sz)
{
    return mult_pippenger<bucket_t>(out, points, npoints, scalars, false, affine_sz);
}

// ---- quotient -------------------------------------------------------------------------
// sppark's NTT has its own root of unity ω' per domain; snarkjs's is ω with ω' = ω^k
// (k = 1 on BN254, odd k on BLS12-381, whose sppark root comes from another generator).
// Values at ω^j become values at ω'^i by reading j = k·i mod n, and back by writing there.
// The coset shift is snarkjs's, applied to the coefficients (sppark's coset NTT uses the
// field's generator instead). These few elementwise kernels are all zkpipe adds.

__global__ void zkp_gather(fr_t* out, const fr_t* in, uint32_t lg_n, uint64_t k)
{
    size_t n = (size_t)1 << lg_n;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[(k * i) & (n - 1)];
}

// x[p] *= shift^brev(p): the coefficients come out of the GS iNTT in bit-reversed order,
// and the powers are stored in that order too (made once on the host), so both reads
// are coalesced.
__global__ void zkp_coset_scale(fr_t* x, const fr_t* powers_bitrev, uint32_t lg_n)
{
    size_t n = (size_t)1 << lg_n;
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < n;
         p += (size_t)gridDim.x * blockDim.x)
        x[p] = x[p] * powers_bitrev[p];
}

// h = a·b − c, written to h[k·i mod n] (k = 1: in place order).
__global__ void zkp_pointwise(fr_t* h, const fr_t* a, const fr_t* b, const fr_t* c,
                              uint32_t lg_n, uint64_t k)
{
    size_t n = (size_t)1 << lg_n;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        fr_t ai = a[i], bi = b[i], ci = c[i];
        h[(k * i) & (n - 1)] = ai * bi - ci;
    }
}

// Device buffers for one domain size, allocated once and reused by every proof.
// Each has a stream of its own, so the quotients of proofs in flight at once (a batch, or
// two passes) overlap instead of queueing on the device's shared stream: at 2^14 each
// kernel fills a small part of the GPU.
struct zkp_quotient_t {
    const gpu_t& gpu;
    stream_t stream;
    uint32_t lg_n;
    dev_ptr_t<fr_t> d;   // a, b, c, scratch, coset powers: 5n elements

    // The device is made current before the stream and buffers are made on it.
    static const gpu_t& current(int device_id)
    {
        const gpu_t& g = select_gpu(device_id);
        g.select();
        return g;
    }

    zkp_quotient_t(uint32_t lg, int device_id)
        : gpu(current(device_id)), stream(device_id), lg_n(lg), d((size_t)5 << lg) {}

    // Where the last run left h on the device (the scratch third of d).
    const fr_t* h() const { return &d[(size_t)3 << lg_n]; }
};

// `powers_bitrev`: shift^brev(p) for p in 0..n (Montgomery), kept on the device.
extern "C" RustError ZKP_FN(zkp_quotient_new_, CURVE)(zkp_quotient_t** out, uint32_t lg_n,
                                                     const fr_t* powers_bitrev, int dev)
{
    try {
        if (lg_n < 1 || lg_n > 31)
            return RustError{cudaErrorInvalidValue, "quotient domain size out of range"};
        *out = new zkp_quotient_t(lg_n, dev);
        (*out)->gpu.select();
        stream_t& stream = (*out)->stream;
        stream.HtoD(&(*out)->d[(size_t)4 << lg_n], powers_bitrev, (size_t)1 << lg_n);
        stream.sync();
        return RustError{cudaSuccess};
    } catch (const cuda_error& e) {
        *out = nullptr;
        return RustError{e.code(), e.what()};
    }
}

extern "C" void ZKP_FN(zkp_quotient_drop_, CURVE)(zkp_quotient_t* q)
{
    delete q;
}

extern "C" const fr_t* ZKP_FN(zkp_quotient_h_, CURVE)(const zkp_quotient_t* q)
{
    return q->h();
}

// a, b, c: evaluations on snarkjs's domain (Montgomery, natural order, host, ideally
// pinned), or all three nullptr when zkp_reduce_run_ has left them in the quotient's
// buffers; h: out, a·b − c on snarkjs's coset, or nullptr to leave h on the device only
// (zkp_quotient_h_), for an MSM that reads it there.
extern "C" RustError ZKP_FN(zkp_quotient_run_, CURVE)(zkp_quotient_t* q, const fr_t* a,
                                                     const fr_t* b, const fr_t* c, fr_t* h,
                                                     uint64_t k)
{
    const gpu_t& gpu = q->gpu;
    stream_t& stream = q->stream;
    bool on_device = a == nullptr;
    if (on_device != (b == nullptr) || on_device != (c == nullptr))
        return RustError{cudaErrorInvalidValue, "quotient inputs: some on the host, some not"};
    try {
        gpu.select();
        uint32_t lg_n = q->lg_n;
        size_t n = (size_t)1 << lg_n;
        fr_t* d = &q->d[0];
        fr_t* scratch = d + 3 * n;
        const fr_t* powers = d + 4 * n;
        const fr_t* in[3] = {a, b, c};
        uint32_t threads = 256;
        uint32_t blocks = (uint32_t)std::min<size_t>((n + threads - 1) / threads,
                                                     (size_t)gpu.sm_count() * 8);
        for (int v = 0; v < 3; v++) {
            fr_t* x = d + v * n;
            if (k != 1 || !on_device) {
                if (k == 1) {
                    stream.HtoD(x, in[v], n);
                } else {
                    if (on_device)
                        CUDA_OK(cudaMemcpyAsync(scratch, x, n * sizeof(fr_t),
                                                cudaMemcpyDeviceToDevice, (cudaStream_t)stream));
                    else
                        stream.HtoD(scratch, in[v], n);
                    zkp_gather<<<blocks, threads, 0, (cudaStream_t)stream>>>(x, scratch, lg_n, k);
                    CUDA_OK(cudaGetLastError());
                }
            }
            NTT::Base_dev_ptr(stream, x, lg_n, NTT::InputOutputOrder::NR,
                              NTT::Direction::inverse, NTT::Type::standard);
            zkp_coset_scale<<<blocks, threads, 0, (cudaStream_t)stream>>>(x, powers, lg_n);
            CUDA_OK(cudaGetLastError());
            NTT::Base_dev_ptr(stream, x, lg_n, NTT::InputOutputOrder::RN,
                              NTT::Direction::forward, NTT::Type::standard);
        }
        zkp_pointwise<<<blocks, threads, 0, (cudaStream_t)stream>>>(scratch, d, d + n, d + 2 * n, lg_n, k);
        CUDA_OK(cudaGetLastError());
        if (h != nullptr)
            stream.DtoH(h, scratch, n);
        stream.sync();
    } catch (const cuda_error& e) {
        stream.sync();
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}

// ---- reduce ---------------------------------------------------------------------------
// The key's A and B matrices resident on the device (CSR, one row per domain row, values
// in Montgomery form), and a = A·w, b = B·w, c = a∘b computed there straight into a
// quotient's buffers: only w crosses the bus, and the host's cores are left to feed the
// GPU (a 2^20 synthetic key's products cost ~1.4 core-seconds on the CPU). No library
// offers sparse products over these fields, hence this kernel.

// Rows with more entries than this in A or B are summed by a warp each, the rest by a
// thread each: a thread per row alone leaves a 512-entry row's thread running long after
// the others (the whole kernel's time at 2^14).
#define ZKP_LONG_ROW 32

struct zkp_csr_t {
    int dev;
    uint32_t rows;
    uint32_t* starts[2];   // A, B: rows + 1 offsets each
    uint32_t* cols[2];
    fr_t* vals[2];
    uint32_t* long_rows;   // rows with more than ZKP_LONG_ROW entries in A or B
    uint32_t n_long;

    ~zkp_csr_t()
    {
        cudaSetDevice(dev);
        for (int m = 0; m < 2; m++) {
            cudaFree(starts[m]);
            cudaFree(cols[m]);
            cudaFree(vals[m]);
        }
        cudaFree(long_rows);
    }
};

// ⟨row, w⟩ with w in standard form: a Montgomery product of a Montgomery value and a
// standard one is the standard product, so the sum is converted once, not each w read.
__device__ __forceinline__ fr_t zkp_row_dot(const uint32_t* starts, const uint32_t* cols,
                                            const fr_t* vals, const fr_t* w, size_t row)
{
    fr_t s;
    s.zero();
    for (uint32_t j = starts[row], end = starts[row + 1]; j < end; j++)
        s += vals[j] * w[cols[j]];
    s.to();
    return s;
}

__device__ __forceinline__ bool zkp_is_long(const uint32_t* a_starts, const uint32_t* b_starts,
                                            size_t row)
{
    return a_starts[row + 1] - a_starts[row] > ZKP_LONG_ROW
        || b_starts[row + 1] - b_starts[row] > ZKP_LONG_ROW;
}

// One thread per short row: rows come in runs of similar length (circom emits them that
// way), so a warp's rows cost about the same. Long rows are left to zkp_reduce_long.
__global__ void zkp_reduce(fr_t* a, fr_t* b, fr_t* c,
                           const uint32_t* a_starts, const uint32_t* a_cols, const fr_t* a_vals,
                           const uint32_t* b_starts, const uint32_t* b_cols, const fr_t* b_vals,
                           const fr_t* w, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        if (zkp_is_long(a_starts, b_starts, i))
            continue;
        fr_t ai = zkp_row_dot(a_starts, a_cols, a_vals, w, i);
        fr_t bi = zkp_row_dot(b_starts, b_cols, b_vals, w, i);
        a[i] = ai;
        b[i] = bi;
        c[i] = ai * bi;
    }
}

// ⟨row, w⟩ (standard form, as in zkp_row_dot) summed by a whole warp: each lane takes
// every 32nd entry, then the lanes' sums are folded with shuffles, limb by limb.
__device__ __forceinline__ fr_t zkp_row_dot_warp(const uint32_t* starts, const uint32_t* cols,
                                                 const fr_t* vals, const fr_t* w, size_t row,
                                                 uint32_t lane)
{
    fr_t s;
    s.zero();
    for (uint32_t j = starts[row] + lane, end = starts[row + 1]; j < end; j += 32)
        s += vals[j] * w[cols[j]];
    for (int delta = 16; delta > 0; delta /= 2) {
        fr_t other;
        const uint32_t* from = reinterpret_cast<const uint32_t*>(&s);
        uint32_t* to = reinterpret_cast<uint32_t*>(&other);
        for (size_t k = 0; k < sizeof(fr_t) / sizeof(uint32_t); k++)
            to[k] = __shfl_down_sync(0xffffffff, from[k], delta);
        s += other;
    }
    return s;
}

// One warp per long row (rows listed in `long_rows`).
__global__ void zkp_reduce_long(fr_t* a, fr_t* b, fr_t* c, const uint32_t* long_rows,
                                uint32_t n_long,
                                const uint32_t* a_starts, const uint32_t* a_cols,
                                const fr_t* a_vals, const uint32_t* b_starts,
                                const uint32_t* b_cols, const fr_t* b_vals, const fr_t* w)
{
    uint32_t lane = threadIdx.x % 32;
    size_t warps = (size_t)gridDim.x * (blockDim.x / 32);
    for (size_t k = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32; k < n_long;
         k += warps) {
        size_t row = long_rows[k];
        fr_t ai = zkp_row_dot_warp(a_starts, a_cols, a_vals, w, row, lane);
        fr_t bi = zkp_row_dot_warp(b_starts, b_cols, b_vals, w, row, lane);
        if (lane == 0) {
            ai.to();
            bi.to();
            a[row] = ai;
            b[row] = bi;
            c[row] = ai * bi;
        }
    }
}

// Uploads A and B (host CSR arrays, `rows` rows each) to device `dev`.
extern "C" RustError ZKP_FN(zkp_csr_new_, CURVE)(zkp_csr_t** out, uint32_t rows,
                                                const uint32_t* a_starts, const uint32_t* a_cols,
                                                const fr_t* a_vals, const uint32_t* b_starts,
                                                const uint32_t* b_cols, const fr_t* b_vals,
                                                int dev)
{
    *out = nullptr;
    auto* m = new (std::nothrow) zkp_csr_t{dev, rows, {nullptr, nullptr}, {nullptr, nullptr},
                                           {nullptr, nullptr}, nullptr, 0};
    if (m == nullptr)
        return RustError{cudaErrorMemoryAllocation, "host allocation failed"};
    const uint32_t* starts[2] = {a_starts, b_starts};
    const uint32_t* cols[2] = {a_cols, b_cols};
    const fr_t* vals[2] = {a_vals, b_vals};
    try {
        const gpu_t& gpu = select_gpu(dev);
        for (int i = 0; i < 2; i++) {
            size_t nnz = starts[i][rows];
            CUDA_OK(cudaMalloc(&m->starts[i], ((size_t)rows + 1) * sizeof(uint32_t)));
            CUDA_OK(cudaMalloc(&m->cols[i], std::max<size_t>(nnz, 1) * sizeof(uint32_t)));
            CUDA_OK(cudaMalloc(&m->vals[i], std::max<size_t>(nnz, 1) * sizeof(fr_t)));
            gpu.HtoD(m->starts[i], starts[i], (size_t)rows + 1);
            gpu.HtoD(m->cols[i], cols[i], nnz);
            gpu.HtoD(m->vals[i], vals[i], nnz);
        }
        std::vector<uint32_t> long_rows;
        for (uint32_t r = 0; r < rows; r++)
            if (a_starts[r + 1] - a_starts[r] > ZKP_LONG_ROW
                || b_starts[r + 1] - b_starts[r] > ZKP_LONG_ROW)
                long_rows.push_back(r);
        m->n_long = (uint32_t)long_rows.size();
        CUDA_OK(cudaMalloc(&m->long_rows, std::max<size_t>(long_rows.size(), 1) * sizeof(uint32_t)));
        gpu.HtoD(m->long_rows, long_rows.data(), long_rows.size());
        gpu.sync();
    } catch (const cuda_error& e) {
        delete m;
        return RustError{e.code(), e.what()};
    }
    *out = m;
    return RustError{cudaSuccess};
}

extern "C" void ZKP_FN(zkp_csr_drop_, CURVE)(zkp_csr_t* m)
{
    delete m;
}

// a, b, c of the witness `w` (device memory on the quotient's GPU, the key's nVars
// scalars in standard form: what the MSMs read) into the quotient's buffers, for a
// zkp_quotient_run_ with no host inputs. Returns when they are there.
extern "C" RustError ZKP_FN(zkp_reduce_run_, CURVE)(zkp_quotient_t* q, const zkp_csr_t* m,
                                                   const fr_t* w)
{
    const gpu_t& gpu = q->gpu;
    stream_t& stream = q->stream;
    size_t n = (size_t)1 << q->lg_n;
    if (m->rows != n || m->dev != gpu.id())
        return RustError{cudaErrorInvalidValue,
                         "matrices and quotient differ in domain size or device"};
    try {
        gpu.select();
        fr_t* d = &q->d[0];
        uint32_t threads = 128;
        uint32_t blocks = (uint32_t)std::min<size_t>((n + threads - 1) / threads,
                                                     (size_t)gpu.sm_count() * 16);
        zkp_reduce<<<blocks, threads, 0, (cudaStream_t)stream>>>(
            d, d + n, d + 2 * n, m->starts[0], m->cols[0], m->vals[0],
            m->starts[1], m->cols[1], m->vals[1], w, n);
        CUDA_OK(cudaGetLastError());
        if (m->n_long > 0) {
            uint32_t long_blocks = (uint32_t)std::min<size_t>((m->n_long + 3) / 4,
                                                              (size_t)gpu.sm_count() * 16);
            zkp_reduce_long<<<long_blocks, 128, 0, (cudaStream_t)stream>>>(
                d, d + n, d + 2 * n, m->long_rows, m->n_long, m->starts[0], m->cols[0],
                m->vals[0], m->starts[1], m->cols[1], m->vals[1], w);
            CUDA_OK(cudaGetLastError());
        }
        stream.sync();
    } catch (const cuda_error& e) {
        stream.sync();
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}
