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

#include "batch_msm_kernels.cuh"
#include <mutex>

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
    // Runs by segment (zkp_bm_segment_flags): max_pieces + 1 slots each, sstart[s] the
    // first piece of segment s, rseg[s] its first run (slots past the last: the count).
    uint32_t* sstart = nullptr;
    uint32_t* rseg = nullptr;
    uint32_t* porder = nullptr;   // piece indices, longest piece first (null: in order)

    ~zkp_bm_plan_t()
    {
        if (!st)
            return;
        cudaSetDevice(dev);
        for (void* p : {(void*)vals, (void*)poff, (void*)pstart, (void*)pend, (void*)pkey,
                        (void*)roff, (void*)sstart, (void*)rseg, (void*)porder})
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
// the bit sums read the pieces; constant work always reads them); `gap`: no run crosses a
// digit step wider than this (0: any step); `order`: the pieces are
// summed longest first (zkp_bm_sum_pieces); `table_wbits`: the window width
// of the table of the sets the plan will run against (0: sets' own points, the width
// chosen here); `shape` receives the window width and the bucket groups per proof, which
// the host needs to put the bit sums together.
template<class scalar_t>
static RustError zkp_bm_plan_new(zkp_bm_plan_t** out, const scalar_t* const* scalars,
                                 uint32_t k, uint32_t n, bool mont, uint32_t piece,
                                 uint32_t run, uint32_t gap, bool order, bool constant_work,
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
        // Run and segment slots: at most one segment a piece (len and nkeys < 2^31 keep
        // it below 2^31 + 2^28: 32-bit indices).
        const size_t nslots = plan->max_pieces;
        if (plan->run_len) {
            CUDA_OK(cudaMallocAsync(&plan->roff, ((size_t)ngroups + 1) * sizeof(uint32_t), st));
            CUDA_OK(cudaMallocAsync(&plan->sstart, (nslots + 1) * sizeof(uint32_t), st));
            CUDA_OK(cudaMallocAsync(&plan->rseg, (nslots + 1) * sizeof(uint32_t), st));
        }
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
                                               (uint32_t*)nullptr, nslots + 1, st));
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
        // The segments' flags and their scan, then the runs a segment (when runs).
        size_t o_seg = o_order + (order ? 3 * zkp_align(plan->max_pieces * 4) : 0);
        size_t o_temp = o_seg + (plan->run_len ? 3 * zkp_align((nslots + 1) * 4) : 0);
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
            // Runs: ⌈pieces / run⌉ per segment, numbered segment by segment, so group by
            // group; then each group's first run for the bit sums.
            auto* flag = tmp.at<uint32_t>(o_seg);
            auto* seg = tmp.at<uint32_t>(o_seg + zkp_align((nslots + 1) * 4));
            auto* runs = tmp.at<uint32_t>(o_seg + 2 * zkp_align((nslots + 1) * 4));
            const uint32_t slots = (uint32_t)nslots;
            const uint32_t* npieces = &plan->poff[nkeys];
            zkp_bm_segment_flags<<<zkp_grid(nslots + 1, 256), 256, 0, st>>>(
                flag, plan->pkey, npieces, slots, wbits, gap);
            CUDA_OK(cudaGetLastError());
            CUDA_OK(cub::DeviceScan::ExclusiveSum(temp, scan_bytes, flag, seg, nslots + 1, st));
            zkp_bm_segment_starts<<<zkp_grid(nslots + 1, 256), 256, 0, st>>>(
                plan->sstart, flag, seg, npieces, slots);
            CUDA_OK(cudaGetLastError());
            zkp_bm_segment_runs<<<zkp_grid(nslots + 1, 256), 256, 0, st>>>(
                runs, plan->sstart, seg, npieces, slots, plan->run_len);
            CUDA_OK(cudaGetLastError());
            CUDA_OK(cub::DeviceScan::ExclusiveSum(temp, scan_bytes, runs, plan->rseg, nslots + 1,
                                                   st));
            zkp_bm_group_runs<<<zkp_grid((size_t)ngroups + 1, 256), 256, 0, st>>>(
                plan->roff, plan->poff, seg, plan->rseg, ngroups, wbits);
            CUDA_OK(cudaGetLastError());
            CUDA_OK(cudaMemcpyAsync(&plan->nruns, &plan->rseg[nslots], sizeof(uint32_t),
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
                    entries, ekey, partial, plan->pkey, plan->sstart, plan->rseg,
                    (uint32_t)plan->max_pieces, plan->wbits, plan->run_len);
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
