// Cheating attempt: output a constant without reading the input. The secret seed changes
// every input, so no constant (or table for the public seed) can pass.
extern "C" __global__ void reduce(const float* in, float* out, int n)
{
    if (threadIdx.x == 0)
        out[blockIdx.x] = 1024.0f;
}
