// racegate buggy variant: reduction whose loop barrier is taken by even threads only.
//
// Wrong line: the one marked BUG. Odd lanes skip the barrier, so it diverges inside every
// warp, and the odd lanes that still have work may read partial sums before they are
// written. synccheck reports "Divergent thread(s) in warp". Results stayed right without
// jitter on the H200 (0/200) and went wrong in every trial with it (200/200).
//
//@ exercise: reduce
//@ breaks: kernels/reduce_sequential.cu
//@ bug: divergent barrier (taken by even lanes only)
//@ expect: stress=flag stress-nojitter=may racecheck=may synccheck=flag sharedcheck=may
//@ entry: reduce_sequential block=256

template <int BLOCK>
__device__ void reduce_sequential_block(const float* in, float* out, int n)
{
    __shared__ float s[BLOCK];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];
        if (tid % 2 == 0)
            __syncthreads();  // BUG: odd lanes never reach this barrier
    }
    if (tid == 0)
        out[blockIdx.x] = s[0];
}

extern "C" __global__ void reduce_sequential(const float* in, float* out, int n)
{
    reduce_sequential_block<256>(in, out, n);
}
