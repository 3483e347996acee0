// racegate prelude: force-included by NVRTC (--pre-include) into every kernel racegate builds.
// It adds nothing to the kernel under test unless RACEGATE_JITTER is defined; line numbers of
// the kernel's own file are unchanged, because this is a separate file.

// Fills the shared memory of an SM with `pattern` (0xFFFFFFFF: NaN as float, -1 as int; then
// zero; then a seeded random word: racegate changes it from trial to trial). racegate launches it
// before each stress trial, so a kernel that reads shared memory it never wrote reads poison that
// changes between runs instead of a lucky zero, or the same garbage every time. Launch: one block
// of 1024 threads per SM, dynamic shared memory = the per-block opt-in maximum.
extern "C" __global__ void racegate_poison_shared(unsigned int words, unsigned int pattern)
{
    extern __shared__ unsigned int racegate_smem[];
    for (unsigned int i = threadIdx.x; i < words; i += blockDim.x)
        racegate_smem[i] = pattern;
}

// Counts the bytes where `a` and `b` differ into *count, so results are checked on the device
// where the data is large, and only a counter crosses the bus. racegate reads the data back
// only when the count is not zero, to report which elements are wrong.
extern "C" __global__ void racegate_diff(const unsigned char* a, const unsigned char* b,
                                         unsigned long long n, unsigned int* count)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long words = n / 4;
    const unsigned int* wa = (const unsigned int*)a;
    const unsigned int* wb = (const unsigned int*)b;
    unsigned int local = 0;
    for (unsigned long long w = i; w < words; w += stride)
        local += (wa[w] != wb[w]);
    for (unsigned long long j = words * 4 + i; j < n; j += stride)
        local += (a[j] != b[j]);
    if (local != 0)
        atomicAdd(count, local);
}

#ifdef RACEGATE_JITTER
// Schedule jitter. Every __syncthreads() of the kernel becomes the real barrier followed by a
// per-warp sleep of 0 to ~4 us. Three warps in four sleep, each for its own time, so warps
// leave every barrier in a different order than the hardware's usual one; races that need one
// warp to run ahead of another (a missing second barrier in a tiled loop) then show at every
// size. On the H200, per-thread delays of a few hundred ns changed nothing; per-warp
// microseconds did. The seed is written by racegate before each trial; the clock mixes in
// so that successive iterations of a loop sleep differently.
__device__ unsigned long long racegate_jitter_seed;

__device__ __forceinline__ unsigned int racegate_mix(unsigned long long x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (unsigned int)x;
}

__device__ __forceinline__ void racegate_jittered_syncthreads(unsigned int site)
{
    __syncthreads();
    unsigned int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned long long key = racegate_jitter_seed
        ^ ((unsigned long long)block << 24) ^ ((unsigned long long)(tid / 32) << 12) ^ site
        ^ ((unsigned long long)(clock64() >> 8) << 40);
    unsigned int h = racegate_mix(key);
    if ((h & 3u) != 0u)
        __nanosleep((h >> 2) % 4096u);
}

#define __syncthreads() racegate_jittered_syncthreads(__LINE__)
#endif
