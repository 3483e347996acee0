// Reference for kernels/jacobi_interior*.cu: the same sweep, one thread per interior point by a
// grid-stride loop over a flat index, so it is right for any launch geometry (it is launched
// with the kernel's 2D grid). The boundary of u_new is left unwritten, as in the kernel.
extern "C" __global__ void jacobi_interior_ref(const float* u, float* u_new, int nx, int ny)
{
    const long long threads = (long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x *
                              blockDim.y * blockDim.z;
    const long long block = ((long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x +
                            blockIdx.x;
    const long long lane = ((long long)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x +
                           threadIdx.x;
    const long long total = (long long)nx * ny;
    for (long long c = block * blockDim.x * blockDim.y * blockDim.z + lane; c < total;
         c += threads) {
        const int x = (int)(c % nx), y = (int)(c / nx);
        if (x == 0 || x == nx - 1 || y == 0 || y == ny - 1)
            continue;
        u_new[c] = (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx]) / 4.0f;
    }
}
