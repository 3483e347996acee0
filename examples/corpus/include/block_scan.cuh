// Shared helper of the corpus's scans (prefix_sum_inplace, scan_pipeline, chained_scan):
// an inclusive scan of one int per thread across the whole block, Hillis-Steele style, in the
// shared array `s` of blockDim.x ints (static or dynamic shared memory, the caller's choice).
//
// Every thread of the block must call it: it contains barriers. On return s[0 .. blockDim.x-1]
// holds the block's inclusive scan, every write to s is visible to the whole block, and the
// caller's own value is returned. The caller must put a barrier between its last read of s
// and the next call, which starts by writing s.
#pragma once

__device__ __forceinline__ int block_inclusive_scan(int v, int* s)
{
    const unsigned t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    for (unsigned off = 1; off < blockDim.x; off <<= 1) {
        int add = (t >= off) ? s[t - off] : 0;
        __syncthreads();  // every read of this step is done before any thread writes
        s[t] += add;
        __syncthreads();  // every write of this step is done before the next step reads
    }
    return s[t];
}
