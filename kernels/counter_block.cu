// racegate: a per-block count in shared memory, merged with one global atomic per block.
//
// Computes counters[0] = n (every i < n counted once; slots = 1, as counter_single). The host
// clears `counters` before the launch. Launch: block (B), grid (ceil(n / B)). Each thread adds 1
// to its block's __shared__ count with a shared atomic, and thread 0 adds the block's total to
// the global counter: one global atomic per block instead of one per thread. Two barriers: the
// count is zero before anyone adds to it, and every add is done before thread 0 reads it.
//
//@ exercise: counter
//@ entry: counter_block slots=1

extern "C" __global__ void counter_block(unsigned int* counters, int n, int slots)
{
    __shared__ unsigned int count;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0)
        count = 0;
    __syncthreads();  // the count is zero before anyone adds to it
    if (i < n)
        atomicAdd(&count, 1u);
    __syncthreads();  // every add of the block is done before thread 0 reads the count
    if (threadIdx.x == 0)
        atomicAdd(&counters[0], count);
}
