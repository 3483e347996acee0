// Reference for kernels/volume_gain*.cu: out[v] = gain[z] * in[v] over a flat index with a
// grid-stride loop, right for any launch geometry (it runs with the kernel's 3D grid).
extern "C" __global__ void volume_gain_ref(const float* in, const float* gain, float* out,
                                           int nx, int ny, int nz)
{
    const long long threads = (long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x *
                              blockDim.y * blockDim.z;
    const long long block = ((long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x +
                            blockIdx.x;
    const long long lane = ((long long)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x +
                           threadIdx.x;
    const long long slice = (long long)nx * ny;
    for (long long v = block * blockDim.x * blockDim.y * blockDim.z + lane; v < slice * nz;
         v += threads)
        out[v] = gain[v / slice] * in[v];
}
