// racegate buggy variant: tiled matmul without the barrier after the tile load.
//
// Wrong line: the one marked BUG. Without the first __syncthreads(), a thread starts the
// dot product while other threads of its block are still writing their elements of As and
// Bs: it reads elements of the tile that are not loaded yet (read-before-write, a RAW
// hazard on shared memory). Wrong results in almost every trial at every size; racecheck
// sees the hazard directly.
//
//@ exercise: matmul
//@ breaks: kernels/matmul_tiled.cu
//@ bug: missing barrier, read-before-write (RAW) on shared memory
//@ expect: stress=flag stress-nojitter=flag racecheck=flag sharedcheck=may
//@ entry: matmul_tiled16 tile=16

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
        // BUG: the __syncthreads() that made the tile complete before it is read was here
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
