// racegate buggy variant: a global counter incremented without an atomic.
//
// Wrong line: the one marked BUG. Every thread reads counters[0], adds one and writes it
// back; concurrent read-modify-writes overwrite each other and the final count is far too
// low. A lost update in global memory: invisible to racecheck (shared memory only), caught by
// the result check and by globalcheck, which names the line as a lost update between blocks.
//
//@ exercise: counter
//@ breaks: kernels/atomic_counter.cu
//@ bug: lost update (non-atomic read-modify-write on global memory)
//@ expect: stress=flag stress-nojitter=flag racecheck=clean globalcheck=flag
//@ entry: counter_single slots=1

extern "C" __global__ void counter_single(unsigned int* counters, int n, int slots)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        counters[0] += 1;  // BUG: not atomic: concurrent increments are lost
}

extern "C" __global__ void counter_scattered(unsigned int* counters, int n, int slots)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&counters[i % slots], 1u);
}
