// Correct, with a raw string that holds a `#include` line: text, not a directive.
__device__ const char usage[] = R"doc(
#include "/etc/passwd"
)doc";
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
