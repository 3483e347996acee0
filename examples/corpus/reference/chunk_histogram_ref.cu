// Reference for kernels/chunk_histogram*.cu: each chunk's 64 bins counted by one thread (thread
// 0 of the chunk's block), in index order, straight into hist, no shared memory and no
// atomics. Launched with the kernel's geometry (block 256, grid ceil_div(n, 4096)).
#define CHUNK 4096
#define NBINS 64

extern "C" __global__ void chunk_histogram_ref(const unsigned char* pixels, unsigned int* hist,
                                               int n)
{
    if (threadIdx.x != 0)
        return;
    unsigned int* mine = hist + blockIdx.x * NBINS;
    for (int b = 0; b < NBINS; ++b)
        mine[b] = 0;
    const int first = blockIdx.x * CHUNK;
    for (int i = first; i < n && i < first + CHUNK; ++i)
        mine[pixels[i] >> 2] += 1;
}
