// Reference for kernels/compact_positive*.cu: one thread copies the positive elements in index
// order (a stable compaction) starting at slot *count, and leaves the new count in *count. The
// kernel's order differs; the manifest compares out[0 .. count[0]) as a multiset.
extern "C" __global__ void compact_positive_ref(const int* in, int* out, unsigned* count, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    unsigned k = *count;
    for (int i = 0; i < n; ++i)
        if (in[i] > 0)
            out[k++] = in[i];
    *count = k;
}
