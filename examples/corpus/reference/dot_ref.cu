// Reference for kernels/dot_f64*.cu: the dot product by one thread, left to right, into
// *result. partial and blocks_done are left alone: the manifest does not compare partial, and
// blocks_done must come back 0, which it already is.
extern "C" __global__ void dot_f64_ref(const double* x, const double* y, double* partial,
                                       unsigned* blocks_done, double* result, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    double acc = 0.0;
    for (int i = 0; i < n; ++i)
        acc += x[i] * y[i];
    *result = acc;
}
