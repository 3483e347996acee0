// racegate: a 3-point stencil through a shared-memory tile with a halo.
//
// Computes out[i] = in[i-1] + in[i] + in[i+1] for i < n (0 outside 0..n), like stencil3, but
// each block first stages its inputs in shared memory. Launch: block (B <= 1024), grid
// (ceil(n / B)). Thread t of the block loads tile[t + 1]; thread 0 also loads the left halo
// tile[0] and the last thread the right halo tile[B + 1]. Edges: threads past n still write their
// tile element (a 0), because the last thread with data reads its right neighbour from the tile:
// every element any thread reads was written before the barrier.
//
//@ exercise: stencil
//@ entry: stencil3_tiled

#define MAX_BLOCK 1024

extern "C" __global__ void stencil3_tiled(const int* in, int* out, int n)
{
    __shared__ int tile[MAX_BLOCK + 2];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.x + 1;
    tile[t] = i < n ? in[i] : 0;
    if (threadIdx.x == 0)
        tile[0] = (i > 0 && i - 1 < n) ? in[i - 1] : 0;
    if (threadIdx.x == blockDim.x - 1)
        tile[t + 1] = i + 1 < n ? in[i + 1] : 0;
    __syncthreads();  // the tile and both halos are loaded before anyone reads them
    if (i < n)
        out[i] = tile[t - 1] + tile[t] + tile[t + 1];
}
