// The weighted score histogram of kernels/score_histogram.cu without the clamp of the top bin:
// a score of 100 lands one bin past the end of `bins`.
//
// Wrong line: the one marked BUG. score * nbins / MAX_SCORE is nbins when the score is 100, so
// atomicAdd writes bins[nbins], outside the buffer. Every other score lands in the same bin as
// in the correct kernel.
// Must be caught by: memcheck (an invalid __global__ access at the atomicAdd, whenever a score
// of 100 is drawn: n = 2000 scores from int(0, 100) miss 100 with probability about 2e-9), and
// stress with the reference oracle (reference/histogram_ref.cu), because the top bin is short
// of every weight whose score was 100. racecheck cannot see it: global memory.
//
// Launch: block 256, grid min(ceil_div(n, 256), 512), as the correct kernel.
#define MAX_SCORE 100

extern "C" __global__ void score_histogram_oob(
    const int* score, const unsigned* weight, unsigned* bins, int nbins, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int b = score[i] * nbins / MAX_SCORE;  // BUG: no min(): a score of 100 gives bin nbins
        atomicAdd(&bins[b], weight[i]);
    }
}
