// racegate buggy variant: a barrier plus a spin-wait that deadlocks.
//
// Wrong line: the one marked BUG. The producer waits at a block barrier before it raises
// the flag, while the consumer warp spins on that flag and never reaches the barrier: each
// waits for the other, forever. On the H200 this hangs the kernel (divergent barriers alone
// do not) and hangs compute-sanitizer too, so only a deadline catches it: racegate's
// watchdog reports Hang and kills the whole process group.
//
//@ exercise: handoff
//@ breaks: kernels/handoff.cu
//@ bug: deadlock (barrier waited on by a warp whose partner spins on a flag)
//@ expect: stress=flag stress-nojitter=flag watchdog=flag racecheck=may synccheck=may memcheck=may initcheck=may globalcheck=may sharedcheck=may fencecheck=may streamcheck=may
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
        __syncthreads();  // BUG: a block barrier: warp 1 spins below and never arrives
        if (lane == 0)
            atomicExch(&ready, 1);
    } else {
        while (atomicAdd(&ready, 0) == 0) {
        }  // consumer: wait for the producer's flag
    }
    __syncthreads();  // reached by both warps once the flag is up: buf is visible to warp 1

    if (warp == 1 && i < n)
        out[i] = 2 * buf[lane];
}
