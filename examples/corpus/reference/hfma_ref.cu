// Reference for kernels/hfma_f16*.cu: y[i] = a * x[i] + y[i] one __half at a time, grid-stride
// over the elements (no __half2, no pairs, no tail case).
#include <cuda_fp16.h>

extern "C" __global__ void hfma_f16_ref(int n, float a, const __half* x, __half* y)
{
    const __half ah = __float2half_rn(a);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = __hfma(ah, x[i], y[i]);
}
