// Per-block partial sums, written once for any element type and block size:
// out[b] = in[b*2*BLOCK] + ... + in[b*2*BLOCK + 2*BLOCK - 1] (0 past n). Each thread adds two
// elements while loading (so a block covers 2 * BLOCK elements), then a shared-memory tree
// halves the live threads at every level, with a barrier after each level that every thread
// of the block reaches.
// A C++ template, not extern "C": the manifest's entry is the name expression
// `reduce<float, 256>`, which racegate hands to NVRTC (nvrtcAddNameExpression) to instantiate
// the kernel and find its mangled name.
//
// Launch: block BLOCK (256 for reduce<float, 256>), grid ceil_div(n, 2 * BLOCK).
template <typename T, int BLOCK>
__global__ void reduce(const T* in, T* out, int n)
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
        if (t < half)
            s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0)
        out[blockIdx.x] = s[0];
}
