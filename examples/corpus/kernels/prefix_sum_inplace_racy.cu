// The single-block in-place prefix sum of kernels/prefix_sum_inplace.cu without the barrier at
// the bottom of the tile loop: a fast warp starts scanning the next tile while a slow warp has
// not yet read the previous tile's total.
//
// Wrong line: the one marked BUG, at the bottom of the tile loop. Every thread reads
// s[TILE - 1] for its carry; without the barrier, thread 255 may already have stored its
// element of the next tile into s[255] (block_inclusive_scan's first line,
// include/block_scan.cuh), so a slow warp adds that element instead of the tile's total, and
// every later element it writes is off. A write-after-read hazard on shared memory, across
// loop iterations.
// Must be caught by: racecheck (the read `carry += s[TILE - 1]` against the write in
// block_scan.cuh). Stress with the reference oracle (reference/scan_ref.cu) catches it only
// when a warp is still between the tile's last barrier and its read of the total while the last
// warp has begun the next tile: a window of a few instructions, which schedule jitter (a sleep
// after each barrier, per warp) widens. Without jitter it may well pass (compare the H200's
// write-after-read matmul: 0/200 at small N).
// Sanitizer sizes need at least two tiles (n > 256), or the loop never comes round.
//
// Launch: grid 1, block 256, as the correct kernel. Built with -I include.
#include "block_scan.cuh"

#define TILE 256

extern "C" __global__ void prefix_sum_inplace_racy(int* data, int n)
{
    __shared__ int s[TILE];
    int carry = 0;  // the sum of every earlier tile; the same in every thread
    for (int base = 0; base < n; base += TILE) {
        int i = base + threadIdx.x;
        int inclusive = block_inclusive_scan(i < n ? data[i] : 0, s);
        if (i < n)
            data[i] = inclusive + carry;
        carry += s[TILE - 1];
        // BUG: no __syncthreads(): the next tile may overwrite s[TILE - 1] too soon
    }
}
