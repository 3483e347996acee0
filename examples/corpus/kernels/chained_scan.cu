// Inclusive prefix sum of an int array in ONE launch, by chaining the blocks: each block scans
// a tile of 256 elements in shared memory (include/block_scan.cuh), then its last thread waits
// until the previous tile has published its inclusive prefix (a spin on tile_flag), adds its
// own total, publishes the result for the next tile, and hands the previous prefix to its block.
//
// Deadlock freedom. A block must never wait for a block that may not be running. Tiles are
// therefore not numbered by blockIdx.x but by a ticket each block takes from *next_tile when
// it starts: the owner of tile t-1 took its ticket earlier, so it is already running, and it
// waits only on tile t-2, and so on down to tile 0, which waits on nobody. The chain ends, with
// any grid size, even when the grid is far larger than what fits on the GPU at once. (With
// tile = blockIdx.x, block b would wait on block b-1, which the hardware need not have
// scheduled: such a kernel is only safe with the grid capped to co-resident blocks.)
// The flag is read through a volatile pointer, so every spin iteration loads it again from
// memory; the fences order prefix and flag (publisher) and flag and prefix (reader).
//
// Launch: block 256, grid ceil_div(n, 256). tile_flag (one int per tile) and *next_tile are 0
// before the launch; tile_prefix (one int per tile) is scratch. Built with -I include.
#include "block_scan.cuh"

#define TILE 256

extern "C" __global__ void chained_scan(
    const int* in, int* out, int* tile_prefix, int* tile_flag, unsigned* next_tile, int n)
{
    __shared__ int s[TILE];
    __shared__ unsigned tile;
    __shared__ int carry_in;

    if (threadIdx.x == 0)
        tile = atomicAdd(next_tile, 1u);  // tiles in the order blocks start
    __syncthreads();

    const int i = tile * TILE + threadIdx.x;
    int inclusive = block_inclusive_scan(i < n ? in[i] : 0, s);

    if (threadIdx.x == TILE - 1) {
        int before = 0;
        if (tile > 0) {
            volatile int* flag = tile_flag;
            while (flag[tile - 1] == 0) {
            }  // wait for the previous tile's prefix
            __threadfence();
            before = ((volatile int*)tile_prefix)[tile - 1];
        }
        tile_prefix[tile] = before + inclusive;  // this thread's inclusive is the tile's total
        __threadfence();  // the prefix is visible before the flag
        atomicExch(&tile_flag[tile], 1);
        carry_in = before;
    }
    __syncthreads();

    if (i < n)
        out[i] = inclusive + carry_in;
}
