extern "C" __global__ void reduce(const float* in, float* out, int n)
{
    long long start = clock64();
    while (clock64() >= start) {
    }
}
