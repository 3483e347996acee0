// racegate: shared-memory tiled matrix multiply (TILE = 16 and TILE = 32).
//
// Computes C = A * B for row-major A (M x K), B (K x N) and C (M x N), all float.
// Launch: block (TILE, TILE); grid (ceil(N / TILE), ceil(M / TILE)); thread (x, y) owns C[y][x].
// Each block walks the K dimension one TILE x TILE tile at a time: every thread loads one
// element of A and one of B into shared memory, the block waits at a barrier, then every
// thread reads a whole row of As and a whole column of Bs. Each global element is read
// K / TILE times instead of K times.
//
// Edges: sizes need not be multiples of TILE. Out-of-range loads become 0 (they add nothing
// to the dot product), and no thread leaves early: every thread reaches every barrier, and
// only the final store is guarded.
//
//@ exercise: matmul
//@ entry: matmul_tiled16 tile=16
//@ entry: matmul_tiled32 tile=32

template <int TILE>
__device__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;

    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int a_col = t * TILE + tx;
        int b_row = t * TILE + ty;
        As[ty][tx] = (row < M && a_col < K) ? A[row * K + a_col] : 0.0f;
        Bs[ty][tx] = (b_row < K && col < N) ? B[b_row * N + col] : 0.0f;
        __syncthreads();  // the whole tile is loaded before anyone reads it
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // everyone has finished reading before the next load overwrites it
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}

extern "C" __global__ void matmul_tiled16(const float* A, const float* B, float* C, int M, int N, int K)
{
    matmul_tiled<16>(A, B, C, M, N, K);
}

extern "C" __global__ void matmul_tiled32(const float* A, const float* B, float* C, int M, int N, int K)
{
    matmul_tiled<32>(A, B, C, M, N, K);
}
