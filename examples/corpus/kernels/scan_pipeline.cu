// Inclusive prefix sum of an int array in two launches, the textbook way for arrays longer than
// a block:
//   1. scan_blocks: each block scans its 256 elements into out (block_inclusive_scan from
//      include/block_scan.cuh, in dynamic shared memory sized at launch: blockDim.x ints) and
//      stores its total in block_sums[blockIdx.x];
//   2. add_block_offsets: each block adds the totals of all earlier blocks to its elements.
// In the second launch thread 0 adds up the earlier totals and hands the offset to the rest of
// the block through shared memory, so a barrier must separate its write from their reads.
//
// Launches (same geometry, so block b of launch 2 finishes block b of launch 1):
//   scan_blocks       grid ceil_div(n, 256), block 256, dynamic shared 256 * 4 bytes
//   add_block_offsets grid ceil_div(n, 256), block 256
// Built with -I include.
#include "block_scan.cuh"

extern "C" __global__ void scan_blocks(const int* in, int* out, int* block_sums, int n)
{
    extern __shared__ int s[];  // blockDim.x ints
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    int inclusive = block_inclusive_scan(i < n ? in[i] : 0, s);
    if (i < n)
        out[i] = inclusive;
    if (threadIdx.x == blockDim.x - 1)
        block_sums[blockIdx.x] = inclusive;  // the block's total (0-padded past n)
}

extern "C" __global__ void add_block_offsets(int* out, const int* block_sums, int n)
{
    __shared__ int offset;
    if (threadIdx.x == 0) {
        int acc = 0;
        for (int b = 0; b < (int)blockIdx.x; ++b)
            acc += block_sums[b];
        offset = acc;
    }
    __syncthreads();  // thread 0 has stored the offset before anyone reads it
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] += offset;
}
