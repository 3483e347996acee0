// racegate buggy variant: the shuffle reduction with a mask that names half the warp.
//
// Wrong line: the one marked BUG. All 32 lanes of the first warp call __shfl_down_sync, but the
// mask names only lanes 0-15. The CUDA programming guide makes that undefined: every calling
// lane must be in the mask, and a lane may read only from a lane in the mask. On the H200 the
// converged warp shuffles all 32 lanes anyway and the sum comes out right, so nothing catches
// it: found by mutation testing (`shuffle-mask-narrow`, H200 run 15), kept here so that the
// escape is on record. A later compiler, another GPU or a divergent call site may break it.
// synccheck checks barriers and __syncwarp, not shuffle masks; racecheck and globalcheck see
// memory, and a shuffle moves registers.
//
//@ exercise: reduce
//@ breaks: kernels/reduce_shuffle.cu
//@ bug: shuffle with a mask that omits calling lanes (undefined behaviour)
//@ expect: stress=may stress-nojitter=may synccheck=may sharedcheck=may
//@ escapes: undefined behaviour that the H200 executes as intended; no detector checks shuffle masks
//@ entry: reduce_shuffle block=256

template <int BLOCK>
__device__ void reduce_shuffle_block(const float* in, float* out, int n)
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
        float sum = s[tid] + s[tid + 32];
        for (int offset = 16; offset > 0; offset >>= 1)
            sum += __shfl_down_sync(0x0000ffffu, sum, offset);  // BUG: lanes 16-31 call but are not in the mask
        if (tid == 0)
            out[blockIdx.x] = sum;
    }
}

extern "C" __global__ void reduce_shuffle(const float* in, float* out, int n)
{
    reduce_shuffle_block<256>(in, out, n);
}
