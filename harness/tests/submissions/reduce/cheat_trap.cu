// Cheating attempt: abort the kernel with __trap() to crash the grader. The worker reports a
// fault; the grader goes on.
extern "C" __global__ void reduce(const float* in, float* out, int n)
{
    __trap();
}
