// racegate buggy variant: the 3-point stencil computed in place in `out`.
//
// Wrong line: the one marked BUG. Each thread first copies in[i] to out[i], then (after a
// __syncthreads that orders only its own block) reads its neighbours from `out` and overwrites
// out[i] with the sum. A thread at a block's edge reads out[i-1] or out[i+1] of the neighbouring
// block, which may not have copied its input yet (the poison) or may already have replaced it
// with its own sum; inside a block, a thread reads a neighbour's element while that neighbour
// overwrites it. One block reading another block's output in the same launch: a race on global
// memory, so racecheck (shared memory only) reports nothing; stress sees wrong sums and
// globalcheck names the read and the write, between blocks and between warps.
//
//@ exercise: stencil
//@ breaks: kernels/stencil.cu
//@ bug: a block reads another block's output in the same launch (global memory)
//@ expect: stress=flag stress-nojitter=flag racecheck=clean globalcheck=flag
//@ entry: stencil3

extern "C" __global__ void stencil3(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i];
    __syncthreads();  // orders this block's copies, not the neighbouring blocks'
    if (i < n) {
        int left = i > 0 ? out[i - 1] : 0, right = i + 1 < n ? out[i + 1] : 0;  // BUG: neighbours' out, written concurrently
        out[i] = left + out[i] + right;
    }
}
