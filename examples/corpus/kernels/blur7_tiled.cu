// A 7-tap 1-D convolution (a small blur), zero padded at both ends:
//   y[i] = sum over k = 0..6 of w[k] * x[i + k - 3], where x[j] = 0 outside 0 .. n-1.
// Each block stages its TILE samples plus RADIUS on each side (the halo) in shared memory, so
// a sample is read from global memory about once instead of seven times.
//
// Launch: block TILE (256; the tile is sized for it), grid ceil_div(n, TILE).
#define TILE 256
#define RADIUS 3

extern "C" __global__ void blur7_tiled(const float* x, const float* w, float* y, int n)
{
    __shared__ float s[TILE + 2 * RADIUS];
    const int base = blockIdx.x * TILE;
    const int t = threadIdx.x;
    const int i = base + t;

    s[RADIUS + t] = i < n ? x[i] : 0.0f;  // the block's own samples, 0 past the end
    if (t < RADIUS) {
        const int left = base - RADIUS + t;
        const int right = base + TILE + t;
        s[t] = left >= 0 ? x[left] : 0.0f;
        s[RADIUS + TILE + t] = right < n ? x[right] : 0.0f;
    }
    __syncthreads();  // the tile and both halos are in place

    if (i < n) {
        float acc = 0.0f;
        for (int k = 0; k <= 2 * RADIUS; ++k)
            acc += w[k] * s[t + k];
        y[i] = acc;
    }
}
