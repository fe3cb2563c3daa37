// The bit path of the w MSMs (A, B₁, [B]₂ and C): a circom witness is mostly 0s and 1s
// (a SHA-256 circuit's all but a handful, lab/experiments/043b-sha256-values.md), yet
// sppark's Pippenger sorts every window's digit of every scalar, so a vector of bits
// costs what a full-size one does. Here instead:
//
//   split (once per proof): w → a bitmap of the signals equal to 1 (⌈n/32⌉ words, plus
//     two zero words so that a sum may read one word past any bit) and the others that
//     are not 0, (index, value), handed to the host when there are at most `cap` of them
//   sum (per point set, or per chunk of one a streamed key walks): Σ P_i over the set
//     bits of a range of the bitmap, each logical item summing 32-point groups, then a
//     block tree (zkp_bm_block_sum) and zkp_bm_fold: ZKP_BITS_OUT partial sums to the host
//
// The host adds the few other values' multiples (crate::enabled::bits). Written here
// because sppark's batch_addition (msm/batch_addition.cuh) sums a bitmap's points but
// needs a cooperative launch and a device-global counter per stream, and takes no bit
// offset, which a chunk of C (its points start past the public inputs) needs.
#pragma once

#define ZKP_BITS_BLOCKS 1024
#define ZKP_BITS_FOLD 32
#define ZKP_BITS_OUT (ZKP_BITS_BLOCKS / ZKP_BITS_FOLD)

// A scalar's 32-bit limbs, by value: 1 in the witness's form, which the host knows
// (sppark's is_one() reads its constant through inline assembly that nvcc 13 cannot
// compile here).
struct zkp_limbs8_t {
    uint32_t l[8];
};

// A warp handles 32 consecutive scalars: each lane classifies one, the ballot of the
// lanes that hold a 1 is the bitmap's word, and a lane holding another non-zero value
// appends it (unordered, standard form) while there is room; `count` counts them all.
template<class scalar_t>
__global__ void zkp_bits_split(uint32_t* ones, uint32_t* idx, scalar_t* vals, uint32_t* count,
                               uint32_t cap, const scalar_t* w, size_t n, bool mont,
                               zkp_limbs8_t one_is)
{
    const uint32_t lane = threadIdx.x % 32;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t base = blockIdx.x * (size_t)blockDim.x + threadIdx.x - lane; base < n;
         base += stride) {
        const size_t i = base + lane;
        bool one = false, other = false;
        if (i < n) {
            const uint32_t* s = reinterpret_cast<const uint32_t*>(&w[i]);
            bool zero = true;
            one = true;
            for (uint32_t l = 0; l < 8; l++) {
                zero &= s[l] == 0;
                one &= s[l] == one_is.l[l];
            }
            other = !zero && !one;
        }
        const uint32_t word = __ballot_sync(0xffffffff, one);
        if (lane == 0)
            ones[base / 32] = word;
        if (other) {
            const uint32_t at = atomicAdd(count, 1);
            if (at < cap) {
                scalar_t v = w[i];
                if (mont)
                    v.from();
                idx[at] = (uint32_t)i;
                vals[at] = v;
            }
        }
    }
}

// Per block: the sum of points[i] for the i < npoints whose bit bit0 + i of `ones` is set.
// Both lanes of a G2 item read the same group, so they take the same branches.
template<class bucket_t, class affine_h>
__global__ void zkp_bits_sum(typename bucket_t::mem_t* out, const affine_h* points,
                             size_t npoints, const uint32_t* ones, size_t bit0)
{
    const uint32_t deg = bucket_t::degree;
    const size_t item = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / deg;
    const size_t items = (size_t)gridDim.x * blockDim.x / deg;
    const size_t groups = (npoints + 31) / 32;
    bucket_t acc;
    acc.inf();
    for (size_t g = item; g < groups; g += items) {
        const size_t b = bit0 + 32 * g;
        const uint32_t shift = b % 32;
        uint32_t word = ones[b / 32] >> shift;
        if (shift)
            word |= ones[b / 32 + 1] << (32 - shift);
        const size_t left = npoints - 32 * g;
        if (left < 32)
            word &= (1u << left) - 1;
        while (word) {
            const uint32_t i = __ffs(word) - 1;
            word &= word - 1;
            typename bucket_t::affine_t p = points[32 * g + i];
            acc.add(p);
        }
    }
    acc = zkp_bm_block_sum(acc);
    if (threadIdx.x / deg == 0)
        out[blockIdx.x] = acc;
}

// Splits the n scalars at device address w (standard form, or Montgomery with `mont`;
// `one`: 1 in that form, 4 words): the bitmap of 1s into `ones` (device, `words` words:
// ⌈n/32⌉ + 2, crate::shape::bitmap_bytes); into host memory the count of the other
// non-zero values and, if at most `cap`, their indices and values in standard form.
template<class scalar_t>
static RustError zkp_bits_split_run(const scalar_t* w, size_t n, bool mont,
                                    const uint64_t* one, uint32_t* ones, size_t words,
                                    uint32_t cap, uint32_t* count_out, uint32_t* idx_out,
                                    scalar_t* vals_out, int dev)
{
    static_assert(sizeof(scalar_t) == 32, "scalars of 8 limbs");
    zkp_limbs8_t one_is;
    memcpy(one_is.l, one, sizeof(one_is.l));
    try {
        if (n >= (1ull << 32) || words < (n + 31) / 32 + 2)
            return RustError{cudaErrorInvalidValue, "a witness bitmap too short for its witness"};
        zkp_stream_t stream(dev);
        cudaStream_t st = stream.st;
        size_t o_idx = zkp_align(sizeof(uint32_t));
        size_t o_vals = o_idx + zkp_align((size_t)cap * sizeof(uint32_t));
        zkp_scratch_t tmp(o_vals + (size_t)cap * sizeof(scalar_t), st);
        auto* count = tmp.at<uint32_t>(0);
        auto* idx = tmp.at<uint32_t>(o_idx);
        auto* vals = tmp.at<scalar_t>(o_vals);
        CUDA_OK(cudaMemsetAsync(ones, 0, words * sizeof(uint32_t), st));
        CUDA_OK(cudaMemsetAsync(count, 0, sizeof(uint32_t), st));
        zkp_bits_split<scalar_t><<<zkp_grid(n, 256), 256, 0, st>>>(ones, idx, vals, count, cap,
                                                                   w, n, mont, one_is);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpyAsync(count_out, count, sizeof(uint32_t), cudaMemcpyDeviceToHost, st));
        CUDA_OK(cudaStreamSynchronize(st));
        const uint32_t got = std::min(*count_out, cap);
        if (*count_out <= cap && got) {
            CUDA_OK(cudaMemcpyAsync(idx_out, idx, got * sizeof(uint32_t),
                                    cudaMemcpyDeviceToHost, st));
            CUDA_OK(cudaMemcpyAsync(vals_out, vals, got * sizeof(scalar_t),
                                    cudaMemcpyDeviceToHost, st));
            CUDA_OK(cudaStreamSynchronize(st));
        }
    } catch (const cuda_error& e) {
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}

// Σ over the set's points [first, first + npoints) (past its padding) whose bit
// bit0 + (i − first) of `ones` is set: ZKP_BITS_OUT xyzz partial sums into host `out`.
template<class B, class M, class A>
static RustError zkp_bits_sum_run(const zkp_set_t<M, A>* set, size_t first, size_t npoints,
                                  const uint32_t* ones, size_t bit0, typename B::mem_t* out)
{
    typedef typename B::mem_t bucket_h;
    // A chunk set holds up to its room's `cap` points (the walk fills it), others `n`.
    if (first + npoints > std::max(set->n, set->cap))
        return RustError{cudaErrorInvalidValue, "a bit sum past its point set"};
    try {
        zkp_stream_t stream(set->dev);
        cudaStream_t st = stream.st;
        size_t o_out = zkp_align((size_t)ZKP_BITS_BLOCKS * sizeof(bucket_h));
        zkp_scratch_t tmp(o_out + (size_t)ZKP_BITS_OUT * sizeof(bucket_h), st);
        auto* blocks = tmp.at<bucket_h>(0);
        auto* sums = tmp.at<bucket_h>(o_out);
        const uint32_t threads = ZKP_BM_BITSUM_THREADS;
        const size_t smem = threads / B::degree * sizeof(bucket_h);
        zkp_bits_sum<B><<<ZKP_BITS_BLOCKS, threads, smem, st>>>(
            blocks, set->points + set->pad + first, npoints, ones, bit0);
        CUDA_OK(cudaGetLastError());
        zkp_bm_fold<B><<<ZKP_BITS_OUT, ZKP_BITS_FOLD * B::degree,
                         ZKP_BITS_FOLD * sizeof(bucket_h), st>>>(sums, blocks, ZKP_BITS_FOLD);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpyAsync(out, sums, (size_t)ZKP_BITS_OUT * sizeof(bucket_h),
                                cudaMemcpyDeviceToHost, st));
        CUDA_OK(cudaStreamSynchronize(st));
    } catch (const cuda_error& e) {
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}
