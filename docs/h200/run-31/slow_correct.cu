// A correct program that takes about 30 s: it waits 28 s on the host (as a program that reads
// or prepares its input would), then sums 2^20 integers on the GPU with one atomic per block
// and checks the sum. Gated with racegate's defaults, it must be judged clean: its deadlines
// come from measuring it, not from a fixed 10 s.
#include <cstdio>
#include <unistd.h>

__global__ void block_sums(const int* in, unsigned long long* total, int n) {
    __shared__ int s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(total, (unsigned long long)s[0]);
}

int main() {
    const int n = 1 << 20;
    sleep(28);
    int* h = new int[n];
    unsigned long long want = 0;
    for (int i = 0; i < n; i++) { h[i] = i % 7; want += h[i]; }
    int* d; unsigned long long* t;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&t, sizeof(unsigned long long));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemset(t, 0, sizeof(unsigned long long));
    block_sums<<<n / 256, 256>>>(d, t, n);
    unsigned long long got = 0;
    cudaMemcpy(&got, t, sizeof(got), cudaMemcpyDeviceToHost);
    printf("sum %llu, expected %llu: %s\n", got, want, got == want ? "PASS" : "FAIL");
    cudaFree(d); cudaFree(t); delete[] h;
    return got == want ? 0 : 1;
}
