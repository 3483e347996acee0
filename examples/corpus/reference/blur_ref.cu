// Reference for kernels/blur7_tiled*.cu: the 7-tap zero-padded convolution straight from its
// definition, one thread per output, reading x from global memory with explicit bounds. Small
// integer samples and weights keep every sum exact, so the order of the taps does not matter.
extern "C" __global__ void blur7_ref(const float* x, const float* w, float* y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float acc = 0.0f;
    for (int k = 0; k < 7; ++k) {
        const int j = i + k - 3;
        acc += w[k] * (j >= 0 && j < n ? x[j] : 0.0f);
    }
    y[i] = acc;
}
