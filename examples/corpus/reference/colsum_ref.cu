// Reference for kernels/colsum_bf16*.cu: one thread per column (grid-stride over the columns),
// summing down the column in f32.
#include <cuda_bf16.h>

extern "C" __global__ void colsum_bf16_ref(const __nv_bfloat16* x, float* sums, int rows,
                                           int cols)
{
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x) {
        float acc = 0.0f;
        for (int r = 0; r < rows; ++r)
            acc += __bfloat162float(x[(size_t)r * cols + c]);
        sums[c] = acc;
    }
}
