// The smallest CUDA program that opens a context, launches one kernel that uses shared
// memory and a barrier, copies back and exits: run 30 call A times many of them at once, bare
// and under compute-sanitizer, to see what one GPU process costs beside others.
#include <cstdio>
__global__ void k(int* out)
{
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
}
int main()
{
    int* d = nullptr;
    if (cudaMalloc(&d, 64 * sizeof(int)) != cudaSuccess) return 2;
    k<<<1, 64>>>(d);
    int h[64];
    if (cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return 3;
    cudaFree(d);
    return h[0] == 63 ? 0 : 1;
}
