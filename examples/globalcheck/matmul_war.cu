// A tiled matrix multiply with the barrier after the compute step missing (the write-after-read
// race of buggy_variants/matmul_tiled/no_sync_after_compute.cu), built by nvcc as a team would
// build its own test program. It checks its result against the CPU and exits 1 when wrong.
// Without schedule perturbation the race rarely shows at N=256; globalcheck's jitter (a per-warp
// delay after every barrier, injected into this binary) is meant to expose it every time.
// Build: nvcc -arch=sm_90 -lineinfo -o matmul_war matmul_war.cu     Usage: ./matmul_war [N]
#include <cstdio>
#include <cstdlib>
#include <vector>

#define TILE 16

__global__ void matmul_war(const float* A, const float* B, float* C, int n)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n / TILE; ++t) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t * TILE + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        // BUG: no __syncthreads() here: a fast warp overwrites the tiles of step t+1 while a
        // slow warp still reads those of step t.
    }
    C[row * n + col] = acc;
}

int main(int argc, char** argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 256;
    std::vector<float> a(n * n), b(n * n), c(n * n);
    srand(7);
    for (auto& x : a) x = (float)(rand() % 5);
    for (auto& x : b) x = (float)(rand() % 5);
    float *da, *db, *dc;
    cudaMalloc(&da, n * n * sizeof(float));
    cudaMalloc(&db, n * n * sizeof(float));
    cudaMalloc(&dc, n * n * sizeof(float));
    cudaMemcpy(da, a.data(), n * n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), n * n * sizeof(float), cudaMemcpyHostToDevice);
    matmul_war<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(da, db, dc, n);
    cudaMemcpy(c.data(), dc, n * n * sizeof(float), cudaMemcpyDeviceToHost);
    long wrong = 0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0;
            for (int k = 0; k < n; ++k)
                s += a[i * n + k] * b[k * n + j];
            wrong += s != c[i * n + j];
        }
    printf("matmul_war n=%d: %ld wrong\n", n, wrong);
    return wrong ? 1 : 0;
}
