// The per-chunk histogram of kernels/chunk_histogram.cu with the barrier between counting and
// the copy-out removed ("the bins were zeroed behind a barrier, the atomics are atomic, what
// could go wrong").
//
// Wrong line: the one marked BUG. Threads 0..63 (warps 0 and 1) copy bins[b] out with a plain
// read as soon as they have counted their own pixels, while warps 2..7 may still atomicAdd into
// the same bins: their late counts never reach hist. A plain read racing shared atomics, with no
// barrier between them.
// Must be caught by: sharedcheck (the copy-out's read of bins[b] against another warp's
// atomicAdd, no __syncthreads between them). racecheck does not report a plain access against
// an atomic one (the corpus's deposit_mass_racy, H200 run 10). Stress with the reference
// (reference/chunk_histogram_ref.cu) sees short bins only when a counting warp runs late, which
// schedule jitter provokes; not promised.
//
// Launch: block 256, grid ceil_div(n, CHUNK). The last chunk may be short.
#define CHUNK 4096
#define NBINS 64

extern "C" __global__ void chunk_histogram_racy(const unsigned char* pixels, unsigned int* hist, int n)
{
    __shared__ unsigned int bins[NBINS];
    const int first = blockIdx.x * CHUNK;
    const int last = min(first + CHUNK, n);

    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        bins[b] = 0;
    __syncthreads();

    for (int i = first + threadIdx.x; i < last; i += blockDim.x)
        atomicAdd(&bins[pixels[i] >> 2], 1u);
    // BUG: no __syncthreads() here: the copy below may read a bin other warps are still adding to

    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        hist[blockIdx.x * NBINS + b] = bins[b];
}
