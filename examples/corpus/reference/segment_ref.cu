// Reference for kernels/segment_contains*.cu: whether segment b (8192 keys, the last one
// possibly shorter) holds the needle, by a plain scan of the whole segment by thread 0 of
// block b. Launched with the kernel's geometry (block 256, grid ceil_div(n, 8192)).
#define SEG 8192

extern "C" __global__ void segment_contains_ref(const int* keys, int* found, int needle, int n)
{
    if (threadIdx.x != 0)
        return;
    int hit = 0;
    for (int i = blockIdx.x * SEG; i < n && i < (blockIdx.x + 1) * SEG; ++i)
        hit |= keys[i] == needle;
    found[blockIdx.x] = hit;
}
