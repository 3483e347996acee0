// Cheating attempt (or accident): never return. The deadline and the process-group kill end
// it; the trial counts as wrong, and the sanitizer runs hang too and earn nothing.
// (A plain `while (1) {}` does not work: ptxas deletes a loop with no effect, as the H200 run of
// docs/h200/run-6 showed. The clock is read on every turn, so this one really spins.)
extern "C" __global__ void reduce(const float* in, float* out, int n)
{
    long long start = clock64();
    while (clock64() >= start) {
    }
}
