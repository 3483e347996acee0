// A correct submission: a padded 33-column tile, one barrier between the load and the store.
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols)
{
    __shared__ float t[32][33];
    int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8)
        if (bx + threadIdx.x < cols && by + j < rows)
            t[j][threadIdx.x] = in[(by + j) * cols + bx + threadIdx.x];
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8)
        if (by + threadIdx.x < rows && bx + j < cols)
            out[(bx + j) * rows + by + threadIdx.x] = t[threadIdx.x][j];
}
