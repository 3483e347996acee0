// The same block sum with the barrier of the loop forgotten: step k+1 reads partial sums other
// warps may not have written yet. The gate must catch it (racecheck, and the determinism oracle
// under jitter) and name this file and line.
extern "C" __global__ void block_sum_racy(const float* in, float* out, int n)
{
    __shared__ float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * 256 + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (int half = 128; half > 0; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];
    }
    if (tid == 0)
        out[blockIdx.x] = s[0];
}
