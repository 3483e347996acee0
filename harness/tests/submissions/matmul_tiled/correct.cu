// A correct submission: out-of-range loads become 0 and every thread reaches every barrier.
#define T 16

extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float a[T][T], b[T][T];
    int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;
    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        a[threadIdx.y][threadIdx.x] = (r < M && k0 + threadIdx.x < K) ? A[r * K + k0 + threadIdx.x] : 0.0f;
        b[threadIdx.y][threadIdx.x] = (k0 + threadIdx.y < K && c < N) ? B[(k0 + threadIdx.y) * N + c] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; ++k)
            sum += a[threadIdx.y][k] * b[k][threadIdx.x];
        __syncthreads();
    }
    if (r < M && c < N)
        C[r * N + c] = sum;
}
