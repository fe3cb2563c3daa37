// Fixed-base multiplications for `zkpipe setup --dev --backend cuda`: out[i] = s[i]·G for
// one generator G, from a window table of G made on the host, written affine in the key
// file's layout. sppark has MSMs, not many independent multiplications of one base, hence
// these kernels.
#pragma once

// Bits per window of the table: row w holds d·2^(8w)·G for every byte value d, so each
// multiplication is at most one mixed addition per byte of its scalar.
#define ZKP_FB_WBITS 8
#define ZKP_FB_ROW (1u << ZKP_FB_WBITS)

// Rows of the table for scalars of `nbits` bits.
#define ZKP_FB_ROWS(nbits) (((nbits) + ZKP_FB_WBITS - 1) / ZKP_FB_WBITS)

// sppark's xyzz and affine points as memory holds them (`xyzz_t::mem_t`,
// `Affine_t::mem_t`: their coordinates in this order), with the coordinates in reach:
// sppark keeps them private and makes points affine on the host only.
template<class F> struct zkp_xyzz_mem { typename F::mem_t X, Y, ZZZ, ZZ; };
template<class F> struct zkp_xy_mem { typename F::mem_t X, Y; };

// One scalar per `B::degree` threads (Montgomery form, as arkworks holds it): the sum of
// its bytes' table entries, as an xyzz point (sppark's device-side point type, whose
// additions need no inversion; zkp_xyzz_affine makes them affine). Over Fp2 (G2)
// sppark spreads an element over two adjacent lanes, each holding one coefficient, and its
// multiplications shuffle between them: both lanes take the same scalar, and points cross
// memory as `mem_t`, whose layout is the whole point's (the lane picks its half).
template<class B>
__global__ void zkp_fixed_base(typename B::mem_t* out, const scalar_t* scalars,
                               const typename B::affine_t::mem_t* table, size_t n)
{
    const uint32_t degree = B::degree;
    const uint32_t rows = ZKP_FB_ROWS(scalar_t::nbits);
    const size_t stride = (size_t)gridDim.x * blockDim.x / degree;
    for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / degree; i < n;
         i += stride) {
        scalar_t s = scalars[i];
        s.from();
        B acc;
        acc.inf();
        for (uint32_t w = 0; w < rows; w++) {
            uint32_t d = (s[w / 4] >> ((w % 4) * 8)) & (ZKP_FB_ROW - 1);
            if (d != 0) {
                typename B::affine_t p = table[w * ZKP_FB_ROW + d];
                acc.add(p);
            }
        }
        out[i] = acc;
    }
}

// The affine form (X/ZZ, Y/ZZZ) of n xyzz points over F, the identity as (0, 0): the key
// file's layout of a point (Montgomery limbs, as snarkjs writes them), so the host copies
// the bytes as they are. One inversion a point: sppark's reciprocal pairs adjacent lanes
// and synchronizes the whole warp, so every thread runs every round, past n on a dummy.
template<class F>
__global__ void zkp_xyzz_affine(zkp_xy_mem<F>* out, const zkp_xyzz_mem<F>* in, size_t n)
{
    const uint32_t degree = F::degree;
    const size_t lane = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / degree;
    const size_t stride = (size_t)gridDim.x * blockDim.x / degree;
    for (size_t first = 0; first < n; first += stride) {
        const size_t i = first + lane;
        const bool live = i < n;
        F X, Y, ZZZ, ZZ;
        if (live) {
            X = in[i].X; Y = in[i].Y; ZZZ = in[i].ZZZ; ZZ = in[i].ZZ;
        } else {
            X = Y = ZZZ = ZZ = F::one();
        }
        // The identity has ZZZ = 0, which the inversion must not see.
        const bool inf = ZZZ.is_zero();
        if (inf)
            ZZZ = F::one();
        F y = ZZZ.reciprocal();     // 1/Z³
        F x = y * ZZ;               // 1/Z
        x.sqr();                    // 1/Z²
        x *= X;
        y *= Y;
        if (inf) {
            x.zero();
            y.zero();
        }
        if (live) {
            out[i].X = x;
            out[i].Y = y;
        }
    }
}

// out[i] = scalars[i]·G, affine in file layout (zkp_xyzz_affine), for i < n, through `xyzz`
// (room for n xyzz points); all in device memory on `dev`: `table` holds ZKP_FB_ROWS rows
// of ZKP_FB_ROW affine points (entry d of row w: d·2^(8w)·G, the identity as (0, 0)).
// Returns when they are there.
template<class B, class F>
static RustError zkp_fixed_base_run(typename B::affine_t::mem_t* out, typename B::mem_t* xyzz,
                                    const scalar_t* scalars,
                                    const typename B::affine_t::mem_t* table, size_t n,
                                    int dev)
{
    static_assert(sizeof(zkp_xyzz_mem<F>) == sizeof(typename B::mem_t), "xyzz layout");
    static_assert(sizeof(zkp_xy_mem<F>) == sizeof(typename B::affine_t::mem_t),
                  "affine layout");
    try {
        const gpu_t& gpu = select_gpu(dev);
        if (n == 0)
            return RustError{cudaSuccess};
        // Threads a multiple of the warp (the inversion's whole warp) and of the degree (a
        // scalar's lanes share a warp).
        uint32_t threads = 128;
        uint32_t blocks = (uint32_t)std::min<size_t>((n * B::degree + threads - 1) / threads,
                                                     (size_t)gpu.sm_count() * 32);
        zkp_fixed_base<B><<<blocks, threads, 0, gpu>>>(xyzz, scalars, table, n);
        CUDA_OK(cudaGetLastError());
        zkp_xyzz_affine<F><<<blocks, threads, 0, gpu>>>(
            reinterpret_cast<zkp_xy_mem<F>*>(out),
            reinterpret_cast<const zkp_xyzz_mem<F>*>(xyzz), n);
        CUDA_OK(cudaGetLastError());
        gpu.sync();
    } catch (const cuda_error& e) {
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}

extern "C" RustError ZKP_FN(zkp_g1_fixed_base_, CURVE)(affine_t::mem_t* out,
                                                      bucket_t::mem_t* xyzz,
                                                      const scalar_t* scalars,
                                                      const affine_t::mem_t* table,
                                                      size_t n, int dev)
{   return zkp_fixed_base_run<bucket_t, fp_t>(out, xyzz, scalars, table, n, dev);   }

extern "C" RustError ZKP_FN(zkp_g2_fixed_base_, CURVE)(affine_fp2_t::mem_t* out,
                                                      bucket_fp2_t::mem_t* xyzz,
                                                      const scalar_t* scalars,
                                                      const affine_fp2_t::mem_t* table,
                                                      size_t n, int dev)
{   return zkp_fixed_base_run<bucket_fp2_t, fp2_t>(out, xyzz, scalars, table, n, dev);   }
