// racegate: producer/consumer handoff inside a block: a spin-wait next to a barrier.
//
// Computes out[i] = 2 * in[i] for i < n. Launch: block (64) = two warps, grid (ceil(n / 32)).
// Warp 0 (producer) copies the block's 32 inputs into shared memory and raises a flag;
// warp 1 (consumer) spins on the flag, then, after the block barrier, writes the doubled
// values. The lesson is where a barrier may go: a warp spinning on a flag never reaches a
// barrier, so the producer must raise the flag before it waits at any barrier. Here the
// producer only needs its own warp's writes ordered, which is __syncwarp(), not
// __syncthreads(). The flag is read and written with atomics, so the spin is not a race.
//
//@ exercise: handoff
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
            atomicExch(&ready, 1);
    } else {
        while (atomicAdd(&ready, 0) == 0) {
        }  // consumer: wait for the producer's flag
    }
    __syncthreads();  // reached by both warps once the flag is up: buf is visible to warp 1

    if (warp == 1 && i < n)
        out[i] = 2 * buf[lane];
}
