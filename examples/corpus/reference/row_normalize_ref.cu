// Reference for kernels/row_normalize*.cu: one thread per row (grid-stride over the rows),
// the row sum left to right, then each entry divided by it. For integer-valued x the sum is
// exact in any order, so the quotients match the kernel's bit for bit.
extern "C" __global__ void row_normalize_ref(const float* x, float* y, int rows, int cols)
{
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
        const float* xr = x + (size_t)r * cols;
        float sum = 0.0f;
        for (int c = 0; c < cols; ++c)
            sum += xr[c];
        for (int c = 0; c < cols; ++c)
            y[(size_t)r * cols + c] = xr[c] / sum;
    }
}
