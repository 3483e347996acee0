// The early-exit search of kernels/segment_contains.cu with the flag raised by a plain store
// ("it only ever goes from 0 to 1, so a plain store is enough").
//
// Wrong line: the one marked BUG. The store `seen = 1` races with the other warps' atomicAdd
// polling of the same shared word: a plain access and atomic ones to one location with no
// barrier between them is a data race in the CUDA memory model, and nothing guarantees the
// polling warps ever see the store before the loop ends. The results stay right here (the
// barrier after the loop orders the store before thread 0's read), so only a detector of the
// race itself can catch it, as for the catalog's handoff::plain_flag (a mutation survivor).
// Must be caught by: sharedcheck (the plain store against another warp's atomicAdd on `seen`,
// no __syncthreads between them). racecheck does not report a plain access against an atomic
// one; it may report the plain stores of two warps against each other. Stress: never (the
// results are right).
//
// Launch: block 256, grid ceil_div(n, SEG).
#define SEG 8192

extern "C" __global__ void segment_contains_racy(const int* keys, int* found, int needle, int n)
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
            seen = 1;  // BUG: a plain store; the other warps poll `seen` with atomics
    }
    __syncthreads();  // every raise is done before thread 0 reports

    if (threadIdx.x == 0)
        found[blockIdx.x] = seen;
}
