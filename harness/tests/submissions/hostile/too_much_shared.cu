// Compiles to PTX, but the driver will not load it: 400 KB of static shared memory, past what
// a block may have. The kernel never runs: no correctness points, and no sanitizer item can be
// passed by a kernel that did not run. The submission's fault, not the machine's: graded.
extern "C" __global__ void reduce(const float* in, float* out, int n)
{
    __shared__ float s[100000];
    int tid = threadIdx.x;
    int i = blockIdx.x * 256 + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (int half = 128; half > 0; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = s[0] + s[99999] * 0.0f;
}
