// racegate buggy variant: tiled matmul without the bounds check on the store.
//
// Wrong line: the one marked BUG. When M or N is not a multiple of TILE, the threads of
// the edge blocks that lie outside C still store their (zero) result: a column past N
// lands in the next row of C, a row past M lands past the end of the allocation.
// memcheck reports the out-of-bounds global write; stress sees overwritten elements at edge
// sizes (49/100 trials on the H200); sizes that are multiples of TILE hide it completely.
// A column past N also lands on an element that another block writes, so globalcheck may see a
// write-write race between blocks there (H200 run 13 flagged it): `may`, since the bug is the
// bound, not the synchronization.
//
//@ exercise: matmul
//@ breaks: kernels/matmul_tiled.cu
//@ bug: out-of-bounds global write at edge sizes
//@ expect: stress=flag stress-nojitter=flag memcheck=flag globalcheck=may
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
        __syncthreads();  // everyone has finished reading before the next load overwrites it
    }
    C[row * N + col] = acc;  // BUG: no `if (row < M && col < N)`: edge threads write outside C
}

extern "C" __global__ void matmul_tiled16(const float* A, const float* B, float* C, int M, int N, int K)
{
    matmul_tiled<16>(A, B, C, M, N, K);
}

extern "C" __global__ void matmul_tiled32(const float* A, const float* B, float* C, int M, int N, int K)
{
    matmul_tiled<32>(A, B, C, M, N, K);
}
