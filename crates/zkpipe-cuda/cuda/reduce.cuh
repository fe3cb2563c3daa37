// The reduce on the GPU: a key's A and B matrices resident (CSR), and a = A·w, b = B·w,
// c = a∘b from a witness on the device, written straight into a quotient's buffers.
#pragma once

#include "quotient.cuh"

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

// One matrix's rows on the device: offsets, and the entries from `base` on (0 for whole
// matrices; a chunk's first offset when its rows stream). A streamed chunk's values may
// be narrow (`words` not null; zkpipe_core::csr::NarrowValues): a word an entry, a small
// value itself (ZKP_NARROW_NEGATIVE: its negation) or, with ZKP_NARROW_FULL, the index of
// a full value, found at vals[index − full_base]. Field: #[repr(C)] ChunkRows in ffi.rs.
struct zkp_rows_t {
    const uint32_t* starts;
    const uint32_t* cols;
    const fr_t* vals;
    const uint32_t* words;
    uint32_t base;
    uint32_t full_base;
};

#define ZKP_NARROW_FULL 0x80000000u
#define ZKP_NARROW_NEGATIVE 0x40000000u

// Adds entry j's value times its w to s (a full value, Montgomery: the Montgomery product
// is the product in w's form) or to t (a narrow small value v, as it is: the product is
// v·w/R, so t is brought right once per row, by zkp_row_sum).
__device__ __forceinline__ void zkp_entry(fr_t& s, fr_t& t, const zkp_rows_t& m, uint32_t j,
                                          const fr_t* w)
{
    fr_t wj = w[m.cols[j]];
    if (m.words == nullptr) {
        s += m.vals[j] * wj;
        return;
    }
    uint32_t x = m.words[j];
    if (x & ZKP_NARROW_FULL) {
        s += m.vals[(x & ~ZKP_NARROW_FULL) - m.full_base] * wj;
        return;
    }
    // v as it is (not Montgomery): its low 32-bit limb, the rest zero.
    fr_t v;
    v.zero();
    reinterpret_cast<uint32_t*>(&v)[0] = x & ~ZKP_NARROW_NEGATIVE;
    fr_t p = v * wj;
    if (x & ZKP_NARROW_NEGATIVE)
        t -= p;
    else
        t += p;
}

// s + t·R: the full values' sum and the narrow ones' (see zkp_entry), in w's form.
__device__ __forceinline__ fr_t zkp_row_sum(fr_t s, fr_t t, const zkp_rows_t& m)
{
    if (m.words != nullptr) {
        t.to();
        s += t;
    }
    return s;
}

// ⟨row, w⟩. With w in standard form a Montgomery product of a Montgomery value and a
// standard one is the standard product, so the sum is converted once, not each w read;
// with w in Montgomery form (`mont`) the sum already is.
__device__ __forceinline__ fr_t zkp_row_dot(const zkp_rows_t& m, const fr_t* w, size_t row,
                                            bool mont)
{
    fr_t s, t;
    s.zero();
    t.zero();
    for (uint32_t j = m.starts[row] - m.base, end = m.starts[row + 1] - m.base; j < end; j++)
        zkp_entry(s, t, m, j, w);
    s = zkp_row_sum(s, t, m);
    if (!mont)
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
__global__ void zkp_reduce(fr_t* a, fr_t* b, fr_t* c, zkp_rows_t ma, zkp_rows_t mb,
                           const fr_t* w, size_t n, bool mont)
{
    const uint32_t* a_starts = ma.starts;
    const uint32_t* b_starts = mb.starts;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        if (zkp_is_long(a_starts, b_starts, i))
            continue;
        fr_t ai = zkp_row_dot(ma, w, i, mont);
        fr_t bi = zkp_row_dot(mb, w, i, mont);
        a[i] = ai;
        b[i] = bi;
        c[i] = ai * bi;
    }
}

// ⟨row, w⟩ (unconverted, as in zkp_row_dot) summed by a whole warp: each lane takes
// every 32nd entry, then the lanes' sums are folded with shuffles, limb by limb.
__device__ __forceinline__ fr_t zkp_row_dot_warp(const zkp_rows_t& m, const fr_t* w, size_t row,
                                                 uint32_t lane)
{
    fr_t s, t;
    s.zero();
    t.zero();
    for (uint32_t j = m.starts[row] - m.base + lane, end = m.starts[row + 1] - m.base; j < end;
         j += 32)
        zkp_entry(s, t, m, j, w);
    s = zkp_row_sum(s, t, m);
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
                                uint32_t n_long, zkp_rows_t ma, zkp_rows_t mb, const fr_t* w,
                                bool mont)
{
    uint32_t lane = threadIdx.x % 32;
    size_t warps = (size_t)gridDim.x * (blockDim.x / 32);
    for (size_t k = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32; k < n_long;
         k += warps) {
        size_t row = long_rows[k];
        fr_t ai = zkp_row_dot_warp(ma, w, row, lane);
        fr_t bi = zkp_row_dot_warp(mb, w, row, lane);
        if (lane == 0) {
            if (!mont) {
                ai.to();
                bi.to();
            }
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

// Launches the reduce of `n` rows (`long_rows` of them summed by a warp each) into a, b,
// c on `stream`.
static void zkp_reduce_launch(const gpu_t& gpu, stream_t& stream, fr_t* a, fr_t* b, fr_t* c,
                              zkp_rows_t ma, zkp_rows_t mb, const uint32_t* long_rows,
                              uint32_t n_long, const fr_t* w, size_t n, bool mont)
{
    uint32_t threads = 128;
    uint32_t blocks = (uint32_t)std::min<size_t>((n + threads - 1) / threads,
                                                 (size_t)gpu.sm_count() * 16);
    if (blocks > 0) {
        zkp_reduce<<<blocks, threads, 0, (cudaStream_t)stream>>>(a, b, c, ma, mb, w, n, mont);
        CUDA_OK(cudaGetLastError());
    }
    if (n_long > 0) {
        uint32_t long_blocks = (uint32_t)std::min<size_t>((n_long + 3) / 4,
                                                          (size_t)gpu.sm_count() * 16);
        zkp_reduce_long<<<long_blocks, 128, 0, (cudaStream_t)stream>>>(
            a, b, c, long_rows, n_long, ma, mb, w, mont);
        CUDA_OK(cudaGetLastError());
    }
}

// Whether the matrices `m` are for q's domain size and on q's GPU.
static bool zkp_csr_fits(const zkp_quotient_t* q, const zkp_csr_t* m)
{
    return m->rows == ((size_t)1 << q->lg_n) && m->dev == q->gpu.id();
}

static RustError zkp_csr_misfit()
{
    return RustError{cudaErrorInvalidValue,
                     "matrices and quotient differ in domain size or device"};
}

// Launches the reduce of the whole matrices `m` (zkp_csr_fits) and the witness `w` into
// q's a, b, c on q's stream.
static void zkp_reduce_whole(zkp_quotient_t* q, const zkp_csr_t* m, const fr_t* w, bool mont)
{
    size_t n = (size_t)1 << q->lg_n;
    fr_t* d = &q->d[0];
    zkp_rows_t ma{m->starts[0], m->cols[0], m->vals[0], nullptr, 0, 0};
    zkp_rows_t mb{m->starts[1], m->cols[1], m->vals[1], nullptr, 0, 0};
    zkp_reduce_launch(q->gpu, q->stream, d, d + n, d + 2 * n, ma, mb, m->long_rows, m->n_long,
                      w, n, mont);
}

// a, b, c of the witness `w` (device memory on the quotient's GPU, the key's nVars
// values in standard form, or Montgomery form with `mont`) into the quotient's buffers,
// for a zkp_quotient_run_ with no host inputs. Returns when they are there.
extern "C" RustError ZKP_FN(zkp_reduce_run_, CURVE)(zkp_quotient_t* q, const zkp_csr_t* m,
                                                   const fr_t* w, bool mont)
{
    const gpu_t& gpu = q->gpu;
    stream_t& stream = q->stream;
    if (!zkp_csr_fits(q, m))
        return zkp_csr_misfit();
    try {
        gpu.select();
        zkp_reduce_whole(q, m, w, mont);
        stream.sync();
    } catch (const cuda_error& e) {
        stream.sync();
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}

// a, b, c of rows [row0, row0 + rows) of the witness `w` (as for zkp_reduce_run_) into
// the quotient's buffers, from those rows of A and B on the device: a key whose matrices
// do not fit the device streams them chunk by chunk (zkpipe-cuda's streamed_reduce.rs).
// Each matrix's `rows + 1` offsets are the whole matrix's, its columns and values (or
// words) start at its first offset (`base`); `long_rows` lists the chunk's rows (from 0)
// with more than ZKP_LONG_ROW entries in either. Returns when they are there.
extern "C" RustError ZKP_FN(zkp_reduce_rows_, CURVE)(
    zkp_quotient_t* q, uint32_t row0, uint32_t rows, zkp_rows_t ma, zkp_rows_t mb,
    const uint32_t* long_rows, uint32_t n_long, const fr_t* w, bool mont)
{
    const gpu_t& gpu = q->gpu;
    stream_t& stream = q->stream;
    size_t n = (size_t)1 << q->lg_n;
    if ((size_t)row0 + rows > n)
        return RustError{cudaErrorInvalidValue, "a chunk of rows past the quotient's domain"};
    try {
        gpu.select();
        fr_t* d = &q->d[0] + row0;
        zkp_reduce_launch(gpu, stream, d, d + n, d + 2 * n, ma, mb, long_rows, n_long, w,
                          rows, mont);
        stream.sync();
    } catch (const cuda_error& e) {
        stream.sync();
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}

// One proof's whole quotient from its witness, in one call: w (`bytes` from the host,
// pinned for full speed) crosses to `w_dev` on the quotient's stream, then the reduce and
// the quotient run there and h is left on the device. With `graph` the reduce and the
// quotient replay the set's captured graph (captured here on its first use, and again
// if the matrices, w's address, its form or k change), else they launch one by one.
// `quotient_ms` receives the GPU's time for the quotient part (for the waterfall's
// split; −1 where the events could not say). Returns when h is there.
extern "C" RustError ZKP_FN(zkp_reduce_quotient_, CURVE)(zkp_quotient_t* q, const zkp_csr_t* m,
                                                         fr_t* w_dev, const void* w_host,
                                                         size_t bytes, bool mont, uint64_t k,
                                                         bool graph, float* quotient_ms)
{
    const gpu_t& gpu = q->gpu;
    stream_t& stream = q->stream;
    if (!zkp_csr_fits(q, m))
        return zkp_csr_misfit();
    cudaStream_t s = (cudaStream_t)stream;
    // The reduce's kernels, a mark, the quotient's, a mark: what a graph captures. A
    // mark in a capture must be an external record node to be recorded when the graph
    // runs; outside one, that flag is refused.
    auto launch = [&](bool capturing) {
        auto mark = [&](cudaEvent_t e) {
            CUDA_OK(capturing ? cudaEventRecordWithFlags(e, s, cudaEventRecordExternal)
                              : cudaEventRecord(e, s));
        };
        zkp_reduce_whole(q, m, w_dev, mont);
        mark(q->marks[0]);
        const fr_t* on_device[3] = {nullptr, nullptr, nullptr};
        zkp_quotient_launch(q, on_device, k);
        mark(q->marks[1]);
    };
    try {
        gpu.select();
        CUDA_OK(cudaMemcpyAsync(w_dev, w_host, bytes, cudaMemcpyHostToDevice, s));
        if (!graph) {
            launch(false);
        } else {
            bool same = q->graph != nullptr && q->graph_m == m && q->graph_w == w_dev
                && q->graph_mont == mont && q->graph_k == k;
            if (!same) {
                if (q->graph != nullptr) {
                    CUDA_OK(cudaGraphExecDestroy(q->graph));
                    q->graph = nullptr;
                }
                cudaGraph_t g = nullptr;
                CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
                try {
                    launch(true);
                } catch (const cuda_error&) {
                    (void)cudaStreamEndCapture(s, &g);
                    if (g != nullptr)
                        cudaGraphDestroy(g);
                    throw;
                }
                CUDA_OK(cudaStreamEndCapture(s, &g));
                cudaError_t made = cudaGraphInstantiate(&q->graph, g, 0);
                cudaGraphDestroy(g);
                if (made != cudaSuccess) {
                    q->graph = nullptr;
                    CUDA_OK(made);
                }
                q->graph_m = m;
                q->graph_w = w_dev;
                q->graph_mont = mont;
                q->graph_k = k;
            }
            CUDA_OK(cudaGraphLaunch(q->graph, s));
        }
        stream.sync();
        // The split is for the waterfall only: without it the whole call counts as the
        // reduce's (−1), and the proof goes on.
        if (cudaEventElapsedTime(quotient_ms, q->marks[0], q->marks[1]) != cudaSuccess)
            *quotient_ms = -1.0f;
    } catch (const cuda_error& e) {
        stream.sync();
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}
