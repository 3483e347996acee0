// racegate buggy variant: the handoff's flag raised with a plain store.
//
// Wrong line: the one marked BUG. The producer raises `ready` with `ready = 1` while the
// consumer polls it with atomicAdd(&ready, 0): a plain store racing with atomic accesses is a
// data race in the CUDA memory model, and nothing orders the producer's buf writes before the
// flag for the consumer (the final barrier does, which is why the results stay right). Found by
// mutation testing (`atomic-to-plain`, H200 run 15): no detector reports it. racecheck does not
// report a plain access racing with an atomic one (see histogram_shared/no_sync_after_zero.cu),
// stress sees right results, and globalcheck watches global memory, not shared. sharedcheck
// must flag it: the plain store at the BUG line against warp 1's atomicAdd polling of the same
// shared word, with no barrier between them.
//
//@ exercise: handoff
//@ breaks: kernels/handoff.cu
//@ bug: plain store to a flag that other threads access atomically (shared memory)
//@ expect: stress=may stress-nojitter=may racecheck=may sharedcheck=flag
//@ entry: handoff

extern "C" __global__ void handoff(const int* in, int* out, int n)
{
    __shared__ int buf[32];
    __shared__ int ready;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int i = blockIdx.x * 32 + lane;
    if (threadIdx.x == 0)
        atomicExch(&ready, 0);
    __syncthreads();  // the flag is down before either warp looks at it
    if (warp == 0) {
        buf[lane] = (i < n) ? in[i] : 0;
        __syncwarp();  // the producer's own 32 writes are done before the flag goes up
        if (lane == 0)
            ready = 1;  // BUG: a plain store; the consumer's polling is atomic
    } else {
        while (atomicAdd(&ready, 0) == 0) {
        }  // consumer: wait for the producer's flag
    }
    __syncthreads();  // reached by both warps once the flag is up: buf is visible to warp 1
    if (warp == 1 && i < n)
        out[i] = 2 * buf[lane];
}
