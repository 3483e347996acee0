// The grid-stride saxpy of kernels/saxpy.cu stepping by the block's width instead of the grid's.
//
// Wrong line: the one marked BUG (`i += blockDim.x`). Block b now visits every element from
// b * 256 + threadIdx.x to the end, so element i is updated by every block b <= i / 256 of the
// grid: y[i] gets a * x[i] added several times, and blocks that update the same element at the
// same time lose some of those updates (a read-modify-write race on global memory). Only
// n <= 256 (one block) comes out right.
// Must be caught by: stress with the reference oracle (reference/saxpy_ref.cu), at any n > 256.
// racecheck cannot see it (global memory); a determinism oracle would see it only when the
// lost updates differ between runs.
//
// Launch: block 256, grid min(ceil_div(n, 256), 1024), as the correct kernel.
extern "C" __global__ void saxpy_broken(int n, float a, const float* x, float* y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x)  // BUG
        y[i] = a * x[i] + y[i];
}
