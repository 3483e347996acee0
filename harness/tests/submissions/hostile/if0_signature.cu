// Attack: the required signature inside `#if 0`, where a text-based check reads it, and a
// kernel with another signature where the compiler does.
#if 0
extern "C" __global__ void reduce(const float* in, float* out, int n) {}
#endif
extern "C" __global__ void reduce(const float* in, float* out)
{
    out[blockIdx.x] = in[blockIdx.x * 256];
}
