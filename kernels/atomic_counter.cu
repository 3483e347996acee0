// racegate: atomic contention: every thread on one address vs. scattered addresses.
//
// Computes counters[j] = number of i < n with i % slots == j (slots = 1 for counter_single,
// which sends every thread to counters[0]). The host clears `counters` before the launch.
// Launch: block (256), grid (ceil(n / 256)).
// Both kernels are correct; they differ in contention. On one address every atomicAdd of
// the grid is serialized at one memory location; spread over `slots` addresses the atomics
// proceed in parallel. Compare their run times to see the cost of contention.
//
//@ exercise: counter
//@ entry: counter_single slots=1
//@ entry: counter_scattered slots=1024

extern "C" __global__ void counter_single(unsigned int* counters, int n, int slots)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&counters[0], 1u);
}

extern "C" __global__ void counter_scattered(unsigned int* counters, int n, int slots)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&counters[i % slots], 1u);
}
