// racegate buggy variant: the tiled stencil's threads past n leave their tile element unwritten.
//
// Wrong line: the one marked BUG. Threads with i >= n skip their load instead of writing a 0, so
// in a ragged last block (n not a multiple of B) the element after the last input, tile[t + 1]
// of thread i = n - 1, is written by no thread: that thread reads whatever shared memory held
// (racegate's poison) as its right neighbour. Only the edge size shows it: with n a multiple of B
// the last thread of the block writes that slot as the right halo. initcheck checks global memory
// only and racecheck sees no conflicting pair; stress sees it when the poison is not 0.
// sharedcheck must flag the read at the line that sums the tile (a read of shared memory no
// thread of the block wrote).
//
//@ exercise: stencil
//@ breaks: kernels/stencil_tiled.cu
//@ bug: tile element past the end never written, read as a halo (uninitialized shared memory)
//@ expect: stress=may stress-nojitter=may sharedcheck=flag
//@ entry: stencil3_tiled

#define MAX_BLOCK 1024

extern "C" __global__ void stencil3_tiled(const int* in, int* out, int n)
{
    __shared__ int tile[MAX_BLOCK + 2];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.x + 1;
    if (i < n) tile[t] = in[i];  // BUG: threads past n must write 0 here (the last thread reads it)
    if (threadIdx.x == 0)
        tile[0] = (i > 0 && i - 1 < n) ? in[i - 1] : 0;
    if (threadIdx.x == blockDim.x - 1)
        tile[t + 1] = i + 1 < n ? in[i + 1] : 0;
    __syncthreads();  // the tile and both halos are loaded before anyone reads them
    if (i < n)
        out[i] = tile[t - 1] + tile[t] + tile[t + 1];
}
