// References for the corpus's three prefix sums: the running total in one thread, left to
// right. Slow (one thread walks the whole array) and obviously right. Each entry has the
// signature of the kernel it judges and ignores its launch geometry: only thread 0 of block 0
// works.

// kernels/prefix_sum_inplace*.cu: in place.
extern "C" __global__ void prefix_sum_inplace_ref(int* data, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    int acc = 0;
    for (int i = 0; i < n; ++i) {
        acc += data[i];
        data[i] = acc;
    }
}

// kernels/scan_pipeline*.cu (both launches together): out of place.
extern "C" __global__ void scan_ref(const int* in, int* out, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    int acc = 0;
    for (int i = 0; i < n; ++i) {
        acc += in[i];
        out[i] = acc;
    }
}

// kernels/chained_scan*.cu: out of place; the tile bookkeeping buffers are not touched (the
// manifest does not compare them).
extern "C" __global__ void chained_scan_ref(const int* in, int* out, int* tile_prefix,
                                            int* tile_flag, unsigned* next_tile, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    int acc = 0;
    for (int i = 0; i < n; ++i) {
        acc += in[i];
        out[i] = acc;
    }
}

// kernels/block_scan_shfl.cu: out of place, the running total restarting every 128 elements
// (one segment per block of the kernel).
extern "C" __global__ void block_scan_ref(const int* in, int* out, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    int acc = 0;
    for (int i = 0; i < n; ++i) {
        if (i % 128 == 0)
            acc = 0;
        acc += in[i];
        out[i] = acc;
    }
}
