// out[b] = sum of in[b * 256 .. b * 256 + 255] (0 past n). Block 256, grid ceil(n / 256).
// A shared-memory tree with a barrier after every step: deterministic, so the determinism
// oracle (same inputs, different schedules, identical bits) needs no reference.
extern "C" __global__ void block_sum(const float* in, float* out, int n)
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
}
