// Sorts an array of u32 keys in place, one segment of 1024 keys per block: block b leaves
// keys[b*1024 .. b*1024 + 1023] in ascending order (the last segment may be short: n need not be
// a multiple of 1024). The segment is loaded into shared memory, run through a bitonic network
// (each of the 512 threads compare-exchanges one pair per step, a barrier between steps), and
// written back. Keys past n are padded with 0xFFFFFFFF, sort to the end, and are not written.
//
// Launch: block 512 (exactly: two keys per thread), grid ceil_div(n, 1024).
#define SEGMENT 1024

extern "C" __global__ void bitonic_sort_segments(unsigned* keys, int n)
{
    __shared__ unsigned s[SEGMENT];
    const unsigned t = threadIdx.x;
    const int base = blockIdx.x * SEGMENT;

    for (unsigned k = t; k < SEGMENT; k += blockDim.x)
        s[k] = (base + (int)k < n) ? keys[base + k] : 0xFFFFFFFFu;
    __syncthreads();

    for (unsigned size = 2; size <= SEGMENT; size <<= 1) {
        for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
            // The pair (lo, lo + stride) owned by this thread: lo has the `stride` bit clear.
            unsigned lo = 2 * t - (t & (stride - 1));
            unsigned hi = lo + stride;
            bool ascending = (lo & size) == 0;
            unsigned a = s[lo], b = s[hi];
            if ((a > b) == ascending) {
                s[lo] = b;
                s[hi] = a;
            }
            __syncthreads();  // this step's swaps are done before the next step reads
        }
    }

    for (unsigned k = t; k < SEGMENT; k += blockDim.x)
        if (base + (int)k < n)
            keys[base + k] = s[k];
}
