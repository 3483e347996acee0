// Where globalcheck must say "inconclusive" rather than "clean", and two correct idioms at the edge
// of what it can order, one CUDA program. Every kernel here computes the right answer; what is
// checked is what globalcheck says about it under `racegate gate -- ./limits MODE`:
//
//   budget             a correct kernel over a 64 MiB buffer. With the default shadow budget it is
//                      clean; run with RACEGATE_GLOBALCHECK_BUDGET_MB=64 (the shadow needs 512 MiB)
//                      the buffer is left untracked and the run must be inconclusive, naming it.
//   named_ok           warps 0 and 1 hand data over through a named barrier (bar.sync 1, 64): correct,
//                      and clean (a named barrier still orders the threads that pass it).
//   named_partial      the same, but warp 2, which is not part of the named barrier, also reads the
//                      data: a race between warps. globalcheck sees it, but it counts named barriers
//                      as block-wide, so it cannot trust any finding between warps of a launch that
//                      uses them: inconclusive, never clean.
//   many_barriers      40000 __syncthreads in a loop: past the 2^15 barriers its epochs can order, so
//                      inconclusive.
//   huge_grid          2^26 + 1 blocks: past the grid its packed records can name, so inconclusive.
//   overlap            two host threads launch on two streams at once. globalcheck waits for each
//                      launch at its end while it holds its lock, so the two kernels run one after
//                      the other under it and are judged one at a time: clean (a launch that begins
//                      between another's begin and end is refused as inconclusive; H200 run 18 did
//                      not produce one).
//   volatile_handoff   block 0 writes data, __threadfence, raises a volatile flag; block 1 polls the
//                      flag, fences, and reads the data: correct. A volatile poll is no acquire to the device
//                      side, which reported the data as a race (H200 run 18); a finding in a kernel
//                      with volatile or relaxed/acquire-release loads and stores is now inconclusive.
//
// Build: nvcc -arch=sm_90 -lineinfo -o limits limits.cu
// Usage: ./limits MODE
#include <cstdio>
#include <cstring>
#include <thread>

__global__ void scale(int* a, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n)
        a[i] = (int)(i % 1000) * 2;
}

// Warps 0 and 1 (64 threads) meet at named barrier 1; warp 2, when `partial`, reads without it.
__global__ void named_handoff(int* a, int* out, bool partial)
{
    int t = threadIdx.x, lane = t % 32;
    if (t < 32)
        a[lane] = lane * 7;
    if (t < 64)
        asm volatile("bar.sync 1, 64;" ::: "memory");
    if (t >= 32 && t < 64)
        out[lane] = a[lane];
    if (partial && t >= 64 && t < 96)
        out[32 + lane] = a[lane];  // RACE: warp 2 is not ordered after warp 0's write
}

__global__ void many_barriers(int* out, int rounds)
{
    int t = threadIdx.x;
    int acc = 0;
    for (int r = 0; r < rounds; r++) {
        acc += r & 1;
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}

__global__ void one_write(int* out)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        out[0] = 1;
}

__global__ void busy(int* out, int which)
{
    long long start = clock64();
    while (clock64() - start < 200000000LL) {
    }
    out[which * blockDim.x + threadIdx.x] = which;
}

__global__ void volatile_handoff(int* data, int* flag, int* out)
{
    int t = threadIdx.x;
    if (blockIdx.x == 0) {
        data[t] = t + 100;
        __threadfence();
        __syncthreads();
        if (t == 0)
            *(volatile int*)flag = 1;
    } else {
        if (t == 0) {
            while (*(volatile int*)flag == 0) {
            }
            __threadfence();  // the acquire side: block 0's data is seen after the flag
        }
        __syncthreads();
        out[t] = data[t];
    }
}

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "";
    int *a, *out, *flag;
    const long long big = 16ll << 20;  // 16 Mi ints = 64 MiB
    cudaMalloc(&a, big * sizeof(int));
    cudaMalloc(&out, 1 << 20);
    cudaMalloc(&flag, sizeof(int));
    cudaMemset(out, 0, 1 << 20);
    cudaMemset(flag, 0, sizeof(int));
    if (!strcmp(mode, "budget")) {
        scale<<<(unsigned)((big + 255) / 256), 256>>>(a, big);
    } else if (!strcmp(mode, "named_ok")) {
        named_handoff<<<1, 128>>>(a, out, false);
    } else if (!strcmp(mode, "named_partial")) {
        named_handoff<<<1, 128>>>(a, out, true);
    } else if (!strcmp(mode, "many_barriers")) {
        many_barriers<<<2, 64>>>(out, 40000);
    } else if (!strcmp(mode, "huge_grid")) {
        one_write<<<(1u << 26) + 1, 32>>>(out);
    } else if (!strcmp(mode, "overlap")) {
        auto launch = [&](int which) {
            cudaStream_t s;
            cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
            busy<<<1, 32, 0, s>>>(out, which);
            cudaStreamSynchronize(s);
        };
        std::thread t0(launch, 0), t1(launch, 1);
        t0.join();
        t1.join();
    } else if (!strcmp(mode, "volatile_handoff")) {
        volatile_handoff<<<2, 64>>>(a, flag, out);
    } else {
        fprintf(stderr, "usage: limits budget|named_ok|named_partial|many_barriers|huge_grid|overlap|volatile_handoff\n");
        return 2;
    }
    cudaError_t e = cudaDeviceSynchronize();
    printf("limits %s: %s\n", mode, e == cudaSuccess ? "done" : cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
