// Attack: name the file through a macro, so the text never says `#include "..."`.
#define F "/etc/passwd"
#include F
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
}
