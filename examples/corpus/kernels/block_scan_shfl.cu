// Inclusive prefix sum within each block of 128 elements (a segmented scan, one segment per
// block): warp shuffles scan each warp's 32 values, the last lane of each warp leaves the warp's
// total in shared memory, warp 0 scans those totals, and every warp adds the totals of the warps
// before it.
//
// Written as NVIDIA's shfl_scan sample writes it: warp 0 loads all 32 slots of `sums`, though
// only one slot per warp (4 here) was written. Lanes 4..31 scan garbage, and what they write back
// is never read: the kernel is correct. This is the shape that made sharedcheck's first version
// report a correct program (H200 run 22). sharedcheck still sees the unwritten reads; its confirm
// runs give the unwritten slots three different poisons, see the same output, and report the
// reads as a note, not a finding. No twin: a correct kernel every detector must pass.
#define BLOCK 128

extern "C" __global__ void block_scan_shfl(const int* in, int* out, int n)
{
    __shared__ int sums[32];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    int lane = threadIdx.x % 32;
    int warp = threadIdx.x / 32;
    int v = i < n ? in[i] : 0;
    for (int d = 1; d < 32; d *= 2) {
        int up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d)
            v += up;
    }
    if (lane == 31)
        sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        // Lanes past the number of warps read slots no thread wrote; their sums are never used
        // (unsigned: the garbage may overflow).
        unsigned s = (unsigned)sums[lane];
        for (int d = 1; d < 32; d *= 2) {
            unsigned up = __shfl_up_sync(0xffffffffu, s, d);
            if (lane >= d)
                s += up;
        }
        sums[lane] = (int)s;
    }
    __syncthreads();
    if (warp > 0)
        v += sums[warp - 1];
    if (i < n)
        out[i] = v;
}
