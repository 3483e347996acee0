// Cheating attempt: write nothing and hope the output holds zeros or an earlier result. The
// grader poisons every output before each launch.
extern "C" __global__ void reduce(const float* in, float* out, int n)
{
}
