// The chained single-launch scan of kernels/chained_scan.cu with the spin-wait reading the flag
// through a plain pointer instead of a volatile one.
//
// Wrong line: the one marked BUG. Nothing in the loop `while (flag[tile - 1] == 0) {}` writes
// memory, so the compiler may load the flag once and spin on the register. NVRTC 13.0 for
// compute_90 does exactly that (checked in the PTX): one ld.global of the flag, and if it is 0
// a `bra.uni` to itself forever. (C++ would also allow dropping the side-effect-free loop
// altogether, which would give wrong results instead.) So any tile whose last thread reaches
// the wait before the previous tile has published its prefix hangs its block, and the launch
// never ends. Tile 0 never waits, so n <= 256 passes; with more tiles the blocks start
// together and scan at the same speed, so some tile is expected to get there first (not yet
// run on a GPU).
// Must be caught by: stress, as a hang past the trial's deadline (racegate's watchdog kills the
// trial and reports a timeout), at any n > 256; if an optimizer dropped the loop instead, as
// wrong results against the reference oracle (reference/scan_ref.cu). Sanitizers are no help:
// under them a hang is only a deadline (inconclusive), and racecheck does not look at global
// memory.
//
// Launch: block 256, grid ceil_div(n, 256), as the correct kernel. Built with -I include.
#include "block_scan.cuh"

#define TILE 256

extern "C" __global__ void chained_scan_spin(
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
            int* flag = tile_flag;  // BUG: not volatile: the spin below may never reload the flag
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
