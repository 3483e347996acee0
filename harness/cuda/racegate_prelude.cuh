// racegate prelude: force-included by NVRTC (--pre-include) into every kernel racegate builds.
// It adds nothing to the kernel under test unless RACEGATE_JITTER is defined; line numbers of
// the kernel's own file are unchanged, because this is a separate file.

// Fills the shared memory of an SM with `pattern` (0xFFFFFFFF: NaN as float, -1 as int; then
// zero; then a seeded random word: racegate changes it from trial to trial). racegate launches it
// before each stress trial, so a kernel that reads shared memory it never wrote reads poison that
// changes between runs instead of a lucky zero, or the same garbage every time. Launch: one block
// of 1024 threads per SM, dynamic shared memory = the per-block opt-in maximum.
extern "C" __global__ void racegate_poison_shared(unsigned int words, unsigned int pattern)
{
    extern __shared__ unsigned int racegate_smem[];
    for (unsigned int i = threadIdx.x; i < words; i += blockDim.x)
        racegate_smem[i] = pattern;
}

// Counts where `a` and `b` differ into *count (16-byte words, then bytes; only zero or not
// matters), so results are checked on the device where the data is large, and only a counter
// crosses the bus. racegate reads the data back only when the count is not zero, to report which
// elements are wrong. 16-byte streaming loads keep enough bytes in flight to run near the
// memory's bandwidth: the compare is most of what a trial adds to a bandwidth-bound kernel.
extern "C" __global__ void racegate_diff(const unsigned char* a, const unsigned char* b,
                                         unsigned long long n, unsigned int* count)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long done = 0ull;
    unsigned int local = 0;
    if ((((unsigned long long)a | (unsigned long long)b) & 15ull) == 0ull) {
        unsigned long long vecs = n / 16ull;
        const uint4* va = (const uint4*)a;
        const uint4* vb = (const uint4*)b;
        for (unsigned long long w = i; w < vecs; w += stride) {
            uint4 x = __ldcs(va + w), y = __ldcs(vb + w);
            local += (x.x != y.x) + (x.y != y.y) + (x.z != y.z) + (x.w != y.w);
        }
        done = vecs * 16ull;
    } else if ((((unsigned long long)a | (unsigned long long)b) & 3ull) == 0ull) {
        unsigned long long words = n / 4ull;
        const unsigned int* wa = (const unsigned int*)a;
        const unsigned int* wb = (const unsigned int*)b;
        for (unsigned long long w = i; w < words; w += stride)
            local += (wa[w] != wb[w]);
        done = words * 4ull;
    }
    for (unsigned long long j = done + i; j < n; j += stride)
        local += (a[j] != b[j]);
    if (local != 0)
        atomicAdd(count, local);
}

// The value of an IEEE binary float of `ebits` exponent and `mbits` mantissa bits, as a double,
// built from the bits with integer operations and ldexp (exact for half, bfloat16 and float,
// and untouched by flush-to-zero options, which act on single-precision arithmetic only).
__device__ __forceinline__ double racegate_to_double(unsigned long long bits, unsigned int ebits,
                                                     unsigned int mbits)
{
    unsigned long long m = bits & ((1ull << mbits) - 1ull);
    unsigned int e = (unsigned int)(bits >> mbits) & ((1u << ebits) - 1u);
    int neg = (int)((bits >> (mbits + ebits)) & 1ull);
    int bias = (1 << (ebits - 1u)) - 1;
    double v;
    if (e == (1u << ebits) - 1u)
        v = __longlong_as_double(m ? 0x7ff8000000000000ll : 0x7ff0000000000000ll);
    else if (e == 0u)
        v = ldexp((double)m, 1 - bias - (int)mbits);
    else
        v = ldexp((double)(m | (1ull << mbits)), (int)e - bias - (int)mbits);
    return neg ? -v : v;
}

// The bits of a float of `size` bytes as an ordered integer (the host oracle's ulp distance).
__device__ __forceinline__ long long racegate_ordered(unsigned long long bits, unsigned int size)
{
    unsigned int top = size * 8u - 1u;
    long long mag = (long long)(bits & ((top == 63u) ? 0x7fffffffffffffffull : ((1ull << top) - 1ull)));
    return ((bits >> top) & 1ull) ? -mag : mag;
}

__device__ __forceinline__ unsigned long long racegate_load(const unsigned char* p,
                                                            unsigned long long i,
                                                            unsigned int size)
{
    switch (size) {
    case 1: return p[i];
    case 2: return ((const unsigned short*)p)[i];
    case 4: return ((const unsigned int*)p)[i];
    default: return ((const unsigned long long*)p)[i];
    }
}

// Counts the elements of `got` that the host oracle would call wrong against `want`, into
// *count: elementwise, with the oracle's rules. kind 0: bitwise; 1 half, 2 bfloat16, 3 float,
// 4 double: equal bits, else neither NaN and |w - g| <= abs_tol or <= rel_tol * |w|, else an ulp
// distance <= ulp_tol (when not 0). `unwritten`: an element the judge's run left as all-0xFF
// bytes is free. Only the first `n` elements count (a prefix).
extern "C" __global__ void racegate_diff_elems(const unsigned char* got, const unsigned char* want,
                                               unsigned long long n, unsigned int size,
                                               unsigned int kind, unsigned int unwritten,
                                               double abs_tol, double rel_tol,
                                               unsigned long long ulp_tol, unsigned int* count)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long ones = size == 8u ? ~0ull : ((1ull << (8u * size)) - 1ull);
    unsigned int local = 0;
    for (; i < n; i += stride) {
        unsigned long long w = racegate_load(want, i, size), g = racegate_load(got, i, size);
        if (w == g || (unwritten && w == ones))
            continue;
        if (kind == 0u) {
            local++;
            continue;
        }
        double wd, gd;
        if (kind == 4u) {
            wd = __longlong_as_double((long long)w);
            gd = __longlong_as_double((long long)g);
        } else {
            unsigned int eb = kind == 1u ? 5u : 8u, mb = kind == 1u ? 10u : (kind == 2u ? 7u : 23u);
            wd = racegate_to_double(w, eb, mb);
            gd = racegate_to_double(g, eb, mb);
        }
        if (isnan(wd) || isnan(gd)) {
            local++;
            continue;
        }
        double d = fabs(wd - gd);
        if (d <= abs_tol || d <= rel_tol * fabs(wd))
            continue;
        if (ulp_tol != 0ull) {
            long long a = racegate_ordered(w, size), b = racegate_ordered(g, size);
            unsigned long long u = a > b ? (unsigned long long)(a - b) : (unsigned long long)(b - a);
            if (u <= ulp_tol)
                continue;
        }
        local++;
    }
    if (local != 0)
        atomicAdd(count, local);
}

// Adds a hash of every element of `a` (its bits, zero-extended) into *sum: two buffers with the
// same multiset of elements have the same sum, in any order. racegate compares it with the
// expected output's sum (computed on the host, run/compare.rs mirrors this hash) and reads the
// data back to sort and compare only when the sums differ.
extern "C" __global__ void racegate_hash_elems(const unsigned char* a, unsigned long long n,
                                               unsigned int size, unsigned long long* sum)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long local = 0;
    for (; i < n; i += stride) {
        unsigned long long z = racegate_load(a, i, size) + 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        local += z ^ (z >> 31);
    }
    if (local != 0ull)
        atomicAdd(sum, local);
}

#ifdef RACEGATE_JITTER
// Schedule jitter. Every __syncthreads() of the kernel becomes the real barrier followed by a
// look at racegate_jitter_plan, which racegate writes before each launch (its host side,
// run/schedule/, draws it from the trial's seed and mirrors racegate_mix bit for bit):
//
// mode 2, pct (the default): a few change points per launch. Point p names a barrier instance
//   (a warp's n-th barrier of the launch), a subset of a block's warps (bit w: warp w) and a
//   delay; at that instance those warps sleep in the blocks that take part (a hash of the
//   block under block_threshold), so the block's other warps run ahead past the barrier.
//   Every other barrier costs a few instructions. Warp 0 of block 0 also reports how many
//   barriers it went through (racegate_jitter_instances), so the host knows where points can go.
// mode 1, dense (the old jitter): three warps in four sleep 0 to ~4 us at every barrier, each
//   for its own time, hashed from the seed, the block, the warp, the barrier's line and the clock.
//   On the H200, per-thread delays of a few hundred ns changed nothing; per-warp microseconds did.
// mode 0: the real barrier only.
struct racegate_plan_t {
    unsigned int mode;
    unsigned int points;
    unsigned int block_threshold;
    unsigned int instance_mask; // bit i: some point is at instance i (bit 31: at 31 or later)
    unsigned long long seed;
    unsigned int instance[4];
    unsigned int warps[4];
    unsigned int delay_ns[4];
};
__constant__ racegate_plan_t racegate_jitter_plan;
__device__ unsigned long long racegate_jitter_seed;
__device__ unsigned int racegate_jitter_instances;
// Per warp of a resident block: (a tag of the block, barriers this warp went through). The tag
// tells a slot this block wrote from one a previous block (or the shared-memory poison) left.
__shared__ unsigned long long racegate_warp_barriers[32];

__device__ __forceinline__ unsigned int racegate_mix(unsigned long long x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (unsigned int)x;
}

// Whether a block takes part in a launch's change points: this hash of the block and the seed
// at most block_threshold (every block at 0xffffffff). One decision per block for all points,
// taken before anything else, so the blocks that do not take part pay a few instructions a
// barrier. Mirrored by block_hash in run/schedule/.
__device__ __forceinline__ unsigned int racegate_block_hash(unsigned int block)
{
    unsigned long long seed = racegate_jitter_plan.seed;
    unsigned int h = (block * 0x9e3779b1u) ^ (unsigned int)seed ^ (unsigned int)(seed >> 32);
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

__device__ __forceinline__ void racegate_sleep(unsigned int ns)
{
    while (ns > 0u) {
        unsigned int s = ns < 1000000u ? ns : 1000000u;
        __nanosleep(s);
        ns -= s;
    }
}

// One pct visit of a barrier: count it for this warp, then sleep if a change point of the plan
// names this instance, this warp and (by a hash under block_threshold) this block. Inlined, and
// the block's tag is one multiply: every barrier of a jittered launch pays this, so it must cost
// a few instructions (issue 26; `racegate bench` measures it beside the kernel without jitter).
// RACEGATE_PCT_NOINLINE builds the earlier out-of-line version with a 64-bit hashed tag, kept
// only so `bench` can show both side by side; RACEGATE_PCT_NOCOUNT (bench only) leaves out the
// counting of barrier instances, to show what it costs.
#ifdef RACEGATE_PCT_NOINLINE
#define RACEGATE_PCT_INLINE __noinline__
#define RACEGATE_PCT_TAG(block)                                                                   \
    (racegate_mix(racegate_jitter_plan.seed ^ ((unsigned long long)(block) << 20) ^ 0x5bd1e995ull) \
     | 1u)
#else
#define RACEGATE_PCT_INLINE __forceinline__
// Distinct for blocks that differ below 2^32, up to the `| 1u` (an odd multiplier is invertible
// mod 2^32; the or-ed bit pairs blocks 244002641 apart), so a slot the previous block on this SM
// left is taken for this block's only in grids of more than 244 million blocks, and then a count
// goes on instead of restarting: a schedule's heuristic, never a verdict.
#define RACEGATE_PCT_TAG(block) ((((block) * 0x9e3779b1u) ^ (unsigned int)racegate_jitter_plan.seed) | 1u)
#endif
__device__ RACEGATE_PCT_INLINE void racegate_pct_point(unsigned int tid, unsigned int block)
{
    // A block that takes part in no point skips the rest; block 0 still counts its barriers
    // (the host sizes the next plans from that count).
    bool part = racegate_block_hash(block) <= racegate_jitter_plan.block_threshold;
    if (!part && block != 0u)
        return;
    unsigned int warp = tid / 32u, lane = tid % 32u;
    // One lane per converged group of the warp counts the visit (lanes that arrive split
    // count once per group: the schedule is a heuristic, never a correctness matter).
#ifdef RACEGATE_PCT_NOCOUNT
    // `racegate bench` only: every visit is instance 0, nothing counted (what the count costs).
    (void)lane;
    unsigned int instance = 0u;
#else
    unsigned int active = __activemask();
    unsigned int leader = __ffs(active) - 1u;
    unsigned int tag = RACEGATE_PCT_TAG(block);
    unsigned int instance = 0u;
    if (lane == leader) {
        unsigned long long slot = racegate_warp_barriers[warp];
        instance = ((unsigned int)(slot >> 32) == tag) ? (unsigned int)slot : 0u;
        racegate_warp_barriers[warp] = ((unsigned long long)tag << 32) | (instance + 1u);
        if (block == 0u && warp == 0u)
            racegate_jitter_instances = instance + 1u;
    }
    instance = __shfl_sync(active, instance, leader);
#endif
    // Most barriers have no point: one look at the mask, no loop.
    unsigned int bit = instance < 31u ? instance : 31u;
    if (!part || ((racegate_jitter_plan.instance_mask >> bit) & 1u) == 0u)
        return;
    unsigned int n = racegate_jitter_plan.points < 4u ? racegate_jitter_plan.points : 4u;
    unsigned int sleep = 0u;
    for (unsigned int p = 0u; p < n; ++p) {
        if (racegate_jitter_plan.instance[p] == instance
            && ((racegate_jitter_plan.warps[p] >> warp) & 1u) != 0u)
            sleep += racegate_jitter_plan.delay_ns[p];
    }
    if (sleep != 0u)
        racegate_sleep(sleep);
}

// Everything of a visit past the first few instructions (pct: counting and sleeping in a block
// that takes part; the dense mode), out of line: inlined at every barrier it made the kernel's
// own loops too big to unroll (the H200, run 26: `reduce_interleaved`'s 8-step loop stayed a
// loop with an integer modulo, and its jitter build cost 1.4x a bare launch with jitter off).
__device__ __noinline__ void racegate_jitter_visit(unsigned int site, unsigned int block)
{
    unsigned int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    if (racegate_jitter_plan.mode == 2u) {
        racegate_pct_point(tid, block);
        return;
    }
    unsigned long long key = racegate_jitter_seed
        ^ ((unsigned long long)block << 24) ^ ((unsigned long long)(tid / 32) << 12) ^ site
        ^ ((unsigned long long)(clock64() >> 8) << 40);
    unsigned int h = racegate_mix(key);
    if ((h & 3u) != 0u)
        __nanosleep((h >> 2) % 4096u);
}

// Inlined at every barrier, so it stays a few instructions: the real barrier, a look at the
// mode, and in pct mode the block's hash (a block that takes part in no change point, and is
// not block 0, which counts, is done). The rest is racegate_jitter_visit's.
__device__ __forceinline__ void racegate_jittered_syncthreads(unsigned int site)
{
    __syncthreads();
    unsigned int mode = racegate_jitter_plan.mode;
    if (mode == 0u)
        return;
    unsigned int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    if (mode == 2u && block != 0u
        && racegate_block_hash(block) > racegate_jitter_plan.block_threshold)
        return;
    racegate_jitter_visit(site, block);
}

#define __syncthreads() racegate_jittered_syncthreads(__LINE__)
#endif
