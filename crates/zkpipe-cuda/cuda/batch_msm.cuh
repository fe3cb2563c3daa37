// Batched MSM: k scalar vectors against one resident point set in one GPU pass, written
// here because sppark's Pippenger takes one scalar vector per call (and its per-call
// launches, synchronizations and host-side window sums dominate at 2^14 points). Small
// circuits proved for many clients are the case it is for: k proofs of one key share
// the launches, and the GPU gets k times the parallel work per kernel.
//
// Bucket method with unsigned c-bit digits. Every (proof j, window w, digit d ≠ 0) is a
// bucket, keyed (j·nwins + w)·2^c + d, so all proofs' buckets live in one key space:
//
//   plan (once per batch of scalar vectors, shared by every point set they multiply):
//     digits → radix sort of (key, point index) → bucket ranges → pieces of ≤ L entries
//   run (per point set):
//     pieces: sum each piece's points (affine → xyzz)
//     segments: per (j, w) and run of G buckets, Σ d·B_d by running sums
//     windows: per (j, w), combine the segments; per j, Horner over the windows
//
// Pieces cap the serial work of one thread when a bucket is hit often (witnesses are full
// of 0s and 1s, so window 0's digit 1 can hold half the points). Kernels are templated on
// sppark's xyzz bucket type; G2 points (fp2) take two lanes per value (bucket_t::degree),
// so every kernel maps `degree` adjacent threads to one logical item.

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <mutex>

#ifndef ZKP_BM_PIECE
# define ZKP_BM_PIECE 32        // entries a thread sums per piece
#endif
#define ZKP_BM_SEGMENT 32       // buckets per running-sum segment

template<class scalar_t>
__global__ void zkp_bm_digits(uint32_t* keys, uint32_t* vals,
                              const scalar_t* const* scalars, uint32_t n, uint32_t k,
                              uint32_t wbits, uint32_t nwins, uint32_t sentinel, bool mont)
{
    const uint32_t top_i = (scalar_t::nbits + 31) / 32 - 1;
    const uint32_t mask = (1u << wbits) - 1;
    size_t total = (size_t)n * k;
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < total;
         t += (size_t)gridDim.x * blockDim.x) {
        uint32_t j = (uint32_t)(t / n), i = (uint32_t)(t % n);
        scalar_t s = scalars[j][i];
        if (mont)
            s.from();
        for (uint32_t w = 0; w < nwins; w++) {
            uint32_t off = w * wbits, q = off / 32;
            uint64_t v = s[q];
            if (q < top_i)
                v |= (uint64_t)s[q + 1] << 32;
            uint32_t d = (uint32_t)(v >> (off % 32)) & mask;
            size_t at = ((size_t)j * nwins + w) * n + i;
            keys[at] = d ? (((j * nwins + w) << wbits) | d) : sentinel;
            vals[at] = i;
        }
    }
}

// start/end of every present bucket in the sorted keys (absent ones stay 0, 0).
static __global__ void zkp_bm_ranges(uint32_t* start, uint32_t* end, const uint32_t* keys,
                              size_t len, uint32_t sentinel)
{
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < len;
         p += (size_t)gridDim.x * blockDim.x) {
        uint32_t key = keys[p];
        if (key >= sentinel)
            continue;
        if (p == 0 || keys[p - 1] != key)
            start[key] = (uint32_t)p;
        if (p == len - 1 || keys[p + 1] != key)
            end[key] = (uint32_t)(p + 1);
    }
}

static __global__ void zkp_bm_piece_counts(uint32_t* count, const uint32_t* start,
                                    const uint32_t* end, uint32_t nkeys)
{
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b <= nkeys;
         b += gridDim.x * blockDim.x)
        count[b] = b < nkeys ? (end[b] - start[b] + ZKP_BM_PIECE - 1) / ZKP_BM_PIECE : 0;
}

// Piece q of bucket b covers sorted entries [start + q·L, min(start + (q+1)·L, end)).
static __global__ void zkp_bm_pieces(uint32_t* pstart, uint32_t* pend, const uint32_t* poff,
                              const uint32_t* start, const uint32_t* end, uint32_t nkeys)
{
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < nkeys;
         b += gridDim.x * blockDim.x) {
        uint32_t s = start[b], e = end[b];
        for (uint32_t q = poff[b]; s < e; q++, s += ZKP_BM_PIECE) {
            pstart[q] = s;
            pend[q] = min(s + ZKP_BM_PIECE, e);
        }
    }
}

template<class bucket_t, class affine_h>
__global__ void zkp_bm_sum_pieces(typename bucket_t::mem_t* partial, const affine_h* points,
                                  const uint32_t* vals, const uint32_t* pstart,
                                  const uint32_t* pend, const uint32_t* npieces)
{
    const uint32_t deg = bucket_t::degree;
    const uint32_t total = *npieces;
    for (uint32_t p = (blockIdx.x * blockDim.x + threadIdx.x) / deg; p < total;
         p += gridDim.x * blockDim.x / deg) {
        bucket_t acc;
        acc.inf();
        for (uint32_t e = pstart[p]; e < pend[p]; e++) {
            typename bucket_t::affine_t a = points[vals[e]];
            acc.add(a);
        }
        partial[p] = acc;
    }
}

// Bucket b's value: the sum of its pieces (0, 1, or a few for much-hit buckets).
template<class bucket_t>
__device__ __forceinline__ bucket_t zkp_bm_bucket(const typename bucket_t::mem_t* partial,
                                                  const uint32_t* poff, uint32_t b)
{
    bucket_t acc;
    acc.inf();
    for (uint32_t q = poff[b]; q < poff[b + 1]; q++) {
        bucket_t x = partial[q];
        acc.add(x);
    }
    return acc;
}

template<class bucket_t>
__device__ __forceinline__ void zkp_bm_double(bucket_t& p, uint32_t times)
{
    for (uint32_t i = 0; i < times; i++) {
        bucket_t t = p;
        p.add(t);
    }
}

// Per (window jw, segment s) of G buckets d = s·G + u: S = Σ_u B_d and U = Σ_u u·B_d
// (running sums from the top), so the window's Σ d·B_d = Σ_s (U_s + s·G·S_s).
template<class bucket_t>
__global__ void zkp_bm_segments(typename bucket_t::mem_t* seg_sum,
                                typename bucket_t::mem_t* seg_acc,
                                const typename bucket_t::mem_t* partial,
                                const uint32_t* poff, uint32_t nwindows, uint32_t wbits)
{
    const uint32_t deg = bucket_t::degree;
    const uint32_t nseg = (1u << wbits) / ZKP_BM_SEGMENT;
    for (uint32_t t = (blockIdx.x * blockDim.x + threadIdx.x) / deg; t < nwindows * nseg;
         t += gridDim.x * blockDim.x / deg) {
        uint32_t jw = t / nseg, s = t % nseg;
        uint32_t base = (jw << wbits) + s * ZKP_BM_SEGMENT;
        bucket_t run, acc;
        run.inf();
        acc.inf();
        for (uint32_t u = ZKP_BM_SEGMENT - 1; u > 0; u--) {
            bucket_t b = zkp_bm_bucket<bucket_t>(partial, poff, base + u);
            run.add(b);
            acc.add(run);
        }
        bucket_t b0 = zkp_bm_bucket<bucket_t>(partial, poff, base);
        run.add(b0);
        seg_sum[t] = run;
        seg_acc[t] = acc;
    }
}

// Per window jw: Σ_s U_s + G·Σ_s s·S_s.
template<class bucket_t>
__global__ void zkp_bm_windows(typename bucket_t::mem_t* window,
                               const typename bucket_t::mem_t* seg_sum,
                               const typename bucket_t::mem_t* seg_acc, uint32_t nwindows,
                               uint32_t wbits)
{
    const uint32_t deg = bucket_t::degree;
    const uint32_t nseg = (1u << wbits) / ZKP_BM_SEGMENT;
    for (uint32_t jw = (blockIdx.x * blockDim.x + threadIdx.x) / deg; jw < nwindows;
         jw += gridDim.x * blockDim.x / deg) {
        const auto* ss = seg_sum + (size_t)jw * nseg;
        const auto* sa = seg_acc + (size_t)jw * nseg;
        bucket_t run, weighted, sum_u;
        run.inf();
        weighted.inf();
        sum_u.inf();
        for (uint32_t s = nseg - 1; s > 0; s--) {
            bucket_t x = ss[s];
            run.add(x);
            weighted.add(run);
        }
        for (uint32_t s = 0; s < nseg; s++) {
            bucket_t x = sa[s];
            sum_u.add(x);
        }
        zkp_bm_double(weighted, __ffs(ZKP_BM_SEGMENT) - 1);
        weighted.add(sum_u);
        window[jw] = weighted;
    }
}

// Per proof j: Σ_w 2^(w·c)·W_{j,w} by Horner from the top window.
template<class bucket_t>
__global__ void zkp_bm_horner(typename bucket_t::mem_t* out,
                              const typename bucket_t::mem_t* window, uint32_t k,
                              uint32_t nwins, uint32_t wbits)
{
    const uint32_t deg = bucket_t::degree;
    for (uint32_t j = (blockIdx.x * blockDim.x + threadIdx.x) / deg; j < k;
         j += gridDim.x * blockDim.x / deg) {
        bucket_t acc = window[(size_t)j * nwins + nwins - 1];
        for (uint32_t w = nwins - 1; w-- > 0;) {
            zkp_bm_double(acc, wbits);
            bucket_t x = window[(size_t)j * nwins + w];
            acc.add(x);
        }
        out[j] = acc;
    }
}

// Stream-ordered allocations come from the device's memory pool; keep up to 2 GiB of
// freed blocks there instead of handing them back to the driver at every synchronize,
// so per-batch scratch costs no driver allocation once warm.
static void zkp_keep_pool(int dev)
{
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
        uint64_t keep = 2ull << 30;
        (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
}

// The digit plan of k scalar vectors of length n: which points go into which bucket.
// Read-only once built, so several point sets' runs may use it at once. Its arrays are
// stream-ordered allocations on its own stream (cudaFree would wait for the whole GPU).
struct zkp_bm_plan_t {
    int dev;
    uint32_t k, n, wbits, nwins, nkeys;
    size_t max_pieces;
    uint32_t npieces = 0;         // pieces actually made (poff[nkeys])
    cudaStream_t st = nullptr;
    uint32_t* vals = nullptr;     // point indices, sorted by bucket key
    uint32_t* poff = nullptr;     // nkeys + 1 piece offsets; poff[nkeys] = piece count
    uint32_t* pstart = nullptr;
    uint32_t* pend = nullptr;

    ~zkp_bm_plan_t()
    {
        if (!st)
            return;
        cudaSetDevice(dev);
        for (void* p : {(void*)vals, (void*)poff, (void*)pstart, (void*)pend})
            if (p)
                cudaFreeAsync(p, st);
        cudaStreamDestroy(st);
    }
};

// Window width minimizing additions: nwins·(n + 2^c) (one add per entry, about two per
// bucket in the running sums), with 2^c a multiple of the segment size.
static uint32_t zkp_bm_wbits(uint32_t n, uint32_t bits)
{
    uint32_t best = 5;
    double best_cost = 1e300;
    for (uint32_t c = 5; c <= 16; c++) {
        double cost = (double)((bits + c - 1) / c) * ((double)n + 2.0 * (1u << c));
        if (cost < best_cost) {
            best_cost = cost;
            best = c;
        }
    }
    return best;
}

static uint32_t zkp_grid(size_t items, uint32_t threads)
{
    size_t blocks = (items + threads - 1) / threads;
    return (uint32_t)std::max<size_t>(1, std::min<size_t>(blocks, 65535));
}

// Stream-ordered scratch, freed when it goes out of scope.
struct zkp_scratch_t {
    void* p = nullptr;
    cudaStream_t st;
    zkp_scratch_t(size_t bytes, cudaStream_t s) : st(s)
    {   CUDA_OK(cudaMallocAsync(&p, std::max<size_t>(bytes, 1), st));   }
    ~zkp_scratch_t() { if (p) cudaFreeAsync(p, st); }
    template<class T> T* at(size_t byte_off) const { return (T*)((char*)p + byte_off); }
};

struct zkp_stream_t {
    cudaStream_t st = nullptr;
    explicit zkp_stream_t(int dev)
    {
        CUDA_OK(cudaSetDevice(dev));
        CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    }
    ~zkp_stream_t() { if (st) cudaStreamDestroy(st); }
};

static size_t zkp_align(size_t x) { return (x + 255) & ~(size_t)255; }

// `scalars`: host array of k device pointers to n scalars each (standard form, or
// Montgomery with `mont`).
template<class scalar_t>
static RustError zkp_bm_plan_new(zkp_bm_plan_t** out, const scalar_t* const* scalars,
                                 uint32_t k, uint32_t n, bool mont, int dev)
{
    *out = nullptr;
    zkp_bm_plan_t* plan = nullptr;
    try {
        if (k == 0 || n == 0)
            return RustError{cudaErrorInvalidValue, "batch MSM of no vectors or no points"};
        uint32_t bits = scalar_t::nbits;
        uint32_t wbits = zkp_bm_wbits(n, bits);
        uint32_t nwins = (bits + wbits - 1) / wbits;
        uint64_t nkeys64 = (uint64_t)k * nwins << wbits;
        uint64_t len64 = (uint64_t)k * nwins * n;
        if (nkeys64 >= (1ull << 31) || len64 >= (1ull << 31))
            return RustError{cudaErrorInvalidValue, "batch MSM too large for 32-bit keys"};
        uint32_t nkeys = (uint32_t)nkeys64;
        size_t len = (size_t)len64;
        int end_bit = 1;
        while ((1ull << end_bit) <= nkeys)
            end_bit++;

        plan = new zkp_bm_plan_t{dev, k, n, wbits, nwins, nkeys,
                                 len / ZKP_BM_PIECE + std::min<size_t>(len, nkeys) + 1};
        CUDA_OK(cudaSetDevice(dev));
        CUDA_OK(cudaStreamCreateWithFlags(&plan->st, cudaStreamNonBlocking));
        cudaStream_t st = plan->st;
        static std::once_flag kept[64];
        if (dev >= 0 && dev < 64)
            std::call_once(kept[dev], zkp_keep_pool, dev);

        CUDA_OK(cudaMallocAsync(&plan->vals, len * sizeof(uint32_t), st));
        CUDA_OK(cudaMallocAsync(&plan->poff, ((size_t)nkeys + 1) * sizeof(uint32_t), st));
        CUDA_OK(cudaMallocAsync(&plan->pstart, plan->max_pieces * sizeof(uint32_t), st));
        CUDA_OK(cudaMallocAsync(&plan->pend, plan->max_pieces * sizeof(uint32_t), st));

        size_t sort_bytes = 0, scan_bytes = 0;
        CUDA_OK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, (uint32_t*)nullptr,
                                                 (uint32_t*)nullptr, (uint32_t*)nullptr,
                                                 (uint32_t*)nullptr, len, 0, end_bit, st));
        CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, (uint32_t*)nullptr,
                                               (uint32_t*)nullptr, nkeys + 1, st));
        size_t o_keys = 0;
        size_t o_keys2 = o_keys + zkp_align(len * 4);
        size_t o_vals = o_keys2 + zkp_align(len * 4);
        size_t o_start = o_vals + zkp_align(len * 4);
        size_t o_end = o_start + zkp_align(((size_t)nkeys + 1) * 4);
        size_t o_count = o_end + zkp_align(((size_t)nkeys + 1) * 4);
        size_t o_ptrs = o_count + zkp_align(((size_t)nkeys + 1) * 4);
        size_t o_temp = o_ptrs + zkp_align(k * sizeof(void*));
        zkp_scratch_t tmp(o_temp + std::max(sort_bytes, scan_bytes), st);

        auto* keys = tmp.at<uint32_t>(o_keys);
        auto* keys2 = tmp.at<uint32_t>(o_keys2);
        auto* vals = tmp.at<uint32_t>(o_vals);
        auto* start = tmp.at<uint32_t>(o_start);
        auto* end = tmp.at<uint32_t>(o_end);
        auto* count = tmp.at<uint32_t>(o_count);
        auto* ptrs = tmp.at<const scalar_t*>(o_ptrs);
        void* temp = tmp.at<void>(o_temp);

        CUDA_OK(cudaMemcpyAsync(ptrs, scalars, k * sizeof(void*), cudaMemcpyHostToDevice, st));
        zkp_bm_digits<scalar_t><<<zkp_grid((size_t)n * k, 256), 256, 0, st>>>(
            keys, vals, ptrs, n, k, wbits, nwins, nkeys, mont);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cub::DeviceRadixSort::SortPairs(temp, sort_bytes, keys, keys2, vals,
                                                 plan->vals, len, 0, end_bit, st));
        CUDA_OK(cudaMemsetAsync(start, 0, ((size_t)nkeys + 1) * 4, st));
        CUDA_OK(cudaMemsetAsync(end, 0, ((size_t)nkeys + 1) * 4, st));
        zkp_bm_ranges<<<zkp_grid(len, 256), 256, 0, st>>>(start, end, keys2, len, nkeys);
        CUDA_OK(cudaGetLastError());
        zkp_bm_piece_counts<<<zkp_grid((size_t)nkeys + 1, 256), 256, 0, st>>>(
            count, start, end, nkeys);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cub::DeviceScan::ExclusiveSum(temp, scan_bytes, count, plan->poff,
                                               nkeys + 1, st));
        zkp_bm_pieces<<<zkp_grid(nkeys, 256), 256, 0, st>>>(plan->pstart, plan->pend,
                                                            plan->poff, start, end, nkeys);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpyAsync(&plan->npieces, &plan->poff[nkeys], sizeof(uint32_t),
                                cudaMemcpyDeviceToHost, st));
        CUDA_OK(cudaStreamSynchronize(st));
    } catch (const cuda_error& e) {
        delete plan;
        return RustError{e.code(), e.what()};
    } catch (const std::bad_alloc&) {
        delete plan;
        return RustError{cudaErrorMemoryAllocation, "host allocation failed"};
    }
    *out = plan;
    return RustError{cudaSuccess};
}

// The plan's k MSMs against `points` (device, the plan's n of them): k xyzz results into
// host memory `out`.
template<class bucket_t, class affine_h>
static RustError zkp_bm_run(const zkp_bm_plan_t* plan, const affine_h* points,
                            typename bucket_t::mem_t* out)
{
    typedef typename bucket_t::mem_t bucket_h;
    try {
        zkp_stream_t stream(plan->dev);
        cudaStream_t st = stream.st;
        const uint32_t deg = bucket_t::degree;
        uint32_t nwindows = plan->k * plan->nwins;
        uint32_t nseg = (1u << plan->wbits) / ZKP_BM_SEGMENT;
        size_t o_partial = 0;
        size_t o_sum = o_partial + zkp_align(std::max<size_t>(plan->npieces, 1) * sizeof(bucket_h));
        size_t o_acc = o_sum + zkp_align((size_t)nwindows * nseg * sizeof(bucket_h));
        size_t o_win = o_acc + zkp_align((size_t)nwindows * nseg * sizeof(bucket_h));
        size_t o_out = o_win + zkp_align((size_t)nwindows * sizeof(bucket_h));
        zkp_scratch_t tmp(o_out + plan->k * sizeof(bucket_h), st);
        auto* partial = tmp.at<bucket_h>(o_partial);
        auto* seg_sum = tmp.at<bucket_h>(o_sum);
        auto* seg_acc = tmp.at<bucket_h>(o_acc);
        auto* window = tmp.at<bucket_h>(o_win);
        auto* d_out = tmp.at<bucket_h>(o_out);

        const uint32_t threads = 128;
        zkp_bm_sum_pieces<bucket_t, affine_h>
            <<<zkp_grid((size_t)plan->npieces * deg, threads), threads, 0, st>>>(
                partial, points, plan->vals, plan->pstart, plan->pend, &plan->poff[plan->nkeys]);
        CUDA_OK(cudaGetLastError());
        zkp_bm_segments<bucket_t><<<zkp_grid((size_t)nwindows * nseg * deg, threads), threads,
                                    0, st>>>(seg_sum, seg_acc, partial, plan->poff, nwindows,
                                             plan->wbits);
        CUDA_OK(cudaGetLastError());
        zkp_bm_windows<bucket_t><<<zkp_grid((size_t)nwindows * deg, 64), 64, 0, st>>>(
            window, seg_sum, seg_acc, nwindows, plan->wbits);
        CUDA_OK(cudaGetLastError());
        zkp_bm_horner<bucket_t><<<zkp_grid((size_t)plan->k * deg, 32), 32, 0, st>>>(
            d_out, window, plan->k, plan->nwins, plan->wbits);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpyAsync(out, d_out, plan->k * sizeof(bucket_h),
                                 cudaMemcpyDeviceToHost, st));
        CUDA_OK(cudaStreamSynchronize(st));
    } catch (const cuda_error& e) {
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}
