// The Jacobi sweep of kernels/jacobi_interior.cu with an off-by-one in the bottom bound: the
// last row, which is boundary, is updated as if it were interior.
//
// Wrong line: the one marked BUG (`y < ny` instead of `y < ny - 1`). Threads of row ny - 1
// read their south neighbour u[c + nx], which is past the end of u (up to one row out of
// bounds), and overwrite the fixed boundary row of u_new with whatever they read.
// Must be caught by: memcheck ("Invalid __global__ read" of u, from row ny - 1; any ny >= 3
// shows it, ragged or not).
// Expected to ESCAPE stress: the manifest declares u_new partly unwritten (`unwritten = true`),
// so the oracle compares only the elements the reference writes, the interior, and those are
// right; the garbage lands in the boundary row the oracle does not look at, and the
// out-of-bounds read lands in allocation padding rather than racegate's own copies. (If u_new
// were declared `inout` with generated boundary values, the reference would keep them and
// stress would see the overwritten row.) racecheck and initcheck have nothing to see.
//
// Launch: block 16 x 16, grid ceil_div(nx, 16) x ceil_div(ny, 16), as the correct kernel.
extern "C" __global__ void jacobi_interior_oob(const float* u, float* u_new, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= 1 && x < nx - 1 && y >= 1 && y < ny) {  // BUG: y < ny lets the boundary row ny - 1 in
        int c = y * nx + x;
        u_new[c] = 0.25f * (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx]);
    }
}
