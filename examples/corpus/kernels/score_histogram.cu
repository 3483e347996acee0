// Weighted histogram of exam scores: each score is an integer 0..100, and bins[b] grows by
// weight[i] for the bin b that score[i] falls into, over nbins equal-width bins of 0..100. As in
// numpy.histogram the top bin is closed: a score of 100 counts in bin nbins - 1, which the
// min() below ensures (100 * nbins / 100 would be nbins, one past the end).
// bins is the caller's buffer, zeroed before the launch and accumulated into: many threads add
// to the same bin at once, so every add is an atomicAdd. Integer weights make the result the
// same in any order. A grid-stride loop covers any n with any grid.
//
// Launch: block 256, grid min(ceil_div(n, 256), 512).
#define MAX_SCORE 100

extern "C" __global__ void score_histogram(
    const int* score, const unsigned* weight, unsigned* bins, int nbins, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int b = min(score[i] * nbins / MAX_SCORE, nbins - 1);
        atomicAdd(&bins[b], weight[i]);
    }
}
