// racegate buggy variant: tiled matmul without the barrier after the compute step.
//
// Wrong line: the one marked BUG. Without the second __syncthreads(), a fast warp starts
// the next iteration and overwrites As/Bs while slower warps of the block are still reading
// the current tile (write-after-read, a WAR hazard). On the H200 this showed only at large
// sizes without jitter (0/200 at N=256, 200/200 at N=512) and at every size with per-warp
// jitter after barriers: stress needs jitter or big sizes; racecheck sees it at any size.
//
//@ exercise: matmul
//@ breaks: kernels/matmul_tiled.cu
//@ bug: missing barrier, write-after-read (WAR) on shared memory
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
        __syncthreads();  // the whole tile is loaded before anyone reads it
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        // BUG: the __syncthreads() that kept the next load from overwriting the tile was here
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
