// Per-chunk histograms of an 8-bit image. The image is cut into chunks of CHUNK pixels and
// hist[c * NBINS + b] counts the pixels of chunk c whose value falls in bin b (value / 4, so 64
// bins). We keep one histogram per chunk rather than one for the whole image because the
// local tone-mapping pass after this one wants them separately; summing is the host's job.
//
// One block per chunk. The block counts into its own bins in shared memory (shared atomics are
// cheap, and 64 bins spread the contention), then copies the bins out, one per thread. Every
// element of hist is written, empty bins as 0.
//
// Launch: block 256, grid ceil_div(n, CHUNK). The last chunk may be short.
#define CHUNK 4096
#define NBINS 64

extern "C" __global__ void chunk_histogram(const unsigned char* pixels, unsigned int* hist, int n)
{
    __shared__ unsigned int bins[NBINS];
    const int first = blockIdx.x * CHUNK;
    const int last = min(first + CHUNK, n);

    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        bins[b] = 0;
    __syncthreads();

    for (int i = first + threadIdx.x; i < last; i += blockDim.x)
        atomicAdd(&bins[pixels[i] >> 2], 1u);
    __syncthreads();  // every thread has counted its pixels before the bins are copied out

    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        hist[blockIdx.x * NBINS + b] = bins[b];
}
