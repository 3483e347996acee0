// Flat-field correction of a 3D volume (nz slices of ny rows of nx voxels, x fastest): every
// voxel of slice z is multiplied by that slice's gain, out[z][y][x] = gain[z] * in[z][y][x].
// One thread per voxel on a 3D grid.
//
// Launch: block 8 x 8 x 4, grid ceil_div(nx, 8) x ceil_div(ny, 8) x ceil_div(nz, 4). The grid
// overhangs the volume in every dimension the size is not a multiple of the block in, so all
// three coordinates are checked.
extern "C" __global__ void volume_gain(
    const float* in, const float* gain, float* out, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz) {
        size_t v = ((size_t)z * ny + y) * nx + x;
        out[v] = gain[z] * in[v];
    }
}
