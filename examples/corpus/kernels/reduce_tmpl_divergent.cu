// The templated per-block sum of kernels/reduce_tmpl.cu with the level barrier moved inside
// the `if (t < half)`, so only the threads still adding wait at it: a divergent barrier.
//
// Wrong line: the one marked BUG (the `__syncthreads()` inside the braces of `if (t < half)`).
// __syncthreads() must be reached by every thread of the block. At half = 128, 64 and 32 the
// split follows whole warps; from half = 16 down it splits a warp, which is undefined
// behaviour, for every n and every block.
// Must be caught by: synccheck ("Divergent thread(s) in warp", from half = 16 down; the
// warp-uniform levels alone it would not report, and a -G build hides it). Stress is expected to
// pass: on the H200 a reduction with __syncthreads() inside `if (tid < s)` completed with the
// right answer in every trial, and racecheck reported nothing. The gate catches this twin
// through synccheck or not at all.
//
// Launch: block 256, grid ceil_div(n, 512), as the correct kernel; entry
// `reduce_divergent<float, 256>`.
template <typename T, int BLOCK>
__global__ void reduce_divergent(const T* in, T* out, int n)
{
    __shared__ T s[BLOCK];
    const int t = threadIdx.x;
    const int i = blockIdx.x * (2 * BLOCK) + t;
    T v = (i < n) ? in[i] : T(0);
    if (i + BLOCK < n)
        v += in[i + BLOCK];
    s[t] = v;
    __syncthreads();

#pragma unroll
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (t < half) {
            s[t] += s[t + half];
            __syncthreads();  // BUG: inside the if: threads t >= half never arrive
        }
    }
    if (t == 0)
        out[blockIdx.x] = s[0];
}
