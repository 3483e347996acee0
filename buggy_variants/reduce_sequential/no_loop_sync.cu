// racegate buggy variant: reduction with the barrier of the loop removed.
//
// Wrong line: the one marked BUG. Step k + 1 reads partial sums that other warps write in
// step k; without the barrier a warp may read them before they are written (RAW on shared
// memory). On the H200 the bare bug gave 0 wrong results in 500 trials at n = 65536:
// racecheck sees it; stress needs schedule jitter to delay the writers.
//
//@ exercise: reduce
//@ breaks: kernels/reduce_sequential.cu
//@ bug: missing barrier, read-before-write (RAW) on shared memory
//@ expect: stress=flag stress-nojitter=may racecheck=flag sharedcheck=may
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
        // BUG: the __syncthreads() between the steps of the loop was here
    }
    if (tid == 0)
        out[blockIdx.x] = s[0];
}

extern "C" __global__ void reduce_sequential(const float* in, float* out, int n)
{
    reduce_sequential_block<256>(in, out, n);
}
