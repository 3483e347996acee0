// Common mistake: no barrier between filling the tile and reading it in the other direction.
// A thread reads elements other warps have not written yet: racecheck reports the hazard.
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols)
{
    __shared__ float t[32][33];
    int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8)
        if (bx + threadIdx.x < cols && by + j < rows)
            t[j][threadIdx.x] = in[(by + j) * cols + bx + threadIdx.x];
    // the missing __syncthreads()
    for (int j = threadIdx.y; j < 32; j += 8)
        if (by + threadIdx.x < rows && bx + j < cols)
            out[(bx + j) * rows + by + threadIdx.x] = t[threadIdx.x][j];
}
