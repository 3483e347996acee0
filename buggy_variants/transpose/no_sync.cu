// racegate buggy variant: transpose without the barrier between writing and reading the tile.
//
// Wrong line: the one marked BUG. A thread reads the tile down a column, i.e. elements
// other warps wrote. Without the barrier it may read them before they are written
// (read-before-write on shared memory). racecheck reports it; stress sees stale elements.
//
//@ exercise: transpose
//@ breaks: kernels/transpose.cu
//@ bug: missing barrier, read-before-write (RAW) on shared memory
//@ expect: stress=flag stress-nojitter=may racecheck=flag sharedcheck=may
//@ entry: transpose_padded

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
    // BUG: the __syncthreads() that completed the tile before the column reads was here
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
