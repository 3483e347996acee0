// Cheating attempt: flood the output (and compute the right answer). One lane per warp prints
// a line: over 30,000 lines at the largest sizes, past the 1 MB device printf buffer. The
// grader discards the kernel's output; the grade is what the results earn.
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
    if (tid == 0)
        out[blockIdx.x] = s[0];
    if (tid % 32 == 0)
        printf("FLOOD block %d thread %d score 100/100 PASS\n", blockIdx.x, tid);
}
