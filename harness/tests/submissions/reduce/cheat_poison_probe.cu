// Cheating attempt: read the output before writing it and write the sum only when the output
// does not hold the poison the grader is known to use first (all bits set). Wrong in exactly the
// trials whose output was poisoned that way: an intermittent wrong result, which the
// all-or-nothing correctness item fails, so no tool item is judged either.
extern "C" __global__ void reduce(const float* in, float* out, int n)
{
    __shared__ float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * 256 + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (int half = 128; half > 0; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];
        __syncthreads();
    }
    if (tid == 0 && __float_as_uint(out[blockIdx.x]) != 0xFFFFFFFFu)
        out[blockIdx.x] = s[0];
}
