// Deposits particle masses onto grid cells: cell_mass[cell[i]] += mass[i] for every particle i.
// Each block first accumulates into its own copy of the NCELLS cells in shared memory (float
// atomicAdd on shared memory, cheap), then adds its copy into the global cells, one float
// atomicAdd per non-empty cell. cell_mass is the caller's buffer, zeroed before the launch and
// accumulated into. Float atomics add in a schedule-dependent order; the tests use small
// integer masses, whose sums are exact in any order, so the result is still bit-exact.
// NCELLS comes from the build (-DNCELLS=64); every cell[i] is in 0 .. NCELLS-1.
//
// Launch: block 256, grid min(ceil_div(n, 256), 120): a grid-stride loop, so each thread
// deposits several particles when n is large.
#ifndef NCELLS
#define NCELLS 64
#endif

extern "C" __global__ void deposit_mass(
    const int* cell, const float* mass, float* cell_mass, int n)
{
    __shared__ float local[NCELLS];
    for (int c = threadIdx.x; c < NCELLS; c += blockDim.x)
        local[c] = 0.0f;
    __syncthreads();  // the block's cells are cleared before anyone deposits

    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[cell[i]], mass[i]);
    __syncthreads();  // every particle of this block is in `local` before it is flushed

    for (int c = threadIdx.x; c < NCELLS; c += blockDim.x)
        if (local[c] != 0.0f)
            atomicAdd(&cell_mass[c], local[c]);
}
