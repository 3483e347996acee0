// café in Latin-1
extern "C" __global__ void reduce(const float* in, float* out, int n) {}
