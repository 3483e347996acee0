// Reference for kernels/bitonic_sort_segments*.cu: the same in-place segment sort (segments of
// 1024 keys, ascending, the last one possibly short) by insertion sort, one thread per segment,
// in global memory. Slow and obviously right. Any grid and block: a grid-stride loop over the
// segments.
#define SEGMENT 1024

extern "C" __global__ void sort_segments_ref(unsigned* keys, int n)
{
    const int segments = (n + SEGMENT - 1) / SEGMENT;
    for (int seg = blockIdx.x * blockDim.x + threadIdx.x; seg < segments;
         seg += gridDim.x * blockDim.x) {
        unsigned* a = keys + seg * SEGMENT;
        const int len = min(SEGMENT, n - seg * SEGMENT);
        for (int i = 1; i < len; ++i) {
            unsigned v = a[i];
            int j = i - 1;
            while (j >= 0 && a[j] > v) {
                a[j + 1] = a[j];
                --j;
            }
            a[j + 1] = v;
        }
    }
}
