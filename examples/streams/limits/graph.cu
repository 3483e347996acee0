// A CUDA graph: a kernel and a copy captured from a stream, then the graph launched twice. The
// callbacks see the graph launch but not the order of its nodes (streamcheck does not model
// graphs), so streamcheck must say inconclusive ("a CUDA graph was launched"), never clean.
// The program itself is correct (each graph launch is synchronized before the host reads).
//
// streamcheck: inconclusive
// why: CUDA graph
// Build: nvcc -arch=sm_90 -g -lineinfo -o graph graph.cu
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 2; } } while (0)

__global__ void scale(float* d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        d[i] = d[i] * 2.0f + 1.0f;
}

int main()
{
    const int n = 1 << 16;
    float *d, *h;
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    CHECK(cudaMemset(d, 0, n * sizeof(float)));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaDeviceSynchronize());

    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    scale<<<n / 256, 256, 0, s>>>(d, n);
    CHECK(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int k = 0; k < 2; k++) {
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
    }
    printf("h[1] %f (want 3.0)\n", h[1]);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(d));
    return 0;
}
