// A small CUDA program with a planted race, standing in for a team's existing test binary
// (`racegate gate -- ./racy_program`). It sums 1..N per block in shared memory, but the
// barrier between the tree steps is missing, so racecheck reports a hazard and the printed
// sums may change from run to run. Build: nvcc -arch=sm_90 -lineinfo -o racy_program racy_program.cu
#include <cstdio>

__global__ void tree_sum(const int* in, int* out)
{
    __shared__ int s[256];
    int tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (int half = 128; half > 0; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];  // planted bug: no __syncthreads() after this step
    }
    if (tid == 0)
        out[blockIdx.x] = s[0];
}

int main()
{
    const int blocks = 64, n = blocks * 256;
    int *in, *out;
    cudaMalloc(&in, n * sizeof(int));
    cudaMalloc(&out, blocks * sizeof(int));
    int* h = new int[n];
    for (int i = 0; i < n; ++i)
        h[i] = i % 7;
    cudaMemcpy(in, h, n * sizeof(int), cudaMemcpyHostToDevice);
    tree_sum<<<blocks, 256>>>(in, out);
    int r[blocks];
    cudaMemcpy(r, out, sizeof(r), cudaMemcpyDeviceToHost);
    long total = 0;
    for (int b = 0; b < blocks; ++b)
        total += r[b];
    printf("total %ld (expected %ld)\n", total, (long)(n / 7) * 21 + (n % 7) * (n % 7 - 1) / 2);
    cudaFree(in);
    cudaFree(out);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
