// Reference for kernels/deposit_mass*.cu: cell_mass[cell[i]] += mass[i], one thread, in index
// order, no shared memory and no atomics. With small integer masses every partial sum is exact,
// so the order of the kernel's atomics cannot change a bit of the result.
extern "C" __global__ void deposit_mass_ref(const int* cell, const float* mass, float* cell_mass,
                                            int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    for (int i = 0; i < n; ++i)
        cell_mass[cell[i]] += mass[i];
}
