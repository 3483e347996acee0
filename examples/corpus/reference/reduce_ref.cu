// Reference for kernels/reduce_tmpl*.cu (reduce<float, 256>): out[b] = the sum of the chunk of
// 2 * blockDim.x elements block b covers (0 past n), by one thread per chunk, left to right.
// It is launched with the kernel's geometry, so blockDim.x is the kernel's BLOCK. Integer
// values keep the float sums exact in any order.
extern "C" __global__ void block_sums_ref(const float* in, float* out, int n)
{
    const int chunk = 2 * blockDim.x;
    const int chunks = (n + chunk - 1) / chunk;
    for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < chunks; b += gridDim.x * blockDim.x) {
        float acc = 0.0f;
        for (int i = b * chunk; i < min(n, (b + 1) * chunk); ++i)
            acc += in[i];
        out[b] = acc;
    }
}
