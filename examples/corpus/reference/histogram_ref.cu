// Reference for kernels/score_histogram*.cu: the same weighted histogram (nbins equal-width bins
// over scores 0..100, the top bin closed) added up by one thread, no atomics. Accumulates into
// bins like the kernel, so it starts from the same zeroed buffer.
#define MAX_SCORE 100

extern "C" __global__ void score_histogram_ref(const int* score, const unsigned* weight,
                                               unsigned* bins, int nbins, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    for (int i = 0; i < n; ++i) {
        int b = score[i] * nbins / MAX_SCORE;
        if (b == nbins)
            b = nbins - 1;  // a score of 100 belongs to the top bin
        bins[b] += weight[i];
    }
}
