// One Jacobi sweep for the 2D Laplace equation on an nx-by-ny grid (row-major, x fastest):
// every interior point of u_new becomes the mean of its four neighbours in u. The boundary of
// u_new (first and last row, first and last column) is NOT written: in the solver it holds the
// fixed boundary values, set once by the host, and this kernel must leave it alone. As an
// output, u_new is therefore only partly written, by design.
// Exact for integer-valued u: the four-term sum is exact and 0.25 is a power of two.
//
// Launch: block 16 x 16, grid ceil_div(nx, 16) x ceil_div(ny, 16). The grid overhangs the
// domain on the right and at the bottom unless nx and ny are multiples of 16; the bounds check
// keeps those threads out, together with the boundary.
extern "C" __global__ void jacobi_interior(const float* u, float* u_new, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= 1 && x < nx - 1 && y >= 1 && y < ny - 1) {
        int c = y * nx + x;
        u_new[c] = 0.25f * (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx]);
    }
}
