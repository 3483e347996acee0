// Common mistake: the producer waits at __syncthreads() before raising the flag, while the
// consumer warp spins on the flag and never reaches a barrier: a deadlock. The trial and every
// sanitizer run end at their deadline.
extern "C" __global__ void handoff(const int* in, int* out, int n)
{
    __shared__ int buf[32];
    __shared__ int flag;
    int lane = threadIdx.x & 31, i = blockIdx.x * 32 + lane;
    if (threadIdx.x == 0)
        atomicExch(&flag, 0);
    __syncthreads();
    if (threadIdx.x < 32) {
        buf[lane] = i < n ? in[i] : 0;
        __syncthreads();  // the mistake: warp 1 is spinning below and never arrives
        if (lane == 0)
            atomicExch(&flag, 1);
    } else {
        while (atomicAdd(&flag, 0) == 0) {
        }
    }
    __syncthreads();
    if (threadIdx.x >= 32 && i < n)
        out[i] = 2 * buf[lane];
}
