// The tiled blur of kernels/blur7_tiled.cu with the right halo loaded only where there is
// input ("nothing to load past the end"), as a first version of it was written.
//
// Wrong line: the one marked BUG. Past the end of x the right halo slot is not written at all,
// where the padding needs a 0. The last block's last threads read those slots: they hold
// whatever shared memory held (racegate's poison). Only some sizes show it: the slots are read
// when the last block is full or one or two samples short of full (n % 256 is 0, 254 or 255);
// for other n the threads that would read them are past n. sanitize_sizes uses n = 1024.
// Must be caught by: sharedcheck (a read of shared memory no thread of the block wrote, at the
// line that sums the taps). initcheck checks global memory only and racecheck sees no
// conflicting pair. Stress with the reference (reference/blur_ref.cu) only on a size above and
// under a shared-memory poison that is not 0 (0 happens to be the right padding): not promised.
//
// Launch: block TILE (256; the tile is sized for it), grid ceil_div(n, TILE).
#define TILE 256
#define RADIUS 3

extern "C" __global__ void blur7_tiled_uninit(const float* x, const float* w, float* y, int n)
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
        if (right < n)  // BUG: no else: past the end this halo slot stays unwritten (needs a 0)
            s[RADIUS + TILE + t] = x[right];
    }
    __syncthreads();  // the tile and both halos are in place

    if (i < n) {
        float acc = 0.0f;
        for (int k = 0; k <= 2 * RADIUS; ++k)
            acc += w[k] * s[t + k];
        y[i] = acc;
    }
}
