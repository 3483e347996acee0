// A kernel on stream a writes d; an async copy on stream b reads d back with nothing ordering
// the two: the copy may read d before, during or after the kernel. streamcheck must report a
// stream-race (Error) between the scale<<<>>> launch and the cudaMemcpyAsync, both lines of
// this file. Its twin kernel_copy_wait.cu records an event and waits for it.
//
// streamcheck: race
// key: stream-race
// Build: nvcc -arch=sm_90 -g -lineinfo -o kernel_copy_nowait kernel_copy_nowait.cu
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 2; } } while (0)

__global__ void scale(float* d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 64 && i < n; k++)
        d[i] = d[i] * 1.0001f + 1.0f;
}

__global__ void shift(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] + 1.0f;
}

int main()
{
    const int n = 1 << 20;
    float *d, *out, *h;
    cudaStream_t a, b;
    cudaEvent_t ev;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    CHECK(cudaMemset(d, 0, n * sizeof(float)));
    for (int i = 0; i < n; i++)
        h[i] = 1.0f;
    CHECK(cudaStreamCreate(&a));
    CHECK(cudaStreamCreate(&b));
    CHECK(cudaEventCreate(&ev));
    CHECK(cudaDeviceSynchronize());

    scale<<<n / 256, 256, 0, a>>>(d, n);
    CHECK(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, b));  // BUG: no wait on a

    CHECK(cudaDeviceSynchronize());
    printf("h[1] %f\n", h[1]);
    CHECK(cudaEventDestroy(ev));
    CHECK(cudaStreamDestroy(a));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(out));
    CHECK(cudaFree(d));
    return 0;
}
