// racegate buggy variant: warp-synchronous last-warp unroll without volatile or __syncwarp().
//
// Wrong lines: from the one marked BUG. The classic pre-Volta code assumed a warp runs in
// lockstep and that every s[...] read goes to shared memory. Without `volatile` the compiler
// keeps values in registers and reorders the loads; without __syncwarp() lanes may run
// apart. A lane then adds a partial sum before its neighbour has written it. On the H200
// this gave 199-200 wrong results in 200 trials, and racecheck reported it at Warning level
// (warp-level programming), which racegate counts as a finding.
//
//@ exercise: reduce
//@ breaks: kernels/reduce_warp_unrolled.cu
//@ bug: warp-synchronous programming without volatile/__syncwarp
//@ expect: stress=flag stress-nojitter=flag racecheck=flag sharedcheck=may
//@ entry: reduce_warp_unrolled block=256

template <int BLOCK>
__device__ void reduce_warp_unrolled_block(const float* in, float* out, int n)
{
    __shared__ float s[BLOCK];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned half = BLOCK / 2; half > 32; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];
        __syncthreads();
    }
    if (tid < 32) {
        float* v = s;  // BUG: not volatile, and no __syncwarp() between the steps below
        v[tid] += v[tid + 32];
        v[tid] += v[tid + 16];
        v[tid] += v[tid + 8];
        v[tid] += v[tid + 4];
        v[tid] += v[tid + 2];
        v[tid] += v[tid + 1];
        if (tid == 0)
            out[blockIdx.x] = v[0];
    }
}

extern "C" __global__ void reduce_warp_unrolled(const float* in, float* out, int n)
{
    reduce_warp_unrolled_block<256>(in, out, n);
}
