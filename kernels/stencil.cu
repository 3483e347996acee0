// racegate: a 3-point stencil in one launch, out of place.
//
// Computes out[i] = in[i-1] + in[i] + in[i+1] for i < n (0 outside 0..n). Launch: block (B),
// grid (ceil(n / B)). Every thread reads its neighbours from `in`, which no thread writes, and
// writes only its own out[i]: threads of different blocks share nothing they write, so no barrier
// and no atomic is needed. The lesson is the contrast with the in-place version
// (buggy_variants/stencil/inplace_neighbour.cu), where a block reads what its neighbour block
// writes in the same launch.
//
//@ exercise: stencil
//@ entry: stencil3

extern "C" __global__ void stencil3(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int left = i > 0 ? in[i - 1] : 0;
        int right = i + 1 < n ? in[i + 1] : 0;
        out[i] = left + in[i] + right;
    }
}
