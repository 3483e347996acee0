// racegate: naive matrix multiply, one thread per output element.
//
// Computes C = A * B for row-major A (M x K), B (K x N) and C (M x N), all float.
// Launch: block (16, 16); grid (ceil(N / 16), ceil(M / 16)); thread (x, y) owns C[y][x].
// Every element of A and B is read from global memory K times: the baseline that the
// shared-memory tiled kernel (matmul_tiled.cu) improves on. No shared memory, no barrier.
//
//@ exercise: matmul
//@ entry: matmul_naive tile=16

extern "C" __global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;  // no barrier below, so an early exit is safe here

    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
