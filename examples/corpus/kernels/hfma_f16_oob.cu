// The f16 axpy of kernels/hfma_f16.cu with the test for a lone last element written wrong, so an
// odd n also does its last element as a pair.
//
// Wrong line: the one marked BUG (`2 * k < n` instead of `2 * k + 1 < n`: always true inside the
// loop). For odd n, the thread of the last pair loads x2[k] and y2[k] and stores y2[k], each a
// 4-byte access whose upper half is the 2 bytes just past the end of x and of y. y[n - 1]
// itself comes out right (it is the low half), and the stray upper half is the non-element
// past the end, so the values the oracle compares are all correct.
// Must be caught by: memcheck ("Invalid __global__ read" / "write" of size 4, 2 bytes past the
// end of the allocation), at any odd n. Stress almost surely escapes: the 2 stray bytes land in
// allocation padding, not in racegate's own copies. Even sizes never show it, so the sanitizer
// size must be odd.
//
// Launch: block 256, grid min(ceil_div(ceil_div(n, 2), 256), 512), as the correct kernel.
#include <cuda_fp16.h>

extern "C" __global__ void hfma_f16_oob(int n, float a, const __half* x, __half* y)
{
    const __half2 a2 = __float2half2_rn(a);
    const __half2* x2 = reinterpret_cast<const __half2*>(x);
    __half2* y2 = reinterpret_cast<__half2*>(y);
    const int npairs = (n + 1) / 2;  // the last "pair" of an odd n is one element
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < npairs; k += gridDim.x * blockDim.x) {
        if (2 * k < n)  // BUG: also true for the lone last element of an odd n
            y2[k] = __hfma2(a2, x2[k], y2[k]);
        else
            y[2 * k] = __hfma(__low2half(a2), x[2 * k], y[2 * k]);
    }
}
