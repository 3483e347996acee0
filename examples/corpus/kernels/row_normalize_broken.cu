// The row normalization of kernels/row_normalize.cu with the butterfly replaced by the usual
// reduction shuffle, __shfl_down_sync, as in a warp *reduction*: only lane 0 ends up with the
// row sum, but every lane still divides by its own `sum`.
//
// Wrong line: the one marked BUG. After the __shfl_down_sync tree only lane 0 holds the row
// sum; every other lane holds some mix of partials (a lane whose source lane is out of range
// adds its own value again), so the columns of lanes 1..31 are divided by the wrong number.
// No race and no memory error: a plain wrong answer, the same on every run.
// Must be caught by: stress with the reference oracle (reference/row_normalize_ref.cu), at any
// cols > 1 (cols == 1 happens to come out right). No sanitizer can see it, and a determinism
// oracle would not either: the result is wrong but reproducible, which is why the manifest
// gives a reference.
//
// Launch: block 256, grid ceil_div(rows, 8), as the correct kernel.
extern "C" __global__ void row_normalize_broken(const float* x, float* y, int rows, int cols)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows)
        return;  // the whole warp leaves together: the shuffles below see full warps only

    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float sum = 0.0f;
    for (int c = lane; c < cols; c += 32)
        sum += xr[c];
    for (int offset = 16; offset > 0; offset >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, offset);  // BUG: only lane 0 gets the whole sum
    for (int c = lane; c < cols; c += 32)
        yr[c] = xr[c] / sum;
}
