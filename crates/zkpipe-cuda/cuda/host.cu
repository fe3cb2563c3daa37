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

// Free and total memory of device `dev`, in bytes; returns the CUDA error code.
extern "C" int zkp_device_memory(int dev, size_t* free_bytes, size_t* total_bytes)
{
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess)
        return (int)e;
    return (int)cudaMemGetInfo(free_bytes, total_bytes);
}

// Device `dev`'s name into buf (NUL-terminated); returns the CUDA error code.
extern "C" int zkp_device_name(int dev, char* buf, size_t len)
{
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, dev);
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

// Device memory on `dev` for buffers zkpipe owns (the witness scalars of a proof).
extern "C" int zkp_device_alloc(int dev, void** out, size_t bytes)
{
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess)
        return (int)e;
    return (int)cudaMalloc(out, bytes);
}

extern "C" void zkp_device_free(int dev, void* p)
{
    if (cudaSetDevice(dev) == cudaSuccess)
        cudaFree(p);
}

// Host → device copy on `dev` (from pinned memory for full speed), returning when it is
// done. On a non-blocking stream of its own, waited for with a stream synchronize: with a
// plain cudaMemcpy (the legacy stream) the copies a streamed key's walk makes while
// sppark's MSMs run from another thread overlapped them far less (lab 043i, BN254 2^24
// under 4 GiB: the walk 734 ms against the previous build's 664; this way, 636 against
// 655).
extern "C" int zkp_device_upload(int dev, void* dst, const void* src, size_t bytes)
{
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess)
        return (int)e;
    cudaStream_t st;
    e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    if (e != cudaSuccess)
        return (int)e;
    e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st);
    cudaError_t synced = cudaStreamSynchronize(st);
    cudaStreamDestroy(st);
    return (int)(e != cudaSuccess ? e : synced);
}
