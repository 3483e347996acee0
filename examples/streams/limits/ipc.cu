// Memory shared with another process: the parent exports a buffer with cudaIpcGetMemHandle and
// starts itself again (a fresh process, not a fork) to open it with cudaIpcOpenMemHandle and
// write it with a kernel. Neither process's callbacks see the other's accesses, so streamcheck
// must say inconclusive (IPC), never clean. Where IPC is not supported (cudaIpcGetMemHandle
// fails, as it may on some one-GPU machines and containers) the program says so and exits 3:
// streamcheck must still say inconclusive (the export was attempted; a failed call leaves
// nothing to judge), never clean.
//
// streamcheck: inconclusive
// why: IPC|exited 3
// Build: nvcc -arch=sm_90 -g -lineinfo -o ipc ipc.cu
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 2; } } while (0)

__global__ void fill(float* d, int n, float v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        d[i] = v;
}

static const int n = 1 << 16;

// The child: open the parent's buffer (its handle in hex), fill it, close it.
static int child(const char* hex)
{
    cudaIpcMemHandle_t h;
    if (strlen(hex) != 2 * sizeof h)
        return 4;
    for (size_t i = 0; i < sizeof h; i++) {
        unsigned v = 0;
        sscanf(hex + 2 * i, "%2x", &v);
        ((unsigned char*)&h)[i] = (unsigned char)v;
    }
    float* d = nullptr;
    CHECK(cudaIpcOpenMemHandle((void**)&d, h, cudaIpcMemLazyEnablePeerAccess));
    fill<<<n / 256, 256>>>(d, n, 7.0f);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaIpcCloseMemHandle(d));
    return 0;
}

int main(int argc, char** argv)
{
    if (argc == 3 && strcmp(argv[1], "child") == 0)
        return child(argv[2]);
    float *d, *h;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    CHECK(cudaMemset(d, 0, n * sizeof(float)));
    CHECK(cudaDeviceSynchronize());
    cudaIpcMemHandle_t handle;
    cudaError_t e = cudaIpcGetMemHandle(&handle, d);
    if (e != cudaSuccess) {
        printf("ipc: cudaIpcGetMemHandle failed (%s): IPC is not supported here; streamcheck must still not say clean\n",
               cudaGetErrorString(e));
        return 3;
    }
    char hex[2 * sizeof handle + 1];
    for (size_t i = 0; i < sizeof handle; i++)
        snprintf(hex + 2 * i, 3, "%02x", ((unsigned char*)&handle)[i]);
    char self[4096] = {0};
    if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0)
        return 5;
    char arg1[] = "child";
    char* args[] = {self, arg1, hex, nullptr};
    pid_t pid;
    if (posix_spawn(&pid, self, nullptr, nullptr, args, environ) != 0) {
        printf("ipc: could not start the child\n");
        return 5;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("ipc: the child failed (status %d): IPC may not work here; streamcheck must still not say clean\n", status);
        return 3;
    }
    CHECK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    printf("h[1] %f (want 7.0, written by the other process)\n", h[1]);
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(d));
    return 0;
}
