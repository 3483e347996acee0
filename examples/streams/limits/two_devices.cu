// Two devices: a kernel on each, and a peer copy from device 0 to device 1. streamcheck models
// one context; kernels in more than one context (and copies between them) make it say
// inconclusive, never clean. With fewer than two devices the program prints "skipped: ..." and
// exits 0 having done no CUDA work (ci/streams-check then reports it skipped, not judged).
//
// streamcheck: inconclusive
// why: several devices
// may-skip: fewer than two devices
// Build: nvcc -arch=sm_90 -g -lineinfo -o two_devices two_devices.cu
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 2; } } while (0)

__global__ void fill(float* d, int n, float v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        d[i] = v;
}

int main()
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
        printf("skipped: %d device(s), this program needs two\n", count);
        return 0;
    }
    const int n = 1 << 16;
    float *d0, *d1, *h;
    cudaStream_t s0, s1;
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&d0, n * sizeof(float)));
    CHECK(cudaStreamCreate(&s0));
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc(&d1, n * sizeof(float)));
    CHECK(cudaStreamCreate(&s1));

    CHECK(cudaSetDevice(0));
    fill<<<n / 256, 256, 0, s0>>>(d0, n, 5.0f);
    CHECK(cudaStreamSynchronize(s0));
    CHECK(cudaSetDevice(1));
    fill<<<n / 256, 256, 0, s1>>>(d1, n, 1.0f);
    CHECK(cudaMemcpyPeerAsync(d1, 1, d0, 0, n * sizeof(float), s1));
    CHECK(cudaMemcpyAsync(h, d1, n * sizeof(float), cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamSynchronize(s1));
    printf("h[1] %f (want 5.0)\n", h[1]);
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaFree(d1));
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamDestroy(s0));
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(d0));
    return 0;
}
