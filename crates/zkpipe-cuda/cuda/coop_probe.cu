// Not part of the build: a standalone probe, compiled with
//   nvcc -gencode arch=compute_90,code=sm_90 -cudart static -o coop_probe coop_probe.cu
// and run on the GPU machine while bringing up sppark (see lab/experiments/004-gpu-msm-bringup.md).
// Probe: does a cooperative launch with grid.sync() complete on this GPU/VM?
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void plain(int* x) { atomicAdd(x, 1); }
// The launch shape of sppark's `sort`: 2-D grid, 1024 threads, 32 KB dynamic shared memory.
__global__ void __launch_bounds__(1024) coop2d(int* x) {
    extern __shared__ unsigned smem[];
    smem[threadIdx.x] = threadIdx.x;
    atomicAdd(x, 1);
    cg::this_grid().sync();
    __syncthreads();
    cg::this_grid().sync();
    if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) atomicAdd(x, (int)smem[1] + 1000000);
}
__global__ void coop(int* x) { atomicAdd(x, 1); cg::this_grid().sync(); if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(x, 1000000); }
int main() {
    int* d; int h = 0, sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    int coopOk = 0; cudaDeviceGetAttribute(&coopOk, cudaDevAttrCooperativeLaunch, 0);
    printf("SMs %d, cooperative launch attribute %d\n", sms, coopOk); fflush(stdout);
    cudaMalloc(&d, sizeof(int)); cudaMemset(d, 0, sizeof(int));
    plain<<<sms, 256>>>(d); cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost); printf("plain: %s, count %d\n", cudaGetErrorString(e), h); fflush(stdout);
    cudaMemset(d, 0, sizeof(int)); void* args[] = {&d};
    e = cudaLaunchCooperativeKernel((void*)coop, sms, 256, args, 0, 0); printf("coop launch: %s\n", cudaGetErrorString(e)); fflush(stdout);
    e = cudaDeviceSynchronize(); cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
    printf("coop: %s, count %d (expect %d)\n", cudaGetErrorString(e), h, sms * 256 + 1000000); fflush(stdout);
    unsigned g = sms / 3; while (g & (g - 1)) g -= (g & (0 - g));   // sppark's grid_size
    cudaMemset(d, 0, sizeof(int));
    e = cudaLaunchCooperativeKernel((void*)coop2d, dim3(g, 2), dim3(1024), args, 4u << 13, 0);
    printf("coop2d launch (%u x 2 blocks of 1024, 32 KB shared): %s\n", g, cudaGetErrorString(e)); fflush(stdout);
    e = cudaDeviceSynchronize(); cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
    printf("coop2d: %s, count %d (expect %d)\n", cudaGetErrorString(e), h, (int)(g * 2 * 1024) + 1000001);
}
