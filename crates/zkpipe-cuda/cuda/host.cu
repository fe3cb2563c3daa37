// Curve-independent CUDA runtime calls: devices, memory, pinned host buffers.
#include <cuda_runtime.h>
#include <cstddef>

extern "C" int zkp_device_count()
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    return n;
}

// Free and total memory of device 0, in bytes; returns the CUDA error code.
extern "C" int zkp_device_memory(size_t* free_bytes, size_t* total_bytes)
{
    return (int)cudaMemGetInfo(free_bytes, total_bytes);
}

// The device's name into buf (NUL-terminated); returns the CUDA error code.
extern "C" int zkp_device_name(char* buf, size_t len)
{
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, 0);
    if (e != cudaSuccess)
        return (int)e;
    size_t i = 0;
    for (; i + 1 < len && prop.name[i]; i++)
        buf[i] = prop.name[i];
    if (len)
        buf[i] = 0;
    return 0;
}

// Page-locked host memory visible to every CUDA context (portable), not write-combined:
// the host both writes and reads these staging buffers.
extern "C" int zkp_pinned_alloc(void** out, size_t bytes)
{
    return (int)cudaHostAlloc(out, bytes, cudaHostAllocPortable);
}

extern "C" void zkp_pinned_free(void* p)
{
    cudaFreeHost(p);
}
