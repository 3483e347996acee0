// racegate buggy variant: thread 0 reads the block's shared count right after its own atomicAdd.
//
// Wrong line: the one marked BUG. The barrier between the block's atomicAdds and thread 0's
// plain read of `count` is gone: thread 0 (warp 0) may read the count before the other warps have
// added to it, and the global total comes out short. racecheck does not report a plain access
// racing with an atomic one, and the result is wrong only when another warp is late, which is
// rare (warps of a block run nearly together). sharedcheck must flag the pair: the read of
// `count` at the BUG line against another warp's atomicAdd, with no __syncthreads between them.
//
//@ exercise: counter
//@ breaks: kernels/counter_block.cu
//@ bug: plain read of a shared counter that other warps update atomically, with no barrier between
//@ expect: stress=may stress-nojitter=may racecheck=may sharedcheck=flag
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
    if (threadIdx.x == 0)
        atomicAdd(&counters[0], count);  // BUG: no __syncthreads() between the block's adds and this read
}
