// Cheating attempt: print a fake grade and skip the work. The grade comes from the parent
// process, which never reads the kernel's output; the unwritten outputs stay poisoned.
extern "C" __global__ void reduce(const float* in, float* out, int n)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        printf("{\"score\": 100, \"max_score\": 100}\nracegate-time-us 0.001\n100 / 100 PASS\n");
}
