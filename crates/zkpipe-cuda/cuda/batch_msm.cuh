// Batched MSM: k scalar vectors against one resident point set in one GPU pass, written
// here because sppark's Pippenger takes one scalar vector per call (and its per-call
// launches, synchronizations and host-side window sums dominate at 2^14 points). It is
// also the lone proof's path at small domains, where latency is all that counts: every
// step below is parallel or a short chain, and the only long chain (the doublings that
// put the windows together) runs on the host, which does it in microseconds.
//
// Bucket method with unsigned c-bit digits. Every (proof j, window w, digit d) is a
// bucket, keyed (j·nwins + w)·2^c + d, so all proofs' buckets live in one key space:
//
//   plan (once per batch of scalar vectors, shared by every point set they multiply):
//     digits → radix sort of (key, point index) → bucket ranges → pieces of ≤ L entries
//   run (per point set):
//     pieces: sum each piece's points (affine → xyzz), one thread per piece
//     runs: per run of R consecutive pieces of one group (digits d_0 ≤ … ≤ d_{R−1}),
//       S = Σ x_i and W = Σ (d_i − d_0)·x_i by a running sum from the top, so that the
//       run's share of Σ_d d·B_d is d_0·S + 1·W: two entries, digits d_0 and 1
//     bit sums: per (j, w) and bit b < c, T = Σ of the runs' entries whose digit has bit
//       b set (so Σ_d d·B_d = Σ_b 2^b·T_b), a block-wide tree sum in shared memory
//   host: per j, Σ_{w,b} 2^(w·c+b)·T_{j,w,b} by Horner (crate::enabled::msm)
//
// Why runs: a warp's lanes in a bit sum each test their entry's bit and add if it is
// set, so every lane pays an addition per step whether its bit is set or not: c
// additions per entry. Over the pieces themselves that is c per piece (13–17 at the
// widths used), which at small domains costs about what the pieces do. A run's running
// sum costs about two additions per piece (one to the running sum, one to W per digit
// step; a step of g > 1 digits is a double-and-add of log₂ g bits, rare unless the
// group is sparse), and leaves 2/R entries per piece to the bit sums. With R = 0 the bit
// sums read the pieces directly (constant work's full mode, whose point is that every
// piece is added in every bit sum, takes this path).
//
// Window tables (fixed-base precomputation, for resident keys): a set bound with a table
// of width c also holds 2^(w·c)·P_i for every window w (row w of the table, computed on
// the GPU once at upload, zkp_bm_table). A plan made for that width then puts window w's
// digit of scalar i on table point (w, i), so all windows of proof j share one group of
// 2^c buckets: the bit sums run once per proof instead of once per window, the host's
// Horner shrinks to c steps, and the window may be wider for the same bit-sum cost
// (crate::shape::table_wbits), so there are fewer entries. The cost is memory: ⌈bits/c⌉
// copies of the points.
//
// Zero digits are skipped (their entries sort past the last key) and a scalar of 1 is a
// single entry in window 0's bucket 1: circom witnesses, mostly 0s and 1s, cost what
// their other values cost. With `constant_work` every digit is an entry (digit 0 goes to
// bucket 0, which no bit sum takes) and every piece is added in every bit sum (into a
// discarded sum where its bit is clear): the values then shape the work only through how
// the entries fall into buckets (how many pieces there are), which still spreads times
// over distributions by 2–2.5× (lab/experiments/019-latency-floor.md).
//
// Pieces cap the serial work of one thread when a bucket is hit often (window 0's digit
// 1 can hold half the points); the bit sums then add pieces, not buckets, so a big
// bucket's pieces are spread over threads too. Kernels are templated on sppark's xyzz
// bucket type; G2 points (fp2) take two lanes per value (bucket_t::degree), so every
// kernel maps `degree` adjacent threads to one logical item.

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <mutex>

// Threads per bit-sum block: 128 logical items for G1, 64 for G2 (two lanes each), so
// the shared tree holds at most 64 BLS12-381 G2 xyzz values (24 KiB).
#define ZKP_BM_BITSUM_THREADS 128

template<class scalar_t>
__global__ void zkp_bm_digits(uint32_t* keys, uint32_t* vals,
                              const scalar_t* const* scalars, uint32_t n, uint32_t k,
                              uint32_t wbits, uint32_t nwins, uint32_t sentinel, bool mont,
                              bool constant_work, bool tabled)
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
            // With a table, window w's entry is the point 2^(w·c)·P_i (table row w) in
            // proof j's one group of buckets; without, P_i in window w's own group.
            uint32_t group = tabled ? j : j * nwins + w;
            keys[at] = (d || constant_work) ? ((group << wbits) | d) : sentinel;
            vals[at] = tabled ? w * n + i : i;
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
                                    const uint32_t* end, uint32_t nkeys, uint32_t piece)
{
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b <= nkeys;
         b += gridDim.x * blockDim.x)
        count[b] = b < nkeys ? (end[b] - start[b] + piece - 1) / piece : 0;
}

// Piece q of bucket b covers sorted entries [start + q·L, min(start + (q+1)·L, end));
// pkey[q] = b, so the bit sums can tell its digit.
static __global__ void zkp_bm_pieces(uint32_t* pstart, uint32_t* pend, uint32_t* pkey,
                              const uint32_t* poff, const uint32_t* start,
                              const uint32_t* end, uint32_t nkeys, uint32_t piece)
{
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < nkeys;
         b += gridDim.x * blockDim.x) {
        uint32_t s = start[b], e = end[b];
        for (uint32_t q = poff[b]; s < e; q++, s += piece) {
            pstart[q] = s;
            pend[q] = min(s + piece, e);
            pkey[q] = b;
        }
    }
}

// Sort keys of the pieces, longest first: `piece` − length for each of the npieces
// made, `piece` + 1 (past every real one) for the unused slots up to max_pieces.
static __global__ void zkp_bm_order_keys(uint32_t* key, uint32_t* idx, const uint32_t* pstart,
                                         const uint32_t* pend, const uint32_t* npieces,
                                         size_t max_pieces, uint32_t piece)
{
    const uint32_t total = *npieces;
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < max_pieces;
         p += (size_t)gridDim.x * blockDim.x) {
        key[p] = p < total ? piece - (pend[p] - pstart[p]) : piece + 1;
        idx[p] = (uint32_t)p;
    }
}

// Thread q sums piece order[q] (or piece q where `order` is null): with the plan's
// order, longest first, the threads of a warp sum pieces of about one length, so none
// waits idle for a longer neighbour, and the grid's last wave holds the short ones.
template<class bucket_t, class affine_h>
__global__ void zkp_bm_sum_pieces(typename bucket_t::mem_t* partial, const affine_h* points,
                                  const uint32_t* vals, const uint32_t* pstart,
                                  const uint32_t* pend, const uint32_t* npieces,
                                  const uint32_t* order)
{
    const uint32_t deg = bucket_t::degree;
    const uint32_t total = *npieces;
    for (uint32_t q = (blockIdx.x * blockDim.x + threadIdx.x) / deg; q < total;
         q += gridDim.x * blockDim.x / deg) {
        const uint32_t p = order ? order[q] : q;
        bucket_t acc;
        acc.inf();
        for (uint32_t e = pstart[p]; e < pend[p]; e++) {
            typename bucket_t::affine_t a = points[vals[e]];
            acc.add(a);
        }
        partial[p] = acc;
    }
}

// Per run q of up to `run_len` consecutive pieces of one group g (runs numbered group by
// group, roff[g] the first of group g): S = Σ x_i into entry 2q with the digit of its
// first piece, W = Σ (d_i − d_0)·x_i into entry 2q + 1 with digit 1. Pieces are sorted
// by digit, so d_i − d_{i−1} ≥ 0: going down, x_i joins the running sum and the sum is
// added to W once per digit step, so x_i is counted d_i − d_0 times.
template<class bucket_t>
__global__ void zkp_bm_runs(typename bucket_t::mem_t* entries, uint32_t* ekey,
                            const typename bucket_t::mem_t* partial, const uint32_t* pkey,
                            const uint32_t* poff, const uint32_t* roff, uint32_t ngroups,
                            uint32_t wbits, uint32_t run_len)
{
    const uint32_t deg = bucket_t::degree;
    const uint32_t mask = (1u << wbits) - 1;
    const uint32_t total = roff[ngroups];
    for (uint32_t q = (blockIdx.x * blockDim.x + threadIdx.x) / deg; q < total;
         q += gridDim.x * blockDim.x / deg) {
        // The group of run q: the last g with roff[g] ≤ q.
        uint32_t lo = 0, hi = ngroups;
        while (hi - lo > 1) {
            uint32_t mid = (lo + hi) / 2;
            if (roff[mid] <= q)
                lo = mid;
            else
                hi = mid;
        }
        const uint32_t first = poff[lo << wbits] + (q - roff[lo]) * run_len;
        const uint32_t last = min(first + run_len, poff[(lo + 1) << wbits]);
        bucket_t sum, weighted;
        sum.inf();
        weighted.inf();
        uint32_t d = pkey[last - 1] & mask;
        for (uint32_t p = last - 1;; p--) {
            bucket_t x = partial[p];
            sum.add(x);
            if (p == first)
                break;
            const uint32_t below = pkey[p - 1] & mask;
            const uint32_t gap = d - below;
            d = below;
            if (gap == 1) {
                weighted.add(sum);
            } else if (gap > 1) {
                // gap·sum by double-and-add over gap's bits.
                bucket_t m = sum;
                for (int b = 30 - __clz(gap); b >= 0; b--) {
                    bucket_t twice = m;
                    m.add(twice);
                    if ((gap >> b) & 1)
                        m.add(sum);
                }
                weighted.add(m);
            }
        }
        entries[2 * (size_t)q] = sum;
        entries[2 * (size_t)q + 1] = weighted;
        ekey[2 * (size_t)q] = d;
        ekey[2 * (size_t)q + 1] = 1;
    }
}

// Runs per group: ⌈its pieces / run_len⌉ (count[ngroups] = 0, for the exclusive scan).
static __global__ void zkp_bm_run_counts(uint32_t* count, const uint32_t* poff,
                                         uint32_t ngroups, uint32_t wbits, uint32_t run_len)
{
    for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g <= ngroups;
         g += gridDim.x * blockDim.x)
        count[g] = g < ngroups
                       ? (poff[(g + 1) << wbits] - poff[g << wbits] + run_len - 1) / run_len
                       : 0;
}

// The sum of a block's logical items (blockDim.x / degree of them, a power of two), each
// holding `acc`, by a tree in the block's dynamic shared memory (one bucket_h an item):
// log₂(items) dependent additions. Every thread of the block must call it; item 0 gets
// the sum, the others a partial one.
template<class bucket_t>
__device__ __forceinline__ bucket_t zkp_bm_block_sum(bucket_t acc)
{
    typedef typename bucket_t::mem_t bucket_h;
    extern __shared__ __align__(16) unsigned char zkp_bm_smem[];
    bucket_h* tree = reinterpret_cast<bucket_h*>(zkp_bm_smem);
    const uint32_t items = blockDim.x / bucket_t::degree;
    const uint32_t item = threadIdx.x / bucket_t::degree;
    tree[item] = acc;
    __syncthreads();
    for (uint32_t half = items / 2; half > 0; half /= 2) {
        if (item < half) {
            bucket_t x = tree[item + half];
            acc.add(x);
            tree[item] = acc;
        }
        __syncthreads();
    }
    return acc;
}

// Per (window jw, bit b, split s): the sum of the entries of window jw whose digit has
// bit b set, over split s of the window's entries: the pieces (window jw's are
// goff[jw << wbits]..goff[(jw + 1) << wbits], gshift = wbits, gmul = 1) or the runs'
// two entries each (goff = roff, gshift = 0, gmul = 2). Each logical item strides over
// the split, then the block sums its items in a shared-memory tree. With
// `constant_work` an entry whose bit is clear is added too, into a sum that is only
// used when `never` (a zero the compiler cannot see) says so.
template<class bucket_t>
__global__ void zkp_bm_bitsums(typename bucket_t::mem_t* out,
                               const typename bucket_t::mem_t* partial, const uint32_t* pkey,
                               const uint32_t* goff, uint32_t gshift, uint32_t gmul,
                               uint32_t wbits, uint32_t splits, bool constant_work,
                               uint32_t never)
{
    const uint32_t deg = bucket_t::degree;
    const uint32_t items = blockDim.x / deg, item = threadIdx.x / deg;
    const uint32_t s = blockIdx.x % splits, jb = blockIdx.x / splits;
    const uint32_t jw = jb / wbits, b = jb % wbits;
    const uint32_t lo = goff[jw << gshift] * gmul, hi = goff[(jw + 1) << gshift] * gmul;
    const uint32_t span = (hi - lo + splits - 1) / splits;
    const uint32_t from = lo + s * span, to = min(hi, from + span);
    bucket_t acc, skipped;
    acc.inf();
    skipped.inf();
    for (uint32_t q = from + item; q < to; q += items) {
        bool hit = (pkey[q] >> b) & 1;
        if (hit || constant_work) {
            bucket_t x = partial[q];
            if (hit)
                acc.add(x);
            else
                skipped.add(x);
        }
    }
    if (never)
        acc.add(skipped);
    acc = zkp_bm_block_sum(acc);
    if (item == 0)
        out[blockIdx.x] = acc;
}

// Per (group, bit) t, one block each: the sum of its `splits` split sums, a logical item
// per split, by zkp_bm_block_sum (blockDim.x / degree items, a power of two ≥ splits).
// The tree's chain is log₂(splits) additions where one thread's loop was splits − 1: at
// a lone proof's few sums that chain is the kernel's whole time, one dependent addition
// after another (lab/experiments/031-digits-reduce-fold.md: 0.38 ms of a lone BLS12-381 2^16
// proof's G2 MSM as a loop).
template<class bucket_t>
__global__ void zkp_bm_fold(typename bucket_t::mem_t* out,
                            const typename bucket_t::mem_t* split_sums, uint32_t splits)
{
    const uint32_t item = threadIdx.x / bucket_t::degree;
    const size_t t = blockIdx.x;
    bucket_t acc;
    acc.inf();
    if (item < splits)
        acc = split_sums[t * splits + item];
    acc = zkp_bm_block_sum(acc);
    if (item == 0)
        out[t] = acc;
}

// The fields of sppark's xyzz and affine points, which their classes keep private: the
// table kernel reads a bucket's Z's and writes an affine point through these mirrors of
// their memory layout (checked by size below).
template<class B> struct zkp_xyzz_fields;
template<class F, class H, const H* A4> struct zkp_xyzz_fields<xyzz_t<F, H, A4>> {
    typedef F field_t;
    H X, Y, ZZZ, ZZ;
};
template<class F> struct zkp_affine_fields {
    typename F::mem_t X, Y;
};

// Rows 1..nwins-1 of a window table whose row 0 (the `len` points) is filled:
// row w = 2^(w·wbits)·row 0, affine. Every lane of a warp runs every round, since the
// inversion (sppark's reciprocal) pairs lanes through shuffles; a lane past the end works
// on the last point and writes nothing.
template<class bucket_t, class affine_h>
__global__ void zkp_bm_table(affine_h* table, size_t len, uint32_t wbits, uint32_t nwins)
{
    typedef zkp_xyzz_fields<bucket_t> xyzz_f;
    typedef typename xyzz_f::field_t field_t;
    typedef zkp_affine_fields<field_t> affine_f;
    static_assert(sizeof(xyzz_f) == sizeof(typename bucket_t::mem_t), "xyzz layout");
    static_assert(sizeof(affine_f) == sizeof(affine_h), "affine layout");
    const uint32_t deg = bucket_t::degree;
    const size_t stride = (size_t)gridDim.x * blockDim.x / deg;
    const size_t first = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / deg;
    const size_t rounds = (len + stride - 1) / stride;
    for (size_t r = 0; r < rounds; r++) {
        const size_t i = first + r * stride;
        const bool live = i < len;
        const size_t at = live ? i : len - 1;
        typename bucket_t::affine_t p = table[at];
        bucket_t acc;
        acc = p;
        for (uint32_t w = 1; w < nwins; w++) {
            for (uint32_t b = 0; b < wbits; b++) {
                bucket_t twice = acc;
                acc.add(twice);
            }
            // x = X/ZZ, y = Y/ZZZ; at infinity ZZZ = 0, whose reciprocal is 0: (0, 0).
            typename bucket_t::mem_t m;
            m = acc;
            const xyzz_f& f = reinterpret_cast<const xyzz_f&>(m);
            field_t zzz = f.ZZZ, zz = f.ZZ, x = f.X, y = f.Y;
            field_t inv = zzz.reciprocal();         // 1/ZZZ = 1/Z³
            field_t zinv = inv * zz;                // 1/Z
            zinv = zinv ^ 2;                        // 1/Z² = 1/ZZ
            x *= zinv;
            y *= inv;
            if (live) {
                affine_f& out = reinterpret_cast<affine_f&>(table[(size_t)w * len + at]);
                out.X = x;
                out.Y = y;
            }
        }
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
    // Bucket groups per proof: one per window, or one in all with a window table.
    uint32_t groups;
    bool constant_work;
    size_t max_pieces;
    uint32_t run_len;             // pieces per run (0: the bit sums read the pieces)
    uint32_t npieces = 0;         // pieces actually made (poff[nkeys])
    uint32_t nruns = 0;           // runs made (roff[k·groups])
    cudaStream_t st = nullptr;
    uint32_t* vals = nullptr;     // point indices, sorted by bucket key
    uint32_t* poff = nullptr;     // nkeys + 1 piece offsets; poff[nkeys] = piece count
    uint32_t* pstart = nullptr;
    uint32_t* pend = nullptr;
    uint32_t* pkey = nullptr;     // each piece's bucket key
    uint32_t* roff = nullptr;     // k·groups + 1 run offsets, by group
    uint32_t* porder = nullptr;   // piece indices, longest piece first (null: in order)

    ~zkp_bm_plan_t()
    {
        if (!st)
            return;
        cudaSetDevice(dev);
        for (void* p : {(void*)vals, (void*)poff, (void*)pstart, (void*)pend, (void*)pkey,
                        (void*)roff, (void*)porder})
            if (p)
                cudaFreeAsync(p, st);
        cudaStreamDestroy(st);
    }
};

// Window width minimizing additions: nwins·(n + (c/2)·2^c) (one add per entry; the bit
// sums add each present bucket's pieces c/2 times on average).
static uint32_t zkp_bm_wbits(uint32_t n, uint32_t bits)
{
    uint32_t best = 4;
    double best_cost = 1e300;
    for (uint32_t c = 4; c <= 16; c++) {
        double cost = (double)((bits + c - 1) / c) * ((double)n + 0.5 * c * (1u << c));
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
// Montgomery with `mont`); `piece`: entries per piece (L); `run`: pieces per run (0: none,
// the bit sums read the pieces; constant work always reads them); `order`: the pieces are
// summed longest first (zkp_bm_sum_pieces); `table_wbits`: the window width
// of the table of the sets the plan will run against (0: sets' own points, the width
// chosen here); `shape` receives the window width and the bucket groups per proof, which
// the host needs to put the bit sums together.
template<class scalar_t>
static RustError zkp_bm_plan_new(zkp_bm_plan_t** out, const scalar_t* const* scalars,
                                 uint32_t k, uint32_t n, bool mont, uint32_t piece,
                                 uint32_t run, bool order, bool constant_work,
                                 uint32_t table_wbits, uint32_t* shape, int dev)
{
    *out = nullptr;
    zkp_bm_plan_t* plan = nullptr;
    try {
        if (k == 0 || n == 0 || piece == 0)
            return RustError{cudaErrorInvalidValue,
                             "batch MSM of no vectors, no points or empty pieces"};
        if (table_wbits > 24)
            return RustError{cudaErrorInvalidValue, "window table wider than 24 bits"};
        uint32_t bits = scalar_t::nbits;
        uint32_t wbits = table_wbits ? table_wbits : zkp_bm_wbits(n, bits);
        uint32_t nwins = (bits + wbits - 1) / wbits;
        uint32_t groups = table_wbits ? 1 : nwins;
        uint64_t nkeys64 = (uint64_t)k * groups << wbits;
        uint64_t len64 = (uint64_t)k * nwins * n;
        if (nkeys64 >= (1ull << 31) || len64 >= (1ull << 31))
            return RustError{cudaErrorInvalidValue, "batch MSM too large for 32-bit keys"};
        uint32_t nkeys = (uint32_t)nkeys64;
        size_t len = (size_t)len64;
        int end_bit = 1;
        while ((1ull << end_bit) <= nkeys)
            end_bit++;

        const uint32_t ngroups = k * groups;
        plan = new zkp_bm_plan_t{dev, k, n, wbits, nwins, nkeys, groups, constant_work,
                                 len / piece + std::min<size_t>(len, nkeys) + 1,
                                 constant_work ? 0 : run};
        shape[0] = wbits;
        shape[1] = groups;
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
        CUDA_OK(cudaMallocAsync(&plan->pkey, plan->max_pieces * sizeof(uint32_t), st));
        if (plan->run_len)
            CUDA_OK(cudaMallocAsync(&plan->roff, ((size_t)ngroups + 1) * sizeof(uint32_t), st));
        if (order)
            CUDA_OK(cudaMallocAsync(&plan->porder, plan->max_pieces * sizeof(uint32_t), st));
        // Piece lengths are at most `piece`; the unused slots' key is piece + 1.
        int order_bits = 1;
        while ((1ull << order_bits) <= (uint64_t)piece + 1)
            order_bits++;

        size_t sort_bytes = 0, scan_bytes = 0, run_scan_bytes = 0;
        CUDA_OK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, (uint32_t*)nullptr,
                                                 (uint32_t*)nullptr, (uint32_t*)nullptr,
                                                 (uint32_t*)nullptr, len, 0, end_bit, st));
        CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, (uint32_t*)nullptr,
                                               (uint32_t*)nullptr, nkeys + 1, st));
        CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, run_scan_bytes, (uint32_t*)nullptr,
                                               (uint32_t*)nullptr, ngroups + 1, st));
        size_t order_bytes = 0;
        if (order)
            CUDA_OK(cub::DeviceRadixSort::SortPairs(nullptr, order_bytes, (uint32_t*)nullptr,
                                                     (uint32_t*)nullptr, (uint32_t*)nullptr,
                                                     (uint32_t*)nullptr, plan->max_pieces, 0,
                                                     order_bits, st));
        scan_bytes = std::max({scan_bytes, run_scan_bytes, order_bytes});
        size_t o_keys = 0;
        size_t o_keys2 = o_keys + zkp_align(len * 4);
        size_t o_vals = o_keys2 + zkp_align(len * 4);
        size_t o_start = o_vals + zkp_align(len * 4);
        size_t o_end = o_start + zkp_align(((size_t)nkeys + 1) * 4);
        size_t o_count = o_end + zkp_align(((size_t)nkeys + 1) * 4);
        size_t o_ptrs = o_count + zkp_align(((size_t)nkeys + 1) * 4);
        // The order's keys, its sorted keys and its piece indices (when ordered).
        size_t o_order = o_ptrs + zkp_align(k * sizeof(void*));
        size_t o_temp = o_order + (order ? 3 * zkp_align(plan->max_pieces * 4) : 0);
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
            keys, vals, ptrs, n, k, wbits, nwins, nkeys, mont, constant_work, table_wbits != 0);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cub::DeviceRadixSort::SortPairs(temp, sort_bytes, keys, keys2, vals,
                                                 plan->vals, len, 0, end_bit, st));
        CUDA_OK(cudaMemsetAsync(start, 0, ((size_t)nkeys + 1) * 4, st));
        CUDA_OK(cudaMemsetAsync(end, 0, ((size_t)nkeys + 1) * 4, st));
        zkp_bm_ranges<<<zkp_grid(len, 256), 256, 0, st>>>(start, end, keys2, len, nkeys);
        CUDA_OK(cudaGetLastError());
        zkp_bm_piece_counts<<<zkp_grid((size_t)nkeys + 1, 256), 256, 0, st>>>(
            count, start, end, nkeys, piece);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cub::DeviceScan::ExclusiveSum(temp, scan_bytes, count, plan->poff,
                                               nkeys + 1, st));
        zkp_bm_pieces<<<zkp_grid(nkeys, 256), 256, 0, st>>>(
            plan->pstart, plan->pend, plan->pkey, plan->poff, start, end, nkeys, piece);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpyAsync(&plan->npieces, &plan->poff[nkeys], sizeof(uint32_t),
                                cudaMemcpyDeviceToHost, st));
        if (order) {
            auto* okey = tmp.at<uint32_t>(o_order);
            auto* okey2 = tmp.at<uint32_t>(o_order + zkp_align(plan->max_pieces * 4));
            auto* oidx = tmp.at<uint32_t>(o_order + 2 * zkp_align(plan->max_pieces * 4));
            zkp_bm_order_keys<<<zkp_grid(plan->max_pieces, 256), 256, 0, st>>>(
                okey, oidx, plan->pstart, plan->pend, &plan->poff[nkeys], plan->max_pieces,
                piece);
            CUDA_OK(cudaGetLastError());
            CUDA_OK(cub::DeviceRadixSort::SortPairs(temp, scan_bytes, okey, okey2, oidx,
                                                     plan->porder, plan->max_pieces, 0,
                                                     order_bits, st));
        }
        if (plan->run_len) {
            // Runs: ⌈pieces / run⌉ per group, numbered group by group (count is free again).
            zkp_bm_run_counts<<<zkp_grid((size_t)ngroups + 1, 256), 256, 0, st>>>(
                count, plan->poff, ngroups, wbits, plan->run_len);
            CUDA_OK(cudaGetLastError());
            CUDA_OK(cub::DeviceScan::ExclusiveSum(temp, scan_bytes, count, plan->roff,
                                                   ngroups + 1, st));
            CUDA_OK(cudaMemcpyAsync(&plan->nruns, &plan->roff[ngroups], sizeof(uint32_t),
                                    cudaMemcpyDeviceToHost, st));
        }
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

// The plan's k MSMs against `points` (device: the plan's n of them, followed by the rest
// of their window table when the plan was made for one), as bit sums: into host memory
// `out`, k·groups·wbits xyzz points, T[(j·groups + g)·wbits + b], whose
// Σ 2^(g·wbits + b)·T is proof j's MSM (the host's Horner).
template<class bucket_t, class affine_h>
static RustError zkp_bm_run(const zkp_bm_plan_t* plan, const affine_h* points,
                            typename bucket_t::mem_t* out)
{
    typedef typename bucket_t::mem_t bucket_h;
    try {
        zkp_stream_t stream(plan->dev);
        cudaStream_t st = stream.st;
        const uint32_t deg = bucket_t::degree;
        const uint32_t nwindows = plan->k * plan->groups;
        const uint32_t nsums = nwindows * plan->wbits;
        const uint32_t items = ZKP_BM_BITSUM_THREADS / deg;
        const bool runs = plan->run_len != 0;
        // What the bit sums add: the runs' two entries each, or the pieces.
        const size_t nentries = runs ? 2 * (size_t)plan->nruns : plan->npieces;
        // Splits per (window, bit) so that each item strides over ~8 entries: a short chain.
        const size_t per_window = nentries / std::max<uint32_t>(nwindows, 1);
        const uint32_t splits =
            (uint32_t)std::min<size_t>(32, std::max<size_t>(1, per_window / (8 * items)));
        size_t o_partial = 0;
        size_t o_entries = o_partial + zkp_align(std::max<size_t>(plan->npieces, 1) * sizeof(bucket_h));
        size_t o_ekey = o_entries + zkp_align((runs ? nentries : 0) * sizeof(bucket_h));
        size_t o_split = o_ekey + zkp_align((runs ? nentries : 0) * sizeof(uint32_t));
        size_t o_sums = o_split + zkp_align((size_t)nsums * splits * sizeof(bucket_h));
        zkp_scratch_t tmp(o_sums + (size_t)nsums * sizeof(bucket_h), st);
        auto* partial = tmp.at<bucket_h>(o_partial);
        auto* entries = tmp.at<bucket_h>(o_entries);
        auto* ekey = tmp.at<uint32_t>(o_ekey);
        auto* split_sums = tmp.at<bucket_h>(o_split);
        auto* sums = tmp.at<bucket_h>(o_sums);

        const uint32_t threads = 128;
        zkp_bm_sum_pieces<bucket_t, affine_h>
            <<<zkp_grid((size_t)plan->npieces * deg, threads), threads, 0, st>>>(
                partial, points, plan->vals, plan->pstart, plan->pend, &plan->poff[plan->nkeys],
                plan->porder);
        CUDA_OK(cudaGetLastError());
        if (runs && plan->nruns) {
            zkp_bm_runs<bucket_t>
                <<<zkp_grid((size_t)plan->nruns * deg, threads), threads, 0, st>>>(
                    entries, ekey, partial, plan->pkey, plan->poff, plan->roff, nwindows,
                    plan->wbits, plan->run_len);
            CUDA_OK(cudaGetLastError());
        }
        zkp_bm_bitsums<bucket_t><<<nsums * splits, ZKP_BM_BITSUM_THREADS,
                                   items * sizeof(bucket_h), st>>>(
            splits > 1 ? split_sums : sums, runs ? entries : partial,
            runs ? ekey : plan->pkey, runs ? plan->roff : plan->poff, runs ? 0 : plan->wbits,
            runs ? 2 : 1, plan->wbits, splits, plan->constant_work, 0);
        CUDA_OK(cudaGetLastError());
        if (splits > 1) {
            uint32_t fold_items = 1;
            while (fold_items < splits)
                fold_items *= 2;
            zkp_bm_fold<bucket_t><<<nsums, fold_items * deg, fold_items * sizeof(bucket_h), st>>>(
                sums, split_sums, splits);
            CUDA_OK(cudaGetLastError());
        }
        CUDA_OK(cudaMemcpyAsync(out, sums, (size_t)nsums * sizeof(bucket_h),
                                 cudaMemcpyDeviceToHost, st));
        CUDA_OK(cudaStreamSynchronize(st));
    } catch (const cuda_error& e) {
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}
