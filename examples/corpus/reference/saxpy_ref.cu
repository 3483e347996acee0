// Reference for kernels/saxpy*.cu: each thread takes one contiguous chunk of the array
// (ceil(n / threads) elements), a different walk from the kernel's grid stride, with the same
// arithmetic per element.
extern "C" __global__ void saxpy_ref(int n, float a, const float* x, float* y)
{
    const long long threads = (long long)gridDim.x * blockDim.x;
    const long long chunk = (n + threads - 1) / threads;
    const long long first = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * chunk;
    for (long long i = first; i < first + chunk && i < n; ++i)
        y[i] = a * x[i] + y[i];
}
