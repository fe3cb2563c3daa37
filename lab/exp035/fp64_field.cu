// Experiment 035: can BLS12-381's base field multiply faster on an H100 through FP64 FMAs
// than through sppark's 32-bit integer Montgomery multiplication, by enough to bring a
// BLS12-381 curve addition within 1.69x of a BN254 one (issue 17's 1.6x ratio)?
//
// Standalone: nvcc -O3 -arch=sm_90 -I<sppark> -I<blst/src> fp64_field.cu -o fp64_field
// Prints, per field: one multiplication's and one XYZZ mixed addition's throughput over the
// whole GPU, and checks fp52 (the FP64 representation below) against sppark's BLS12-381
// fp_t bit for bit on random inputs (a product and a mixed addition each).
//
// The FP64 technique is Emmart, Zheng and Weems, "Faster Modular Exponentiation Using
// Double Precision Floating Point Arithmetic on the GPU" (ARITH 2018): limbs of 52 bits held
// as doubles; fma_rz(a, b, 2^104) leaves the high 52 bits of a*b in the mantissa, and a
// second fma with (2^104 + 2^52 - hi) leaves the low 52 bits exactly. The raw bit patterns
// are summed into 64-bit integer columns and the exponent bits subtracted once. No library
// offers this for a 381-bit prime on CUDA, so it is written here.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#include <ff/alt_bn128.hpp>
#include <ff/bls12-381.hpp>

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e = (x);                                                              \
        if (e != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,                     \
                    cudaGetErrorString(e));                                               \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

// ---------------------------------------------------------------------------------------
// fp52: BLS12-381's base field in 8 limbs of 52 bits (416 bits), Montgomery form with
// R = 2^416. R is 2^35 times p, so a product of inputs below 2^391 is already below 2p:
// no final subtraction, and sums need no reduction before the next multiplication.
// Invariant: every limb < 2^52; a value fed to mul is < 2^391 (about 1,260 p).
// ---------------------------------------------------------------------------------------
namespace fp52c {
constexpr uint64_t M52 = (1ull << 52) - 1;
__device__ __constant__ const uint64_t P[8] = {
    0xeffffffffaaabull, 0xfeb153ffffb9full, 0x6b0f6241eabffull, 0x12bf6730d2a0full,
    0x764774b84f385ull, 0x1ba7b6434bacdull, 0x1ea397fe69a4bull, 0x1a011ull};
__device__ __constant__ const uint64_t P512[8] = {  // 512 p, the offset of sub
    0xfffffff555600ull, 0x62a7ffff73fdfull, 0x1ec483d57fffdull, 0x7ece61a541ed6ull,
    0x8ee9709e70a25ull, 0x4f6c869759aecull, 0x472ffcd349637ull, 0x340223dull};
__device__ __constant__ const uint64_t R2[8] = {  // 2^832 mod p: mul(x, R2) = x R
    0xa5bf4cb89af51ull, 0x3afbba7ca31a2ull, 0x2646160ec71f1ull, 0xa84d710465903ull,
    0x3480a4a188311ull, 0x98e5907ad91f5ull, 0x2075d74507266ull, 0x8746ull};
constexpr uint64_t PINV = 0x3fffcfffcfffdull;  // -p^-1 mod 2^52
constexpr double TWO52 = 4503599627370496.0;
constexpr double C1 = 20282409603651670423947251286016.0;  // 2^104
constexpr double C2 = C1 + TWO52;
constexpr uint64_t LO_BIAS = 0x4330000000000000ull;  // bits of 2^52 + l, l < 2^52
constexpr uint64_t HI_BIAS = 0x4670000000000000ull;  // bits of 2^104 + h 2^52
// How many (i, j), 0 <= i, j < 8, have i + j = k.
__host__ __device__ constexpr uint64_t pairs(int k) {
    return (k < 0 || k > 14) ? 0 : (uint64_t)(k < 7 ? k + 1 : 15 - k);
}
// Each column receives, over a multiplication, 2 pairs(k) low halves and 2 pairs(k-1)
// high halves (the product, then the reduction).
__host__ __device__ constexpr uint64_t column_start(int k) {
    return 0 - (2 * pairs(k) * LO_BIAS + 2 * pairs(k - 1) * HI_BIAS);
}
}  // namespace fp52c

struct fp52 {
    uint64_t l[8];

    static __device__ __forceinline__ double as_double(uint64_t x) {
        return __longlong_as_double((long long)(x | fp52c::LO_BIAS)) - fp52c::TWO52;
    }
    // col[k] += low half, col[k + 1] += high half of a * b (a, b < 2^52 as doubles).
    static __device__ __forceinline__ void mac(uint64_t* col, int k, double a, double b) {
        double hi = __fma_rz(a, b, fp52c::C1);
        double lo = __fma_rz(a, b, fp52c::C2 - hi);
        col[k] += (uint64_t)__double_as_longlong(lo);
        col[k + 1] += (uint64_t)__double_as_longlong(hi);
    }

    friend __device__ __forceinline__ fp52 operator*(const fp52& x, const fp52& y) {
        using namespace fp52c;
        double a[8], b[8];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            a[i] = as_double(x.l[i]);
            b[i] = as_double(y.l[i]);
        }
        uint64_t col[16];
#pragma unroll
        for (int k = 0; k < 16; k++) col[k] = column_start(k);
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) mac(col, i + j, a[i], b[j]);
        // Montgomery reduction, 52 bits a round. col[i]'s low 52 bits are complete here
        // (the one term still to come, q p[0]'s low half, carries no low bits of bias).
#pragma unroll
        for (int i = 0; i < 8; i++) {
            uint64_t q = ((col[i] & M52) * PINV) & M52;
            double qd = as_double(q);
#pragma unroll
            for (int j = 0; j < 8; j++) mac(col, i + j, qd, as_double_p(j));
            col[i + 1] += col[i] >> 52;  // col[i] is now exact and divisible by 2^52
        }
        fp52 r;
#pragma unroll
        for (int k = 8; k < 15; k++) {
            r.l[k - 8] = col[k] & M52;
            col[k + 1] += col[k] >> 52;
        }
        r.l[7] = col[15];  // < 2^52: the result is below 2p
        return r;
    }
    static __device__ __forceinline__ double as_double_p(int j) {
        return as_double(fp52c::P[j]);
    }

    static __device__ __forceinline__ fp52 carry(int64_t t[8]) {
        fp52 r;
#pragma unroll
        for (int i = 0; i < 7; i++) {
            t[i + 1] += t[i] >> 52;  // arithmetic: a borrow moves as -1
            r.l[i] = (uint64_t)t[i] & fp52c::M52;
        }
        r.l[7] = (uint64_t)t[7];
        return r;
    }
    friend __device__ __forceinline__ fp52 operator+(const fp52& x, const fp52& y) {
        int64_t t[8];
#pragma unroll
        for (int i = 0; i < 8; i++) t[i] = (int64_t)(x.l[i] + y.l[i]);
        return carry(t);
    }
    // x - y + 512 p; y must be < 512 p.
    friend __device__ __forceinline__ fp52 operator-(const fp52& x, const fp52& y) {
        int64_t t[8];
#pragma unroll
        for (int i = 0; i < 8; i++) t[i] = (int64_t)(x.l[i] + fp52c::P512[i]) - (int64_t)y.l[i];
        return carry(t);
    }
    // Below 3p again: subtract q p, q from the top limb (never more than the quotient).
    __device__ __forceinline__ fp52 weak() const {
        using namespace fp52c;
        // q <= l[7] / ((p >> 364) + 2): never above the quotient, rounding included. For values
        // below 2^391 (q < 2^11) the top limb's 17 bits leave less than 2p.
        double qd = floor(__dmul_rz((double)l[7], 1.0 / 106516.0));
        uint64_t col[9];
#pragma unroll
        for (int k = 0; k < 9; k++) col[k] = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) mac(col, j, qd, as_double_p(j));
        int64_t t[8];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            // every column got one low half (and, from 1 up, one high half) of bias
            uint64_t bias = LO_BIAS + (j ? HI_BIAS : 0);
            t[j] = (int64_t)l[j] - (int64_t)(col[j] - bias);
        }
        t[7] -= (int64_t)(col[8] - HI_BIAS) << 52;
        return carry(t);
    }
};

// ---------------------------------------------------------------------------------------
// One XYZZ mixed addition (EFD madd-2008-s: 8M + 2S), the bucket-accumulation step, with no
// special cases: the same formula and cost for every field type measured.
// ---------------------------------------------------------------------------------------
template <class F> struct xyzz { F x, y, zz, zzz; };
template <class F> struct aff { F x, y; };

template <class F> __device__ __forceinline__ F reduce_state(const F& a) { return a; }
template <> __device__ __forceinline__ fp52 reduce_state<fp52>(const fp52& a) { return a.weak(); }

template <class F>
__device__ __forceinline__ xyzz<F> madd(const xyzz<F>& p, const aff<F>& q) {
    F u2 = q.x * p.zz;
    F s2 = q.y * p.zzz;
    F pp_ = u2 - p.x;
    F r = s2 - p.y;
    F pp = pp_ * pp_;
    F ppp = pp_ * pp;
    F qq = p.x * pp;
    xyzz<F> o;
    o.x = reduce_state(((r * r) - ppp) - (qq + qq));
    o.y = reduce_state((r * (qq - o.x)) - (p.y * ppp));
    o.zz = p.zz * pp;
    o.zzz = p.zzz * ppp;
    return o;
}

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------
typedef alt_bn128::fp_t bn_fp;
typedef bls12_381::fp_t bls_fp;

// 12 x 32-bit canonical words -> the field's Montgomery form.
template <class F> __device__ F from_words(const uint32_t* w);
// (sppark's field types are blst's on the host pass: the bodies are device-only.)
template <> __device__ bls_fp from_words<bls_fp>(const uint32_t* w) {
    bls_fp f;
#ifdef __CUDA_ARCH__
    for (int i = 0; i < 12; i++) f[i] = w[i];
    f.to();
#endif
    return f;
}
template <> __device__ bn_fp from_words<bn_fp>(const uint32_t* w) {
    bn_fp f;
#ifdef __CUDA_ARCH__
    for (int i = 0; i < 8; i++) f[i] = w[i];
    f[7] &= 0x0fffffff;  // below the BN254 prime
    f.to();
#endif
    return f;
}
template <> __device__ fp52 from_words<fp52>(const uint32_t* w) {
    fp52 f;
    for (int i = 0; i < 8; i++) {
        uint64_t v = 0;
        for (int b = 0; b < 52; b++) {
            int bit = i * 52 + b;
            if (bit < 384 && (w[bit / 32] >> (bit % 32) & 1)) v |= 1ull << b;
        }
        f.l[i] = v;
    }
    fp52 r2;
    for (int i = 0; i < 8; i++) r2.l[i] = fp52c::R2[i];
    return f * r2;
}

template <class F> __global__ void k_convert(const uint32_t* w, F* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = from_words<F>(w + 12 * i);
}

// Out of Montgomery form, for the checks: canonical words (bls_fp) or 52-bit limbs < 2p.
__global__ void k_out_bls(const bls_fp* in, uint32_t* w, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
#ifdef __CUDA_ARCH__
    bls_fp f = in[i];
    f.from();
    for (int k = 0; k < 12; k++) w[12 * i + k] = f[k];
#endif
}
__global__ void k_out_fp52(const fp52* in, uint64_t* l, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fp52 one;
    for (int k = 0; k < 8; k++) one.l[k] = k == 0;
    fp52 f = in[i] * one;
    for (int k = 0; k < 8; k++) l[8 * i + k] = f.l[k];
}

// The checked operations: out[i] = x[i] * y[i]; outs[4i..] = madd((x,y,zz,zzz), (u,v)).
template <class F> __global__ void k_check(const F* in, F* prod, F* sum, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const F* e = in + 6 * i;
    prod[i] = e[0] * e[1];
    xyzz<F> p{e[0], e[1], e[2], e[3]};
    aff<F> q{e[4], e[5]};
    xyzz<F> o = madd(p, q);
    sum[4 * i] = o.x;
    sum[4 * i + 1] = o.y;
    sum[4 * i + 2] = o.zz;
    sum[4 * i + 3] = o.zzz;
}

// Throughput: two independent product chains a thread.
template <class F> __global__ void __launch_bounds__(256) k_mul(F* in, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    F a = in[4 * i], b = in[4 * i + 1], c = in[4 * i + 2], d = in[4 * i + 3];
    for (int k = 0; k < iters; k++) {
        a = a * b;
        c = c * d;
    }
    in[4 * i] = a;
    in[4 * i + 2] = c;
}
// Throughput with CH independent product chains a thread and at least MINB blocks an SM:
// tells a pipe's limit from the latency of the reduction's serial rounds.
template <class F, int CH, int MINB>
__global__ void __launch_bounds__(256, MINB) k_mulc(F* in, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    F a[CH], b[CH];
#pragma unroll
    for (int c = 0; c < CH; c++) {
        a[c] = in[4 * i + (c & 1) * 2];
        b[c] = in[4 * i + (c & 1) * 2 + 1];
    }
    for (int k = 0; k < iters; k++)
#pragma unroll
        for (int c = 0; c < CH; c++) a[c] = a[c] * b[c];
    F s = a[0];
#pragma unroll
    for (int c = 1; c < CH; c++) s = s + a[c];
    in[4 * i] = s;
}
// fp52's product half alone (64 products into 16 columns, folded back without a
// reduction): the ceiling of the FP64 pipe for this representation.
__device__ __forceinline__ fp52 products_only(const fp52& x, const fp52& y) {
    double a[8], b[8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        a[i] = fp52::as_double(x.l[i]);
        b[i] = fp52::as_double(y.l[i]);
    }
    uint64_t col[16];
#pragma unroll
    for (int k = 0; k < 16; k++) col[k] = 0;
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) fp52::mac(col, i + j, a[i], b[j]);
    fp52 r;
#pragma unroll
    for (int k = 0; k < 8; k++) r.l[k] = (col[k] ^ col[k + 8]) & fp52c::M52;
    return r;
}
__global__ void __launch_bounds__(256) k_products(fp52* in, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    fp52 a = in[4 * i], b = in[4 * i + 1], c = in[4 * i + 2], d = in[4 * i + 3];
    for (int k = 0; k < iters; k++) {
        a = products_only(a, b);
        c = products_only(c, d);
    }
    in[4 * i] = a;
    in[4 * i + 2] = c;
}

// Pipe peaks under the same conditions: 8 independent DFMA chains a thread, and 8 independent
// 32x32->64 multiply-add chains (IMAD.WIDE, sppark's multiplier) a thread.
__global__ void __launch_bounds__(256) k_dfma_peak(double* io, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double x[8], y = io[i] * 1e-9 + 0.999999, z = 1e-7;
#pragma unroll
    for (int c = 0; c < 8; c++) x[c] = io[i] + c;
    for (int k = 0; k < iters; k++)
#pragma unroll
        for (int c = 0; c < 8; c++) x[c] = fma(x[c], y, z);
    double s = 0;
#pragma unroll
    for (int c = 0; c < 8; c++) s += x[c];
    io[i] = s;
}
__global__ void __launch_bounds__(256) k_imad_peak(double* io, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t x[8];
    uint32_t y = (uint32_t)__double_as_longlong(io[i]) | 1;
#pragma unroll
    for (int c = 0; c < 8; c++) x[c] = (uint64_t)__double_as_longlong(io[i]) + c;
    for (int k = 0; k < iters; k++)
#pragma unroll
        for (int c = 0; c < 8; c++) {
            uint64_t r;
            asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(r) : "r"((uint32_t)x[c]), "r"(y), "l"(x[c]));
            x[c] = r;
        }
    uint64_t s = 0;
#pragma unroll
    for (int c = 0; c < 8; c++) s += x[c];
    io[i] = __longlong_as_double((long long)s);
}

// Throughput: one chain of mixed additions a thread.
template <class F> __global__ void __launch_bounds__(256) k_madd(F* in, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const F* e = in + 6 * i;
    xyzz<F> p{e[0], e[1], e[2], e[3]};
    aff<F> q{e[4], e[5]};
    for (int k = 0; k < iters; k++) p = madd(p, q);
    in[6 * i] = p.x;
    in[6 * i + 1] = p.y;
    in[6 * i + 2] = p.zz;
    in[6 * i + 3] = p.zzz;
}

// ---------------------------------------------------------------------------------------
// Host
// ---------------------------------------------------------------------------------------
static const uint64_t P52[8] = {0xeffffffffaaabull, 0xfeb153ffffb9full, 0x6b0f6241eabffull,
                                0x12bf6730d2a0full, 0x764774b84f385ull, 0x1ba7b6434bacdull,
                                0x1ea397fe69a4bull, 0x1a011ull};

// 52-bit limbs < 2p -> canonical 12 words.
static void canonical(const uint64_t* l, uint32_t* w) {
    uint64_t v[8];
    memcpy(v, l, sizeof v);
    bool ge = true;  // v >= p?
    for (int i = 7; i >= 0; i--)
        if (v[i] != P52[i]) {
            ge = v[i] > P52[i];
            break;
        }
    if (ge) {
        int64_t borrow = 0;
        for (int i = 0; i < 8; i++) {
            int64_t t = (int64_t)v[i] - (int64_t)P52[i] + borrow;
            borrow = t < 0 ? -1 : 0;
            v[i] = (uint64_t)t & ((1ull << 52) - 1);
        }
    }
    memset(w, 0, 48);
    for (int bit = 0; bit < 384; bit++)
        if (v[bit / 52] >> (bit % 52) & 1) w[bit / 32] |= 1u << (bit % 32);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next32() {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

template <class F> static F* convert(const std::vector<uint32_t>& words, int n) {
    uint32_t* dw;
    F* out;
    CHECK(cudaMalloc(&dw, words.size() * 4));
    CHECK(cudaMalloc(&out, sizeof(F) * n));
    CHECK(cudaMemcpy(dw, words.data(), words.size() * 4, cudaMemcpyHostToDevice));
    k_convert<F><<<(n + 255) / 256, 256>>>(dw, out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(dw));
    return out;
}

// Operations per second over the whole GPU, best of `reps`.
template <class F, class L>
static void time_launch(const char* field, const char* op, F* data, int blocks, int iters,
                        int per_thread_ops, L launch, int reps) {
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    float best = 1e30f, worst = 0;
    std::vector<float> all;
    for (int r = 0; r < reps + 1; r++) {
        CHECK(cudaEventRecord(t0));
        launch(blocks, data, iters);
        CHECK(cudaEventRecord(t1));
        CHECK(cudaEventSynchronize(t1));
        CHECK(cudaGetLastError());
        float ms;
        CHECK(cudaEventElapsedTime(&ms, t0, t1));
        if (r == 0) continue;  // warm-up
        all.push_back(ms);
        best = ms < best ? ms : best;
        worst = ms > worst ? ms : worst;
    }
    std::sort(all.begin(), all.end());
    double ops = (double)blocks * 256 * iters * per_thread_ops;
    printf("%-8s %-5s blocks=%5d  Gop/s min %.3f median %.3f max %.3f  (ms %.3f..%.3f)\n",
           field, op, blocks, ops / worst / 1e6, ops / all[all.size() / 2] / 1e6,
           ops / best / 1e6, best, worst);
    fflush(stdout);
}

template <class F>
static void time_kernel(const char* field, const char* op, F* data, int blocks, int iters,
                        int per_thread_ops, bool is_madd, int reps) {
    if (is_madd)
        time_launch(field, op, data, blocks, iters, per_thread_ops,
                    [](int b, F* d, int it) { k_madd<F><<<b, 256>>>(d, it); }, reps);
    else
        time_launch(field, op, data, blocks, iters, per_thread_ops,
                    [](int b, F* d, int it) { k_mul<F><<<b, 256>>>(d, it); }, reps);
}

template <class F, int CH, int MINB>
static void chains(const char* field, F* data, int blocks, int iters, int reps) {
    char op[16];
    snprintf(op, sizeof op, "mul%dx%d", CH, MINB);  // chains x minimum blocks an SM
    time_launch(field, op, data, blocks, iters, CH,
                [](int b, F* d, int it) { k_mulc<F, CH, MINB><<<b, 256>>>(d, it); }, reps);
}

int main(int argc, char** argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int sms = prop.multiProcessorCount;
    printf("device %s, %d SMs\n", prop.name, sms);

    // Inputs: random values below 2^380 (below both primes after the BN254 mask).
    const int n_check = 1 << 14;
    const int max_threads = sms * 16 * 256;
    const int n = std::max(n_check * 6, max_threads * 6);
    std::vector<uint32_t> words(12 * (size_t)n);
    for (size_t i = 0; i < words.size(); i++)
        words[i] = (i % 12 == 11) ? next32() & 0x0fffffff : next32();

    // Check: fp52 against sppark's bls12_381::fp_t, bit for bit after canonicalising.
    {
        bls_fp* bin = convert<bls_fp>(words, 6 * n_check);
        fp52* fin = convert<fp52>(words, 6 * n_check);
        bls_fp *bprod, *bsum;
        fp52 *fprod, *fsum;
        CHECK(cudaMalloc(&bprod, sizeof(bls_fp) * n_check));
        CHECK(cudaMalloc(&bsum, sizeof(bls_fp) * 4 * n_check));
        CHECK(cudaMalloc(&fprod, sizeof(fp52) * n_check));
        CHECK(cudaMalloc(&fsum, sizeof(fp52) * 4 * n_check));
        k_check<bls_fp><<<n_check / 256, 256>>>(bin, bprod, bsum, n_check);
        k_check<fp52><<<n_check / 256, 256>>>(fin, fprod, fsum, n_check);
        CHECK(cudaGetLastError());
        int total = 5 * n_check;
        uint32_t* bw;
        uint64_t* fl;
        CHECK(cudaMalloc(&bw, 48ull * total));
        CHECK(cudaMalloc(&fl, 64ull * total));
        k_out_bls<<<n_check / 256, 256>>>(bprod, bw, n_check);
        k_out_bls<<<4 * n_check / 256, 256>>>(bsum, bw + 12 * n_check, 4 * n_check);
        k_out_fp52<<<n_check / 256, 256>>>(fprod, fl, n_check);
        k_out_fp52<<<4 * n_check / 256, 256>>>(fsum, fl + 8 * n_check, 4 * n_check);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::vector<uint32_t> hb(12ull * total);
        std::vector<uint64_t> hf(8ull * total);
        CHECK(cudaMemcpy(hb.data(), bw, hb.size() * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hf.data(), fl, hf.size() * 8, cudaMemcpyDeviceToHost));
        int bad = 0, bad_limb = 0;
        for (int i = 0; i < total; i++) {
            for (int k = 0; k < 8; k++) bad_limb += hf[8 * i + k] >> 52 != 0;
            uint32_t w[12];
            canonical(&hf[8 * i], w);
            if (memcmp(w, &hb[12 * i], 48) != 0) {
                if (bad < 3) {
                    printf("MISMATCH at %d (%s)\n  sppark:", i, i < n_check ? "mul" : "madd");
                    for (int k = 11; k >= 0; k--) printf(" %08x", hb[12 * i + k]);
                    printf("\n  fp52:  ");
                    for (int k = 11; k >= 0; k--) printf(" %08x", w[k]);
                    printf("\n");
                }
                bad++;
            }
        }
        printf("check: %d products and %d mixed additions (%d outputs): %d differ, "
               "%d limbs >= 2^52 -> %s\n",
               n_check, n_check, total, bad, bad_limb, bad || bad_limb ? "FAIL" : "OK");
        if (bad || bad_limb) return 1;
    }

    bn_fp* bn = convert<bn_fp>(words, n);
    bls_fp* bls = convert<bls_fp>(words, n);
    fp52* f52 = convert<fp52>(words, n);
    const int iters_mul = 2000, iters_madd = 200;
    for (int per_sm : {2, 4, 8, 16}) {
        int blocks = sms * per_sm;
        time_kernel<bn_fp>("bn254", "mul", bn, blocks, iters_mul, 2, false, reps);
        time_kernel<bls_fp>("bls12381", "mul", bls, blocks, iters_mul, 2, false, reps);
        time_kernel<fp52>("fp52", "mul", f52, blocks, iters_mul, 2, false, reps);
    }
    {
        double* d;
        CHECK(cudaMalloc(&d, sizeof(double) * sms * 8 * 256));
        CHECK(cudaMemset(d, 0, sizeof(double) * sms * 8 * 256));
        time_launch<double>("peak", "dfma", d, sms * 8, 20000, 8,
                            [](int b, double* x, int it) { k_dfma_peak<<<b, 256>>>(x, it); }, reps);
        time_launch<double>("peak", "imadw", d, sms * 8, 20000, 8,
                            [](int b, double* x, int it) { k_imad_peak<<<b, 256>>>(x, it); }, reps);
        CHECK(cudaFree(d));
    }
    // Diagnosis: chains a thread, occupancy, and the product half alone (8 blocks an SM).
    {
        int blocks = sms * 8;
        chains<bn_fp, 1, 1>("bn254", bn, blocks, iters_mul, reps);
        chains<bn_fp, 2, 1>("bn254", bn, blocks, iters_mul, reps);
        chains<bn_fp, 4, 1>("bn254", bn, blocks, iters_mul, reps);
        chains<bls_fp, 1, 1>("bls12381", bls, blocks, iters_mul, reps);
        chains<bls_fp, 2, 1>("bls12381", bls, blocks, iters_mul, reps);
        chains<bls_fp, 4, 1>("bls12381", bls, blocks, iters_mul, reps);
        chains<fp52, 1, 1>("fp52", f52, blocks, iters_mul, reps);
        chains<fp52, 1, 2>("fp52", f52, blocks, iters_mul, reps);
        chains<fp52, 1, 3>("fp52", f52, blocks, iters_mul, reps);
        chains<fp52, 1, 4>("fp52", f52, blocks, iters_mul, reps);
        chains<fp52, 2, 1>("fp52", f52, blocks, iters_mul, reps);
        chains<fp52, 2, 2>("fp52", f52, blocks, iters_mul, reps);
        chains<fp52, 4, 1>("fp52", f52, blocks, iters_mul, reps);
        time_launch<fp52>("fp52", "prod", f52, blocks, iters_mul, 2,
                          [](int b, fp52* d, int it) { k_products<<<b, 256>>>(d, it); }, reps);
    }
    for (int per_sm : {2, 4, 8, 16}) {
        int blocks = sms * per_sm;
        time_kernel<bn_fp>("bn254", "madd", bn, blocks, iters_madd, 1, true, reps);
        time_kernel<bls_fp>("bls12381", "madd", bls, blocks, iters_madd, 1, true, reps);
        time_kernel<fp52>("fp52", "madd", f52, blocks, iters_madd, 1, true, reps);
    }
    return 0;
}
