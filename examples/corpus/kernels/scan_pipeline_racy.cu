// The two-launch prefix sum of kernels/scan_pipeline.cu with the barrier of the second launch
// forgotten: the block reads the offset before thread 0 has finished adding it up.
//
// Wrong line: the one marked BUG, in add_block_offsets, where the correct kernel has
// `__syncthreads();`. Thread 0 loops over blockIdx.x earlier totals and only then stores
// `offset`; the other 255 threads read the shared `offset` right away and get whatever the
// shared memory held (racegate's poison, or a previous block's offset). A read-after-write race
// on shared memory, in every block (block 0 too: its offset is 0, but it is still stored late);
// the later the block, the longer thread 0's loop and the likelier the wrong offset.
// Must be caught by: racecheck (the read `out[i] += offset` against thread 0's store), and
// stress with the reference oracle (reference/scan_ref.cu), at any n > 256. The first launch,
// scan_blocks, is correct; the sanitizer run must include both launches.
//
// Launches: as the correct kernel (scan_blocks, then add_block_offsets_racy).
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

extern "C" __global__ void add_block_offsets_racy(int* out, const int* block_sums, int n)
{
    __shared__ int offset;
    if (threadIdx.x == 0) {
        int acc = 0;
        for (int b = 0; b < (int)blockIdx.x; ++b)
            acc += block_sums[b];
        offset = acc;
    }
    // BUG: no __syncthreads() here: the other threads read `offset` before thread 0 stores it
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] += offset;
}
