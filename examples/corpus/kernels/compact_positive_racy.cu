// The stream compaction of kernels/compact_positive.cu with the slot claimed by a plain
// increment of the counter instead of an atomicAdd.
//
// Wrong line: the one marked BUG. `(*count)++` is a load, an add and a store: two threads can
// read the same count, claim the same slot (one element overwrites the other) and store the
// same count + 1 (the counter loses an increment). A lost update in global memory (NVRTC 13.0
// emits a plain ld.global / add / st.global on the counter for every kept element).
// Must be caught by: stress with the reference oracle (reference/compact_ref.cu): *count comes
// out too small and out[0 .. *count) misses elements, even compared as an unordered multiset.
// racecheck cannot see it (shared memory only); the wrong count differs between runs, but a
// run-to-run comparison is not needed when the reference gives the right count.
//
// Launch: block 256, grid min(ceil_div(n, 256), 256), as the correct kernel.
extern "C" __global__ void compact_positive_racy(const int* in, int* out, unsigned* count, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int x = in[i];
        if (x > 0) {
            unsigned slot = (*count)++;  // BUG: not atomic: two threads can claim one slot
            out[slot] = x;
        }
    }
}
