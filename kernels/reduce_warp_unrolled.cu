// racegate: block sum, step 3 of the reduction ladder: the last warp unrolled, done right.
//
// Computes out[b] = in[b * BLOCK] + ... + in[b * BLOCK + BLOCK - 1] for every block b (elements
// past n count as 0). Launch: block (BLOCK), grid (ceil(n / BLOCK)); BLOCK = 256.
// Once 64 partial sums are left, one warp finishes without __syncthreads(). Since Volta,
// the lanes of a warp are not guaranteed to run in lockstep, so the classic unrolled code
// needs two things: a `volatile` pointer (every read really goes to shared memory) and a
// __syncwarp() between a step's reads and its writes, and between its writes and the next
// step's reads. Each lane keeps its running sum in a register.
//
//@ exercise: reduce
//@ entry: reduce_warp_unrolled block=256

template <int BLOCK>
__device__ void reduce_warp_unrolled_block(const float* in, float* out, int n)
{
    __shared__ float s[BLOCK];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned half = BLOCK / 2; half > 32; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];
        __syncthreads();
    }
    if (tid < 32) {
        volatile float* v = s;
        float sum = v[tid];
        sum += v[tid + 32]; __syncwarp(); v[tid] = sum; __syncwarp();
        sum += v[tid + 16]; __syncwarp(); v[tid] = sum; __syncwarp();
        sum += v[tid + 8];  __syncwarp(); v[tid] = sum; __syncwarp();
        sum += v[tid + 4];  __syncwarp(); v[tid] = sum; __syncwarp();
        sum += v[tid + 2];  __syncwarp(); v[tid] = sum; __syncwarp();
        sum += v[tid + 1];
        if (tid == 0)
            out[blockIdx.x] = sum;
    }
}

extern "C" __global__ void reduce_warp_unrolled(const float* in, float* out, int n)
{
    reduce_warp_unrolled_block<256>(in, out, n);
}
