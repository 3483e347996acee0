// A race that gives the same wrong answer every run: output variance cannot see it, a golden
// output can (`racegate gate --expect program/counter.expected -- ./counter`).
// Each block counts its 256 threads in a shared counter and adds the count to a global total.
// Planted bug (line 18): the shared counter is updated without an atomic, as a read, a barrier
// and a write; every thread reads 0 before any writes, so every block counts 1 and the program
// prints `counter: 200 expected: 51200` on every run. The fix is `atomicAdd(&count, 1)`.
// Build: nvcc -arch=sm_90 -lineinfo -o counter program/counter.cu
#include <cstdio>

__global__ void count_threads(int* total)
{
    __shared__ int count;
    if (threadIdx.x == 0)
        count = 0;
    __syncthreads();
    int seen = count;
    __syncthreads();
    count = seen + 1;  // planted bug: not atomic; every thread writes 0 + 1
    __syncthreads();
    if (threadIdx.x == 0)
        atomicAdd(total, count);
}

int main()
{
    const int blocks = 200, threads = 256;
    int* total;
    cudaMalloc(&total, sizeof(int));
    cudaMemset(total, 0, sizeof(int));
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start);
    count_threads<<<blocks, threads>>>(total);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    int h = 0;
    cudaMemcpy(&h, total, sizeof(int), cudaMemcpyDeviceToHost);
    // The timing line differs every run; racegate's built-in duration mask hides it.
    printf("counter: %d expected: %d\n", h, blocks * threads);
    printf("kernel time: %.3f ms\n", ms);
    cudaFree(total);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
