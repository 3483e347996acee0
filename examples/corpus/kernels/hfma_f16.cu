// y = a * x + y on f16 vectors (the half-precision axpy), two elements at a time: the pairs are
// loaded, fused-multiply-added and stored as __half2, one 32-bit access each. When n is odd the
// last element has no partner and is done alone as a __half. Grid-stride loop over the pairs.
// Exact for small integer values (f16 holds every integer up to 2048).
//
// Launch: block 256, grid min(ceil_div(ceil_div(n, 2), 256), 512).
#include <cuda_fp16.h>

extern "C" __global__ void hfma_f16(int n, float a, const __half* x, __half* y)
{
    const __half2 a2 = __float2half2_rn(a);
    const __half2* x2 = reinterpret_cast<const __half2*>(x);
    __half2* y2 = reinterpret_cast<__half2*>(y);
    const int npairs = (n + 1) / 2;  // the last "pair" of an odd n is one element
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < npairs; k += gridDim.x * blockDim.x) {
        if (2 * k + 1 < n)
            y2[k] = __hfma2(a2, x2[k], y2[k]);
        else
            y[2 * k] = __hfma(__low2half(a2), x[2 * k], y[2 * k]);
    }
}
