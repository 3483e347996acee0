// streamcheck's cost record (issue 29: at most 2x a plain run): 10,000 kernel launches and
// 10,000 async copies on two streams, each copy ordered after its kernel by the stream, each
// kernel after the previous copy from the other stream by an event wait, every 1,000 rounds a
// stream synchronize and a host read of the pinned results. The program is correct:
// streamcheck must say clean. It prints `loop_ms N` (the wall time of the launch loop alone,
// without CUDA's and the tool's start-up) so that ci/streams-cost can set the loop's cost beside
// the whole run's.
//
// streamcheck: clean
// Build: nvcc -arch=sm_90 -O2 -g -lineinfo -o launches_10k launches_10k.cu
// Run: launches_10k [ROUNDS]   (10000 by default: that many launches and as many copies)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 2; } } while (0)

__global__ void step(float* d, int n, float v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        d[i] = d[i] * 0.5f + v;
}

int main(int argc, char** argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 10000;
    const int n = 1024;  // small: the cost is the calls', not the GPU's
    float *d[2], *h[2];
    cudaStream_t s[2];
    cudaEvent_t done[2];
    for (int k = 0; k < 2; k++) {
        CHECK(cudaMalloc(&d[k], n * sizeof(float)));
        CHECK(cudaMallocHost(&h[k], n * sizeof(float)));
        CHECK(cudaMemset(d[k], 0, n * sizeof(float)));
        CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
        CHECK(cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming));
    }
    CHECK(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    double sum = 0;
    for (int r = 0; r < rounds; r++) {
        int k = r & 1, o = k ^ 1;
        if (r > 0)
            CHECK(cudaStreamWaitEvent(s[k], done[o], 0));  // after the other stream's last copy
        step<<<n / 256, 256, 0, s[k]>>>(d[k], n, (float)r);
        CHECK(cudaMemcpyAsync(h[k], d[k], n * sizeof(float), cudaMemcpyDeviceToHost, s[k]));
        CHECK(cudaEventRecord(done[k], s[k]));
        if (r % 1000 == 999) {
            CHECK(cudaStreamSynchronize(s[0]));
            CHECK(cudaStreamSynchronize(s[1]));
            sum += h[0][1] + h[1][1];
        }
    }
    CHECK(cudaDeviceSynchronize());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    printf("rounds %d launches %d copies %d\n", rounds, rounds, rounds);
    printf("loop_ms %.3f\n", ms);
    printf("check %f\n", sum + h[0][1] + h[1][1]);
    for (int k = 0; k < 2; k++) {
        CHECK(cudaEventDestroy(done[k]));
        CHECK(cudaStreamDestroy(s[k]));
        CHECK(cudaFreeHost(h[k]));
        CHECK(cudaFree(d[k]));
    }
    return 0;
}
