// A correct submission: the producer warp orders its own writes with __syncwarp() and raises
// the flag before the only block barrier, which both warps reach once the flag is up.
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
        __syncwarp();
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
