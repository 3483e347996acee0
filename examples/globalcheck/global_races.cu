// Global-memory races that compute-sanitizer's racecheck cannot see (it watches shared memory
// only), each beside its correct twin, in one CUDA program. The program prints the same text
// on every run, right or wrong, so `racegate gate -- ./global_races` has no output oracle: only
// globalcheck sees these races. Build: nvcc -arch=sm_90 -lineinfo -o global_races global_races.cu
//
// Usage: ./global_races [KERNEL]   (default: all of them, one launch each)
#include <cstdio>
#include <cstring>

__device__ unsigned int device_counter;

// RACE (inter-block lost update): every thread of every block increments a __device__ counter
// with a plain read-modify-write.
__global__ void counter_plain(int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        device_counter += 1;  // RACE: lost update across blocks and warps
}

// Correct twin: the same count with an atomic.
__global__ void counter_atomic(int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&device_counter, 1u);
}

// RACE (intra-block, different warps): one block; warp 0 writes a[k], warp 1 reads a[k], no
// barrier between.
__global__ void warps_no_barrier(int* a, int* out)
{
    int t = threadIdx.x;
    if (t < 32)
        a[t] = t * 3;  // RACE: written by warp 0 ...
    if (t >= 32 && t < 64)
        out[t - 32] = a[t - 32];  // ... read by warp 1 with no __syncthreads between
}

// Correct twin: a barrier between the write and the read.
__global__ void warps_barrier(int* a, int* out)
{
    int t = threadIdx.x;
    if (t < 32)
        a[t] = t * 3;
    __syncthreads();
    if (t >= 32 && t < 64)
        out[t - 32] = a[t - 32];
}

// RACE (global histogram, plain increments).
__global__ void histogram_plain(const unsigned char* data, int n, unsigned int* bins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        bins[data[i] % 16] += 1;  // RACE: plain increment of a shared bin
}

// Correct twin.
__global__ void histogram_atomic(const unsigned char* data, int n, unsigned int* bins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&bins[data[i] % 16], 1u);
}

// RACE (cross-block read in the same launch): block b reads what block b-1 writes.
__global__ void neighbour_read(int* x, int* out)
{
    int b = blockIdx.x, t = threadIdx.x;
    x[b * blockDim.x + t] = b + t;
    if (b > 0)
        out[b * blockDim.x + t] = x[(b - 1) * blockDim.x + t];  // RACE: block b-1 may not have written yet
}

// Correct twin: each block reads only its own part.
__global__ void own_read(int* x, int* out)
{
    int b = blockIdx.x, t = threadIdx.x;
    x[b * blockDim.x + t] = b + t;
    __syncthreads();
    out[b * blockDim.x + t] = x[b * blockDim.x + (blockDim.x - 1 - t)];
}

// Correct: the last-block reduction (CUDA programming guide): each block writes its partial
// sum, fences, and takes a ticket; the block that draws the last ticket sums the partials.
__device__ unsigned int ticket;
__global__ void last_block_sum(const float* in, float* partial, float* out)
{
    __shared__ float s[256];
    __shared__ bool last;
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h)
            s[t] += s[t + h];
        __syncthreads();
    }
    if (t == 0) {
        partial[blockIdx.x] = s[0];
        __threadfence();
        unsigned int v = atomicInc(&ticket, gridDim.x);
        last = (v == gridDim.x - 1);
    }
    __syncthreads();
    if (last && t == 0) {
        float sum = 0;
        for (int b = 0; b < gridDim.x; b++)
            sum += partial[b];
        *out = sum;
        ticket = 0;
    }
}

// Flag handoff between two blocks: block 0 writes data and raises a flag with an atomic; block
// 1 polls the flag and then reads the data. With __threadfence before the flag (correct) and
// without it (the stretch class: globalcheck cannot see fences, see the README).
__global__ void handoff_fenced(int* data, int* flag, int* out)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        data[0] = 42;
        __threadfence();
        atomicExch(flag, 1);
    }
    if (blockIdx.x == 1 && threadIdx.x == 0) {
        while (atomicAdd(flag, 0) == 0) {
        }
        out[0] = data[0];
    }
}

// RACE (intra-warp): lane 0 writes, lane 1 reads, no __syncwarp between (warning level).
__global__ void lanes_no_syncwarp(int* a, int* out)
{
    int t = threadIdx.x;
    if (t == 0)
        a[0] = 7;  // RACE: lane 0 writes ...
    if (t == 1)
        out[0] = a[0];  // ... lane 1 reads, no __syncwarp between
}

__global__ void lanes_syncwarp(int* a, int* out)
{
    int t = threadIdx.x;
    if (t == 0)
        a[0] = 7;
    __syncwarp();
    if (t == 1)
        out[0] = a[0];
}

static bool want(const char* only, const char* name) { return only == nullptr || strcmp(only, name) == 0; }

int main(int argc, char** argv)
{
    const char* only = argc > 1 ? argv[1] : nullptr;
    const int n = 64 * 256;
    int *a, *out, *flag;
    unsigned int* bins;
    unsigned char* bytes;
    float *fin, *partial, *fout;
    cudaMalloc(&a, n * sizeof(int));
    cudaMalloc(&out, n * sizeof(int));
    cudaMalloc(&flag, sizeof(int));
    cudaMalloc(&bins, 16 * sizeof(unsigned int));
    cudaMalloc(&bytes, n);
    cudaMalloc(&fin, n * sizeof(float));
    cudaMalloc(&partial, 64 * sizeof(float));
    cudaMalloc(&fout, sizeof(float));
    cudaMemset(a, 0, n * sizeof(int));
    cudaMemset(out, 0, n * sizeof(int));
    cudaMemset(flag, 0, sizeof(int));
    cudaMemset(bins, 0, 16 * sizeof(unsigned int));
    cudaMemset(bytes, 3, n);
    cudaMemset(fin, 0, n * sizeof(float));
    if (want(only, "counter_plain")) counter_plain<<<64, 256>>>(n);
    if (want(only, "counter_atomic")) counter_atomic<<<64, 256>>>(n);
    if (want(only, "warps_no_barrier")) warps_no_barrier<<<1, 64>>>(a, out);
    if (want(only, "warps_barrier")) warps_barrier<<<1, 64>>>(a, out);
    if (want(only, "histogram_plain")) histogram_plain<<<64, 256>>>(bytes, n, bins);
    if (want(only, "histogram_atomic")) histogram_atomic<<<64, 256>>>(bytes, n, bins);
    if (want(only, "neighbour_read")) neighbour_read<<<64, 256>>>(a, out);
    if (want(only, "own_read")) own_read<<<64, 256>>>(a, out);
    if (want(only, "last_block_sum")) last_block_sum<<<64, 256>>>(fin, partial, fout);
    if (want(only, "handoff_fenced")) handoff_fenced<<<2, 32>>>(a, flag, out);
    if (want(only, "lanes_no_syncwarp")) lanes_no_syncwarp<<<1, 32>>>(a, out);
    if (want(only, "lanes_syncwarp")) lanes_syncwarp<<<1, 32>>>(a, out);
    cudaError_t e = cudaDeviceSynchronize();
    printf("global_races: %s\n", e == cudaSuccess ? "done" : cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
