// The 3D flat-field correction of kernels/volume_gain.cu with the z bound left out of the check,
// as if the grid fitted the volume exactly in z.
//
// Wrong line: the one marked BUG. When nz is not a multiple of 4, the last z-layer of blocks
// has threads with z >= nz: they read gain[z] and in[v] past the end of their buffers and write
// out[v] past the end of `out` (up to three slices out of bounds). With nz a multiple of 4 the
// kernel is right, so the sizes must be ragged in z, at random and in sanitize_sizes.
// Must be caught by: memcheck ("Invalid __global__ write" of out, "Invalid __global__ read" of
// gain and in). Stress sees it only if the stray writes happen to land in one of racegate's own
// device copies (racegate then reports a write outside the buffers); the elements the oracle
// compares are all right.
//
// Launch: block 8 x 8 x 4, grid ceil_div(nx, 8) x ceil_div(ny, 8) x ceil_div(nz, 4), as the
// correct kernel.
extern "C" __global__ void volume_gain_oob(
    const float* in, const float* gain, float* out, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny) {  // BUG: no z < nz: runs past the volume when nz % 4 != 0
        size_t v = ((size_t)z * ny + y) * nx + x;
        out[v] = gain[z] * in[v];
    }
}
