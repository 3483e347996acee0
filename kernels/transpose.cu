// racegate: matrix transpose through a shared-memory tile, three shared-memory layouts.
//
// Computes out = transpose(in) for a row-major float matrix `in` of rows x cols; `out` is
// cols x rows. Launch: block (32, 8); grid (ceil(cols / 32), ceil(rows / 32)). Each block
// moves one 32 x 32 tile: every thread reads 4 elements along a row of `in` (coalesced),
// the block waits at a barrier, then every thread writes 4 elements along a row of `out`
// (coalesced again), reading the tile down a column.
//
// All three kernels are correct; they differ only in shared-memory bank conflicts:
//   transpose_naive_tile  tile[32][32]: a column read hits one bank 32 times (32-way conflict);
//   transpose_padded      tile[32][33]: one padding column shifts each row by a bank;
//   transpose_swizzled    tile[32 * 32] with column c of row r stored at c ^ r: no padding, and
//                         a row or a column of the tile still touches 32 distinct banks.
//
//@ exercise: transpose
//@ entry: transpose_naive_tile
//@ entry: transpose_padded
//@ entry: transpose_swizzled
//@ perf: transpose_naive_tile bank-conflicts=expected coalesced=yes
//@ perf: transpose_padded bank-conflicts=none coalesced=yes
//@ perf: transpose_swizzled bank-conflicts=none coalesced=yes

#define TILE 32
#define ROWS 8  // blockDim.y: each thread moves TILE / ROWS elements

extern "C" __global__ void transpose_naive_tile(const float* in, float* out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows)
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();  // the tile is complete before it is read in the other direction
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < rows && y + j < cols)
            out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void transpose_padded(const float* in, float* out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows)
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();  // the tile is complete before it is read in the other direction
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < rows && y + j < cols)
            out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Element (r, c) of the tile lives at r * TILE + (c ^ r).
__device__ __forceinline__ int swz(int r, int c) { return r * TILE + (c ^ r); }

extern "C" __global__ void transpose_swizzled(const float* in, float* out, int rows, int cols)
{
    __shared__ float tile[TILE * TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows)
            tile[swz(threadIdx.y + j, threadIdx.x)] = in[(y + j) * cols + x];
    __syncthreads();  // the tile is complete before it is read in the other direction
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < rows && y + j < cols)
            out[(y + j) * rows + x] = tile[swz(threadIdx.x, threadIdx.y + j)];
}
