// y[i] = a * x[i] + b for i < n. One thread per element; block 256, grid ceil(n / 256).
// Checked against reference/scale_ref.cu, a grid-stride version the team trusts.
extern "C" __global__ void scale(const float* x, float* y, int n, int a, int b)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + b;
}
