// racegate buggy variant: tiled matmul with its barriers inside the bounds check.
//
// Wrong line: the one marked BUG. Threads whose output lies outside C skip the whole tile
// loop, so they neither load their share of the tile nor reach the barriers. At sizes that
// are multiples of TILE nothing changes; at edge sizes the in-range threads read tile
// elements nobody loaded (stale shared memory, poisoned by racegate). Stress sees wrong
// results at edge sizes (83/100 trials on the H200, with or without jitter, 0/100 at N=512).
// synccheck stays silent: the skipping threads never wait at a barrier, they simply finish.
//
//@ exercise: matmul
//@ breaks: kernels/matmul_tiled.cu
//@ bug: divergent barrier (barrier inside a bounds check)
//@ expect: stress=flag stress-nojitter=flag racecheck=may synccheck=may sharedcheck=may
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

    if (row < M && col < N)  // BUG: out-of-range threads skip the loads and the barriers
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
