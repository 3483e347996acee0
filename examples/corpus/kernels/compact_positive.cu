// Stream compaction: copies every positive element of `in` into `out` and counts them in
// *count. Each kept element claims a slot with atomicAdd on the counter, so slots are unique
// and dense, but their order depends on the schedule: out[0 .. *count) is the right multiset in
// some order, and the rest of `out` is left unwritten. *count is the caller's counter, zeroed
// before the launch. A grid-stride loop covers any n with any grid.
//
// Launch: block 256, grid min(ceil_div(n, 256), 256).
extern "C" __global__ void compact_positive(const int* in, int* out, unsigned* count, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int x = in[i];
        if (x > 0) {
            unsigned slot = atomicAdd(count, 1u);
            out[slot] = x;
        }
    }
}
