// The segment sort of kernels/bitonic_sort_segments.cu with the barrier between network steps
// forgotten: a thread goes on to the next compare-exchange step while other threads of the
// block are still swapping the keys it is about to read.
//
// Wrong line: the one marked BUG, at the end of the `stride` loop, where the correct kernel has
// `__syncthreads();`. Step k+1 reads s[lo] and s[hi] that another warp may not have swapped yet
// in step k (read-after-write), and swaps keys another warp may still be reading in step k
// (write-after-read). All of it in shared memory.
// Must be caught by: racecheck (shared-memory hazards at the compare-exchange lines), and stress
// with the reference oracle (reference/sort_ref.cu): keys come out unsorted, lost or duplicated.
//
// Launch: block 512, grid ceil_div(n, 1024), as the correct kernel.
#define SEGMENT 1024

extern "C" __global__ void bitonic_sort_segments_racy(unsigned* keys, int n)
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
            // BUG: no __syncthreads(): the next step reads keys not yet swapped
        }
    }

    for (unsigned k = t; k < SEGMENT; k += blockDim.x)
        if (base + (int)k < n)
            keys[base + k] = s[k];
}
