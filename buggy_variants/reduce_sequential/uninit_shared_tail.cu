// racegate buggy variant: reduction that leaves the tail of shared memory uninitialized.
//
// Wrong line: the one marked BUG. In the last block, threads past n store nothing, but the
// tree still adds s[tid] for every tid: it adds whatever an earlier block (or kernel) left
// in that shared memory. Only sizes that are not multiples of the block show it.
// initcheck tracks global memory only in compute-sanitizer 2025.3, so it cannot see this;
// stress does, because racegate fills shared memory with a poison pattern before each trial.
//
//@ exercise: reduce
//@ breaks: kernels/reduce_sequential.cu
//@ bug: read of uninitialized shared memory
//@ expect: stress=flag stress-nojitter=flag racecheck=may initcheck=may sharedcheck=flag
//@ entry: reduce_sequential block=256

template <int BLOCK>
__device__ void reduce_sequential_block(const float* in, float* out, int n)
{
    __shared__ float s[BLOCK];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    if (i < n)
        s[tid] = in[i];  // BUG: no `else s[tid] = 0`: the tail of s is never written
    __syncthreads();
    for (unsigned half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];
        __syncthreads();  // outside the if: every thread of the block must reach it
    }
    if (tid == 0)
        out[blockIdx.x] = s[0];
}

extern "C" __global__ void reduce_sequential(const float* in, float* out, int n)
{
    reduce_sequential_block<256>(in, out, n);
}
