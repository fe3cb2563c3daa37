// The quotient stage on the GPU over sppark's NTT: a, b, c on snarkjs's domain → iNTT →
// snarkjs's coset shift → NTT → h = a·b − c on the coset, in device buffers allocated once
// per domain size (zkp_quotient_t), h optionally left there for the H MSM.
#pragma once

#include "common.cuh"

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

// x[i] += m[i] (constant-work masking): m in Montgomery form, x in Montgomery form or,
// without `mont`, standard form. Addition is the same modular sum in either form, so m
// is brought to x's form first.
__global__ void zkp_add_mask(fr_t* x, const fr_t* m, size_t n, bool mont)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        fr_t mi = m[i];
        if (!mont)
            mi.from();
        x[i] = x[i] + mi;
    }
}

// Device buffers for one domain size, allocated once and reused by every proof.
// Each has a stream of its own, so the quotients of proofs in flight at once (a batch, or
// two passes) overlap instead of queueing on the device's shared stream: at 2^14 each
// kernel fills a small part of the GPU.
//
// A proof whose reduce runs on the GPU replays its ~20 kernels (reduce, three iNTT/NTT
// pairs, the coset scalings, the pointwise product) as one CUDA graph, captured on the
// set's first such proof (reduce.cuh's zkp_reduce_quotient_): at 2^14 launching them one
// by one cost the host more than the GPU took to run them, and several GPUs' threads
// launching at once slowed each other (lab/experiments/042q-quotient-graphs.md).
struct zkp_quotient_t {
    const gpu_t& gpu;
    stream_t stream;
    uint32_t lg_n;
    dev_ptr_t<fr_t> d;   // a, b, c, scratch, coset powers: 5n elements
    // The captured graph and what it was captured for: the inputs are baked into it.
    cudaGraphExec_t graph = nullptr;
    const void* graph_m = nullptr;
    const fr_t* graph_w = nullptr;
    bool graph_mont = false;
    uint64_t graph_k = 0;
    // Before and after the quotient's kernels in a fused call (in its graph too): the
    // GPU's split of the call's time between the reduce and the quotient, for the
    // waterfall.
    cudaEvent_t marks[2] = {nullptr, nullptr};

    // The device is made current before the stream and buffers are made on it.
    static const gpu_t& current(int device_id)
    {
        const gpu_t& g = select_gpu(device_id);
        g.select();
        return g;
    }

    zkp_quotient_t(uint32_t lg, int device_id)
        : gpu(current(device_id)), stream(device_id), lg_n(lg), d((size_t)5 << lg)
    {
        for (auto& e : marks)
            CUDA_OK(cudaEventCreate(&e));
    }

    ~zkp_quotient_t()
    {
        gpu.select();
        if (graph != nullptr)
            cudaGraphExecDestroy(graph);
        for (auto e : marks)
            if (e != nullptr)
                cudaEventDestroy(e);
    }

    // Where the last run left h (the scratch third of d).
    const fr_t* h() const { return &d[(size_t)3 << lg_n]; }
};

// Launches the quotient on q's stream: from a, b, c on the host (staged, ideally pinned)
// or, all three nullptr, from where zkp_reduce_run_ left them; h ends in the scratch
// third of q's buffers. Launches only (no synchronisation), so a graph can capture it.
static void zkp_quotient_launch(zkp_quotient_t* q, const fr_t* const in[3], uint64_t k)
{
    const gpu_t& gpu = q->gpu;
    stream_t& stream = q->stream;
    bool on_device = in[0] == nullptr;
    uint32_t lg_n = q->lg_n;
    size_t n = (size_t)1 << lg_n;
    fr_t* d = &q->d[0];
    fr_t* scratch = d + 3 * n;
    const fr_t* powers = d + 4 * n;
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
}

// `powers_bitrev`: shift^brev(p) for p in 0..n (Montgomery), kept on the device.
extern "C" RustError ZKP_FN(zkp_quotient_new_, CURVE)(zkp_quotient_t** out, uint32_t lg_n,
                                                     const fr_t* powers_bitrev, int dev)
{
    try {
        if (lg_n < 1 || lg_n > 31)
            return RustError{cudaErrorInvalidValue, "quotient domain size out of range"};
        // sppark's twiddles are made (allocated, copied, synchronised) on their first use:
        // here, never inside a graph's capture.
        (void)NTTParameters::all(false);
        (void)NTTParameters::all(true);
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
        const fr_t* in[3] = {a, b, c};
        zkp_quotient_launch(q, in, k);
        if (h != nullptr)
            stream.DtoH(h, q->h(), (size_t)1 << q->lg_n);
        stream.sync();
    } catch (const cuda_error& e) {
        stream.sync();
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}

// Masks one proof's MSM inputs for constant-work MSMs, after the reduce and the quotient
// have read w: w[i] += mw[i] (nw values on the quotient's GPU, Montgomery form with
// `mont`, else standard) and h[j] += mh[j] for the h the last run left on the device;
// mw and mh are Montgomery. Returns when done.
extern "C" RustError ZKP_FN(zkp_quotient_mask_, CURVE)(zkp_quotient_t* q, fr_t* w,
                                                      const fr_t* mw, size_t nw, bool mont,
                                                      const fr_t* mh)
{
    const gpu_t& gpu = q->gpu;
    stream_t& stream = q->stream;
    try {
        gpu.select();
        size_t n = (size_t)1 << q->lg_n;
        fr_t* h = &q->d[(size_t)3 << q->lg_n];
        uint32_t threads = 256;
        auto blocks = [&](size_t len) {
            return (uint32_t)std::min<size_t>(std::max<size_t>((len + threads - 1) / threads, 1),
                                              (size_t)gpu.sm_count() * 8);
        };
        zkp_add_mask<<<blocks(nw), threads, 0, (cudaStream_t)stream>>>(w, mw, nw, mont);
        CUDA_OK(cudaGetLastError());
        zkp_add_mask<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(h, mh, n, true);
        CUDA_OK(cudaGetLastError());
        stream.sync();
    } catch (const cuda_error& e) {
        stream.sync();
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}
