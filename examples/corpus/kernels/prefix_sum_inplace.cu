// In-place inclusive prefix sum of an int array by a single block: data[i] becomes
// data[0] + ... + data[i]. The block walks the array one tile of 256 elements at a time, scans
// the tile in shared memory (block_inclusive_scan from include/block_scan.cuh), adds the running
// total of the earlier tiles, and carries the tile's total into the next one. Every thread keeps
// its own copy of the carry, so all of them must read the tile total before the next tile's
// scan overwrites the shared array: hence the barrier at the bottom of the loop.
//
// Launch: grid 1, block 256 (the tile is the block). Built with -I include.
#include "block_scan.cuh"

#define TILE 256

extern "C" __global__ void prefix_sum_inplace(int* data, int n)
{
    __shared__ int s[TILE];
    int carry = 0;  // the sum of every earlier tile; the same in every thread
    for (int base = 0; base < n; base += TILE) {
        int i = base + threadIdx.x;
        int inclusive = block_inclusive_scan(i < n ? data[i] : 0, s);
        if (i < n)
            data[i] = inclusive + carry;
        carry += s[TILE - 1];
        __syncthreads();  // every thread has read s[TILE - 1] before the next tile writes s
    }
}
