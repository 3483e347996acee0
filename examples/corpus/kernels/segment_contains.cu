// Does each segment of `keys` contain `needle`? found[s] = 1 when keys[i] == needle for some i
// in segment s (SEG keys per segment, the last one possibly shorter), else 0. Used as a cheap
// pre-filter before the exact search, so it stops early: the block's threads scan their segment
// with a block stride, and each step first checks a shared flag that any thread raises when it
// sees the needle. The flag is read and raised with atomics, so warps still scanning see it.
//
// Launch: block 256, grid ceil_div(n, SEG).
#define SEG 8192

extern "C" __global__ void segment_contains(const int* keys, int* found, int needle, int n)
{
    __shared__ int seen;
    const int first = blockIdx.x * SEG;
    const int last = min(first + SEG, n);

    if (threadIdx.x == 0)
        seen = 0;
    __syncthreads();  // the flag is down before anyone looks at it

    for (int i = first + threadIdx.x; i < last; i += blockDim.x) {
        if (atomicAdd(&seen, 0) != 0)  // somebody found it: stop early
            break;
        if (keys[i] == needle)
            atomicExch(&seen, 1);
    }
    __syncthreads();  // every raise is done before thread 0 reports

    if (threadIdx.x == 0)
        found[blockIdx.x] = seen;
}
