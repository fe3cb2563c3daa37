// Fixed-base multiplications for `zkpipe setup --dev --backend cuda`: out[i] = s[i]·G for
// one generator G, from a window table of G made on the host. sppark has MSMs, not many
// independent multiplications of one base, hence this kernel.
#pragma once

// Bits per window of the table: row w holds d·2^(8w)·G for every byte value d, so each
// multiplication is at most one mixed addition per byte of its scalar.
#define ZKP_FB_WBITS 8
#define ZKP_FB_ROW (1u << ZKP_FB_WBITS)

// Rows of the table for scalars of `nbits` bits.
#define ZKP_FB_ROWS(nbits) (((nbits) + ZKP_FB_WBITS - 1) / ZKP_FB_WBITS)

// One scalar per `B::degree` threads (Montgomery form, as arkworks holds it): the sum of
// its bytes' table entries, as an xyzz point (sppark's device-side point type, whose
// additions run on the device; the host makes them affine, in batches). Over Fp2 (G2)
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

// out[i] = scalars[i]·G (xyzz) for i < n, all three in device memory on `dev`: `table` holds
// ZKP_FB_ROWS rows of ZKP_FB_ROW affine points (entry d of row w: d·2^(8w)·G, the
// identity as (0, 0)). Returns when they are there.
template<class B>
static RustError zkp_fixed_base_run(typename B::mem_t* out, const scalar_t* scalars,
                                    const typename B::affine_t::mem_t* table, size_t n,
                                    int dev)
{
    try {
        const gpu_t& gpu = select_gpu(dev);
        if (n == 0)
            return RustError{cudaSuccess};
        // Threads a multiple of the degree, so a scalar's lanes share a warp.
        uint32_t threads = 128;
        uint32_t blocks = (uint32_t)std::min<size_t>((n * B::degree + threads - 1) / threads,
                                                     (size_t)gpu.sm_count() * 32);
        zkp_fixed_base<B><<<blocks, threads, 0, gpu>>>(out, scalars, table, n);
        CUDA_OK(cudaGetLastError());
        gpu.sync();
    } catch (const cuda_error& e) {
        return RustError{e.code(), e.what()};
    }
    return RustError{cudaSuccess};
}

extern "C" RustError ZKP_FN(zkp_g1_fixed_base_, CURVE)(bucket_t::mem_t* out,
                                                      const scalar_t* scalars,
                                                      const affine_t::mem_t* table,
                                                      size_t n, int dev)
{   return zkp_fixed_base_run<bucket_t>(out, scalars, table, n, dev);   }

extern "C" RustError ZKP_FN(zkp_g2_fixed_base_, CURVE)(bucket_fp2_t::mem_t* out,
                                                      const scalar_t* scalars,
                                                      const affine_fp2_t::mem_t* table,
                                                      size_t n, int dev)
{   return zkp_fixed_base_run<bucket_fp2_t>(out, scalars, table, n, dev);   }
