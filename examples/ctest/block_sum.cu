// The correct test of the CTest example: each block sums 256 ones in shared memory with a tree
// reduction and a barrier after every step; the program prints the total of all blocks.
// Usage: block_sum BLOCKS (prints `sum: N expected: N`, N = BLOCKS * 256).
#include <cstdio>
#include <cstdlib>

__global__ void block_sum(int* out)
{
    __shared__ int s[256];
    int tid = threadIdx.x;
    s[tid] = 1;
    __syncthreads();
    for (int half = 128; half > 0; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];
        __syncthreads();
    }
    if (tid == 0)
        atomicAdd(out, s[0]);
}

int main(int argc, char** argv)
{
    int blocks = argc > 1 ? atoi(argv[1]) : 64;
    int* out;
    cudaMalloc(&out, sizeof(int));
    cudaMemset(out, 0, sizeof(int));
    block_sum<<<blocks, 256>>>(out);
    int h = 0;
    cudaMemcpy(&h, out, sizeof(int), cudaMemcpyDeviceToHost);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        printf("CUDA error: %s\n", cudaGetErrorString(e));
        return 1;
    }
    printf("sum: %d expected: %d\n", h, blocks * 256);
    cudaFree(out);
    return 0;
}
