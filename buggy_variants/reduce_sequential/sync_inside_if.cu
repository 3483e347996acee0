// racegate buggy variant: reduction with __syncthreads() inside `if (tid < half)`.
//
// Wrong line: the one marked BUG. Only the active threads reach the barrier: from
// half = 128 down, whole warps skip it, and from half = 16 down, lanes of one warp split.
// The CUDA model says this is undefined; on the H200 such a kernel completed with the right
// answer, so results cannot be trusted to show it. synccheck reports the divergent barrier.
//
//@ exercise: reduce
//@ breaks: kernels/reduce_sequential.cu
//@ bug: divergent barrier (barrier inside a conditional)
//@ expect: stress=may stress-nojitter=may racecheck=may synccheck=flag sharedcheck=may
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
        if (tid < half) {
            s[tid] += s[tid + half];
            __syncthreads();  // BUG: inside the if: only the first `half` threads reach it
        }
    }
    if (tid == 0)
        out[blockIdx.x] = s[0];
}

extern "C" __global__ void reduce_sequential(const float* in, float* out, int n)
{
    reduce_sequential_block<256>(in, out, n);
}
