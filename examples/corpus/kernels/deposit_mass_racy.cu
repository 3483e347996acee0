// The particle deposit of kernels/deposit_mass.cu without the barrier between the shared-memory
// deposits and the flush to global memory: a warp that has finished its particles flushes
// cells other warps of its block are still adding to.
//
// Wrong line: the one marked BUG, between the deposit loop and the flush loop. The flush reads
// local[c] while other warps may still atomicAdd into it, so their mass never reaches
// cell_mass (a read racing atomic writes, in shared memory). The atomics themselves are fine.
// Must be caught by: racecheck (the flush's read of local[c] against the shared atomicAdd), and
// stress with the reference oracle (reference/deposit_ref.cu): some cells come out light.
// Stress sees it most when the block's warps finish their particles at different times, which
// schedule jitter and large n (several particles per thread) provoke.
//
// Launch: block 256, grid min(ceil_div(n, 256), 120), as the correct kernel.
// Built with -DNCELLS=64.
#ifndef NCELLS
#define NCELLS 64
#endif

extern "C" __global__ void deposit_mass_racy(
    const int* cell, const float* mass, float* cell_mass, int n)
{
    __shared__ float local[NCELLS];
    for (int c = threadIdx.x; c < NCELLS; c += blockDim.x)
        local[c] = 0.0f;
    __syncthreads();  // the block's cells are cleared before anyone deposits

    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[cell[i]], mass[i]);
    // BUG: no __syncthreads(): the flush may read a cell before other warps' deposits

    for (int c = threadIdx.x; c < NCELLS; c += blockDim.x)
        if (local[c] != 0.0f)
            atomicAdd(&cell_mass[c], local[c]);
}
