// Not part of the build: a standalone probe, compiled with
//   nvcc -gencode arch=compute_90,code=sm_90 -cudart static -o coop_probe coop_probe.cu
// and run on the GPU machine while bringing up sppark (see docs/experiments/004).
// Probe: does a cooperative launch with grid.sync() complete on this GPU/VM?
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void plain(int* x) { atomicAdd(x, 1); }
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
    printf("coop: %s, count %d (expect %d)\n", cudaGetErrorString(e), h, sms * 256 + 1000000);
}
