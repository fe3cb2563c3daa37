// The batched MSM's kernels (batch_msm.cuh says what they compute and in which order):
// digits, bucket ranges and pieces (the plan); piece sums, runs, bit sums and their fold
// (the run); the window table of a resident set. Included by batch_msm.cuh only.

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

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

// Per run q of up to `run_len` consecutive pieces of one segment (zkp_bm_segment_flags
// says where segments start; runs numbered segment by segment, rseg[s] the first of
// segment s, sstart[s] its first piece): S = Σ x_i into entry 2q with the digit of its
// first piece, W = Σ (d_i − d_0)·x_i into entry 2q + 1 with digit 1. Pieces are sorted
// by digit, so d_i − d_{i−1} ≥ 0: going down, x_i joins the running sum and the sum is
// added to W once per digit step, so x_i is counted d_i − d_0 times. `nslots`: rseg's
// length less one (its slots past the last segment hold the run count).
template<class bucket_t>
__global__ void zkp_bm_runs(typename bucket_t::mem_t* entries, uint32_t* ekey,
                            const typename bucket_t::mem_t* partial, const uint32_t* pkey,
                            const uint32_t* sstart, const uint32_t* rseg, uint32_t nslots,
                            uint32_t wbits, uint32_t run_len)
{
    const uint32_t deg = bucket_t::degree;
    const uint32_t mask = (1u << wbits) - 1;
    const uint32_t total = rseg[nslots];
    for (uint32_t q = (blockIdx.x * blockDim.x + threadIdx.x) / deg; q < total;
         q += gridDim.x * blockDim.x / deg) {
        // The segment of run q: the last s with rseg[s] ≤ q.
        uint32_t lo = 0, hi = nslots;
        while (hi - lo > 1) {
            uint32_t mid = (lo + hi) / 2;
            if (rseg[mid] <= q)
                lo = mid;
            else
                hi = mid;
        }
        const uint32_t first = sstart[lo] + (q - rseg[lo]) * run_len;
        const uint32_t last = min(first + run_len, sstart[lo + 1]);
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
                // gap·sum by double-and-add over gap's bits: a short chain, since a
                // segment's steps are at most the plan's gap.
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

// Where runs may start: flag[p] = 1 where piece p begins a segment, i.e. it is its
// group's first piece, or (with `gap` > 0) its digit is more than `gap` above the digit
// of the piece before it; 0 past the npieces made, up to slot nslots. No run crosses a
// segment's start, so no running sum multiplies by a wide digit step: a step of g costs
// ~2·log₂ g additions, and where a group is sparse (a circom witness's few values other
// than 0 and 1 put single entries all over its digits) runs of R such steps were a
// batch's longest chain (lab/experiments/042o-sparse-runs.md).
static __global__ void zkp_bm_segment_flags(uint32_t* flag, const uint32_t* pkey,
                                            const uint32_t* npieces, uint32_t nslots,
                                            uint32_t wbits, uint32_t gap)
{
    const uint32_t total = *npieces;
    const uint32_t mask = (1u << wbits) - 1;
    for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p <= nslots;
         p += gridDim.x * blockDim.x) {
        uint32_t f = 0;
        if (p < total) {
            const uint32_t key = pkey[p], prev = p ? pkey[p - 1] : 0;
            f = p == 0 || (key >> wbits) != (prev >> wbits) ||
                (gap && (key & mask) - (prev & mask) > gap);
        }
        flag[p] = f;
    }
}

// sstart[s]: the first piece of segment s (seg: the exclusive scan of the flags, so
// seg[p] is the segment p starts, where it starts one), and sstart[seg[npieces]] =
// npieces, so that segment s ends where s + 1 starts.
static __global__ void zkp_bm_segment_starts(uint32_t* sstart, const uint32_t* flag,
                                             const uint32_t* seg, const uint32_t* npieces,
                                             uint32_t nslots)
{
    const uint32_t total = *npieces;
    for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p <= nslots;
         p += gridDim.x * blockDim.x) {
        if (p == total || (p < total && flag[p]))
            sstart[seg[p]] = p;
    }
}

// Runs per segment: ⌈its pieces / run_len⌉; 0 past the last segment (there are
// seg[npieces]), up to slot nslots, for the exclusive scan.
static __global__ void zkp_bm_segment_runs(uint32_t* count, const uint32_t* sstart,
                                           const uint32_t* seg, const uint32_t* npieces,
                                           uint32_t nslots, uint32_t run_len)
{
    const uint32_t nseg = seg[*npieces];
    for (uint32_t s = blockIdx.x * blockDim.x + threadIdx.x; s <= nslots;
         s += gridDim.x * blockDim.x)
        count[s] = s < nseg ? (sstart[s + 1] - sstart[s] + run_len - 1) / run_len : 0;
}

// roff[g]: group g's first run (g in 0..=ngroups, so roff[ngroups] is the run count):
// the first run of the segment its first piece starts, or the next group's where g has
// no pieces (poff[g << wbits] is then the next group's first piece). The bit sums find a
// group's entries by it.
static __global__ void zkp_bm_group_runs(uint32_t* roff, const uint32_t* poff,
                                         const uint32_t* seg, const uint32_t* rseg,
                                         uint32_t ngroups, uint32_t wbits)
{
    for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g <= ngroups;
         g += gridDim.x * blockDim.x)
        roff[g] = rseg[seg[poff[g << wbits]]];
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
// after another (lab/experiments/031-digits-reduce-fold.md: 0.38 ms of a lone BLS12-381
// 2^16 proof's G2 MSM as a loop).
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
