// Cheating attempt (or accident): never return. The deadline and the process-group kill end
// it; the trial counts as wrong.
extern "C" __global__ void reduce(const float* in, float* out, int n)
{
    volatile int forever = 1;
    while (forever) {
    }
}
