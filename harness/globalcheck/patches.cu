// globalcheck device patches: called by the Compute Sanitizer before each global-memory access,
// at each barrier (before and after it releases), each __syncwarp and each shuffle of the
// instrumented kernel, in the thread that executes the instruction.
//
// Built by racegate with: nvcc --fatbin --keep-device-functions -Xptxas --compile-as-tools-patch
//   -gencode arch=compute_90,code=sm_90 (see harness/src/globalcheck/build.rs).
//
// The race rule, per 4-byte word (byte masks keep neighbouring bytes apart):
//   two accesses conflict when they come from different threads, touch a common byte, at least
//   one is a plain write (two atomics never conflict; an atomic and a plain read do not either,
//   since polling a flag that others update atomically is the handoff idiom), and they are not
//   ordered:
//   - same block: ordered when a __syncthreads lies between them (the block's barrier epoch
//     differs); lanes of one warp are also ordered by a __syncwarp or a shuffle between them;
//   - different blocks: ordered only through atomics: the earlier block did an atomic after
//     its access (in a later barrier epoch, or the same thread), and the later block did an
//     atomic or polled an atomically written word before its access (see gc_handoff). This is
//     the last-block reduction and the flag handoff; a fence cannot be seen by the Sanitizer
//     API, so a handoff without __threadfence is not told apart from one with it (a documented
//     limit), and which atomic pairs with which is not checked (a race between blocks that
//     both use atomics elsewhere can be missed; none is invented).
//   Two writes of the same value are not a conflict (benign duplicate stores).
// fencecheck (mode GC_MODE_FENCE, on top of detect): each write/read pair of two blocks that
// gc_handoff orders is recorded with the pcs of the atomic that released and the access that
// acquired (gc_record_handoff); racegate then checks the SASS between them for the fences this
// rule cannot see. Without the mode none of this runs or is allocated.
#include <sanitizer_patching.h>
#include "globalcheck.h"

__device__ __forceinline__ unsigned int gc_tid()
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

__device__ __forceinline__ unsigned long long gc_block()
{
    return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
}

__device__ __forceinline__ unsigned long long gc_gtid(unsigned long long block, unsigned int tid)
{
    return block * (blockDim.x * blockDim.y * blockDim.z) + tid;
}

__device__ __forceinline__ unsigned long long gc_mix(unsigned long long x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

__device__ __forceinline__ GcRange* gc_find(GcLaunch* L, unsigned long long a)
{
    unsigned int lo = 0, hi = L->nranges;
    while (lo < hi) {
        unsigned int mid = (lo + hi) / 2;
        GcRange* r = &L->ranges[mid];
        if (a < r->base)
            hi = mid;
        else if (a >= r->base + r->size)
            lo = mid + 1;
        else
            return r;
    }
    return nullptr;
}

__device__ __forceinline__ unsigned int rec_block(unsigned long long r) { return (unsigned int)((r >> GC_BLOCK_SHIFT) & ((1u << GC_BLOCK_BITS) - 1)); }
__device__ __forceinline__ unsigned int rec_epoch(unsigned long long r) { return (unsigned int)((r >> GC_EPOCH_SHIFT) & 0xffffu); }
__device__ __forceinline__ unsigned int rec_tid(unsigned long long r) { return (unsigned int)((r >> GC_TID_SHIFT) & 0x3ffu); }
__device__ __forceinline__ unsigned int rec_wepoch(unsigned long long r) { return (unsigned int)(r & 0x3fu); }
__device__ __forceinline__ unsigned int rec_mask(unsigned long long r) { return (unsigned int)((r >> GC_MASK_SHIFT) & 0xfu); }

// Were the two accesses of different blocks ordered through atomics? The earlier block
// released (an atomic after its access: in a later barrier epoch by any of its threads, or by
// the same thread in the same epoch, assumed to come after), and the later block acquired (an
// atomic, or a read of a word last written by an atomic, i.e. polling a flag, before its access:
// in an earlier epoch by any of its threads, or by the same thread). Which atomic pairs with
// which is not checked: this over-approximates synchronization, so it can miss a race, never
// invent one. Epochs are compared in 16 bits; past 2^15 barriers the launch is inconclusive.
__device__ __forceinline__ bool gc_handoff(GcLaunch* L, unsigned long long then, unsigned long long now)
{
    unsigned int per_block = blockDim.x * blockDim.y * blockDim.z;
    unsigned int e_then = rec_epoch(then), e_now = rec_epoch(now);
    unsigned int rel = ((volatile unsigned int*)L->block_release)[rec_block(then)];
    unsigned int t_then = ((volatile unsigned int*)L->thread_sync)[(unsigned long long)rec_block(then) * per_block + rec_tid(then)];
    bool released = (rel != 0 && rel - 1 > e_then) || t_then == e_then + 1;
    unsigned int acq = ((volatile unsigned int*)L->block_acquire)[rec_block(now)];
    unsigned int t_now = ((volatile unsigned int*)L->thread_sync)[(unsigned long long)rec_block(now) * per_block + rec_tid(now)];
    bool acquired = (acq != 0 && 0x10000u - acq < e_now) || t_now == e_now + 1;
    return released && acquired;
}

// This thread synchronized through an atomic (or by reading an atomic word) in `epoch`, at
// `pc`. fencecheck keeps the pcs too: the block's releasing atomic of its latest releasing
// epoch, an acquire of its earliest acquiring epoch, and each thread's last ones.
__device__ __forceinline__ void gc_sync_mark(GcLaunch* L, unsigned long long block, unsigned long long g,
                                             unsigned int epoch, bool releases, unsigned long long pc)
{
    L->thread_sync[g] = epoch + 1;
    bool fence = (L->mode & GC_MODE_FENCE) && L->handoffs != nullptr;
    if (fence) {
        L->thread_sync_pc[g] = pc;
        if (releases)
            L->thread_release_pc[g] = pc;
    }
    if (releases) {
        unsigned int old = atomicMax(&L->block_release[block], epoch + 1);
        if (fence && old <= epoch + 1)
            L->block_release_pc[block] = pc;
    }
    unsigned int old = atomicMax(&L->block_acquire[block], 0x10000u - epoch);
    if (fence && old <= 0x10000u - epoch)
        L->block_acquire_pc[block] = pc;
}

// fencecheck: a plain write of one block (`then`, at `pc_then`) and a plain read of another
// (`now`, at `pc_now`) that gc_handoff ordered. Which atomic released and which acquired is
// taken as gc_handoff decided: the same thread's when its rule held, else the block's.
__device__ void gc_record_handoff(GcLaunch* L, unsigned long long then, unsigned long long now,
                                  unsigned long long pc_then, unsigned long long pc_now, unsigned long long addr)
{
    unsigned int per_block = blockDim.x * blockDim.y * blockDim.z;
    unsigned long long gt = (unsigned long long)rec_block(then) * per_block + rec_tid(then);
    unsigned long long gn = (unsigned long long)rec_block(now) * per_block + rec_tid(now);
    unsigned int t_then = ((volatile unsigned int*)L->thread_sync)[gt];
    unsigned int t_now = ((volatile unsigned int*)L->thread_sync)[gn];
    unsigned long long rel = 0, acq = 0;
    if (t_then == rec_epoch(then) + 1)
        rel = ((volatile unsigned long long*)L->thread_release_pc)[gt];
    if (rel == 0)
        rel = ((volatile unsigned long long*)L->block_release_pc)[rec_block(then)];
    if (t_now == rec_epoch(now) + 1)
        acq = ((volatile unsigned long long*)L->thread_sync_pc)[gn];
    if (acq == 0)
        acq = ((volatile unsigned long long*)L->block_acquire_pc)[rec_block(now)];
    unsigned long long key = gc_mix(pc_then * 31 + rel * 17 + acq * 7 + pc_now) | 1ull;
    unsigned int slot = (unsigned int)(key % GC_HANDOFF_SLOTS);
    for (unsigned int probe = 0; probe < 64; probe++) {
        GcHandoff* h = &L->handoffs[(slot + probe) % GC_HANDOFF_SLOTS];
        unsigned long long old = atomicCAS(&h->key, 0ull, key);
        if (old == 0ull) {
            h->pc_store = pc_then;
            h->pc_release = rel;
            h->pc_acquire = acq;
            h->pc_read = pc_now;
            h->addr = addr;
            h->block_store = rec_block(then);
            h->thread_store = rec_tid(then);
            h->block_read = rec_block(now);
            h->thread_read = rec_tid(now);
            atomicAdd(&h->count, 1u);
            return;
        }
        if (old == key) {
            atomicAdd(&h->count, 1u);
            return;
        }
    }
    atomicAdd(&L->hdropped, 1ull);
}

// The scope of an unordered pair, or 0 when the pair is ordered (or no conflict at all).
__device__ __forceinline__ unsigned int gc_scope(GcLaunch* L, unsigned long long then, unsigned long long now)
{
    if (!(then & GC_VALID))
        return 0;
    if ((rec_mask(then) & rec_mask(now)) == 0)
        return 0;
    if ((then & GC_ATOMIC) && (now & GC_ATOMIC))
        return 0;
    unsigned int bt = rec_block(then), bn = rec_block(now);
    unsigned int tt = rec_tid(then), tn = rec_tid(now);
    if (bt == bn && tt == tn)
        return 0;
    if (bt != bn)
        return gc_handoff(L, then, now) ? 0 : GC_SCOPE_BLOCKS;
    if (rec_epoch(then) != rec_epoch(now))
        return 0;
    if (tt / 32 != tn / 32)
        return GC_SCOPE_WARPS;
    if (rec_wepoch(then) != rec_wepoch(now))
        return 0;
    return GC_SCOPE_LANES;
}

__device__ void gc_report_into(GcFinding* table, unsigned long long* dropped, unsigned int kind, unsigned int scope,
                               unsigned long long pc_now, unsigned long long pc_then, unsigned long long addr,
                               unsigned long long now, unsigned long long then, unsigned int vnow, unsigned int vthen)
{
    unsigned long long key = gc_mix(pc_now * 31 + pc_then * 7 + kind * 3 + scope) | 1ull;
    unsigned int slot = (unsigned int)(key % GC_FINDING_SLOTS);
    for (unsigned int probe = 0; probe < 64; probe++) {
        GcFinding* f = &table[(slot + probe) % GC_FINDING_SLOTS];
        unsigned long long old = atomicCAS(&f->key, 0ull, key);
        if (old == 0ull) {
            f->pc_now = pc_now;
            f->pc_then = pc_then;
            f->addr = addr;
            f->kind = kind;
            f->scope = scope;
            f->block_now = rec_block(now);
            f->thread_now = rec_tid(now);
            f->block_then = rec_block(then);
            f->thread_then = rec_tid(then);
            f->value_now = vnow;
            f->value_then = vthen;
            atomicAdd(&f->count, 1u);
            return;
        }
        if (old == key) {
            atomicAdd(&f->count, 1u);
            return;
        }
    }
    atomicAdd(dropped, 1ull);
}

__device__ __forceinline__ void gc_report(GcLaunch* L, unsigned int kind, unsigned int scope, unsigned long long pc_now,
                                          unsigned long long pc_then, unsigned long long addr, unsigned long long now,
                                          unsigned long long then, unsigned int vnow, unsigned int vthen)
{
    gc_report_into(L->findings, &L->dropped, kind, scope, pc_now, pc_then, addr, now, then, vnow, vthen);
}

// The shadow slot as one atomic 128-bit read (a compare-and-swap that writes back what it found).
__device__ __forceinline__ GcSlot gc_load(GcSlot* p)
{
    GcSlot zero;
    zero.rec = 0;
    zero.info = 0;
    return atomicCAS(p, zero, zero);
}

// The full pc of a recorded access from the low 32 bits kept in its slot: code of one process
// lies in one 4 GiB window in practice, so the high half is the current access's. A pc that
// still falls outside every function's range is reported without a line, never misplaced.
__device__ __forceinline__ unsigned long long gc_pc(unsigned long long now, unsigned long long info)
{
    return (now & 0xffffffff00000000ull) | (info >> 32);
}

// streamcheck's confirm runs (GC_MODE_FOOTPRINT): widens the launch's footprint in the access's
// allocation ([rlo, rhi) read, [wlo, whi) written, byte offsets). A bound is read first and
// changed by an atomic only when the access lies past it, so once a launch's first accesses
// have set the bounds the rest cost a read each (a stale read costs one atomic more, never a
// wrong bound). An access outside every tracked allocation sets `untracked` (once).
__device__ __forceinline__ void gc_footprint(GcLaunch* L, unsigned long long a, uint32_t size, uint32_t flags,
                                             const void* pData)
{
    GcRange* r = gc_find(L, a);
    if (r == nullptr) {
        if (*(volatile unsigned long long*)&L->untracked == 0)
            atomicExch(&L->untracked, 1ull);
        return;
    }
    unsigned long long off = a - r->base;
    unsigned long long end = off + size;
    if (end > r->size)
        end = r->size;
    bool write = (flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE) != 0;
    // An atomic (WRITE set and no data, or a system-scope one) reads as well as writes.
    bool read = !write || pData == nullptr || (flags & SANITIZER_MEMORY_DEVICE_FLAG_ATOMSYS);
    if (read) {
        if (off < *(volatile unsigned long long*)&r->rlo)
            atomicMin(&r->rlo, off);
        if (end > *(volatile unsigned long long*)&r->rhi)
            atomicMax(&r->rhi, end);
    }
    if (write) {
        if (off < *(volatile unsigned long long*)&r->wlo)
            atomicMin(&r->wlo, off);
        if (end > *(volatile unsigned long long*)&r->whi)
            atomicMax(&r->whi, end);
    }
}

extern "C" __device__ __noinline__ SanitizerPatchResult gc_access(void* userdata, uint64_t pc, void* ptr,
                                                                  uint32_t size, uint32_t flags, const void* pData)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L == nullptr)
        return SANITIZER_PATCH_SUCCESS;
    if ((L->mode & GC_MODE_FOOTPRINT) && !(flags & SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH))
        gc_footprint(L, (unsigned long long)ptr, size, flags, pData);
    if (!(L->mode & GC_MODE_DETECT))
        return SANITIZER_PATCH_SUCCESS;
    if (flags & SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH)
        return SANITIZER_PATCH_SUCCESS;
    atomicAdd(&L->accesses, 1ull);
    unsigned long long a = (unsigned long long)ptr;
    // A plain read may come with pData (a mask of bytes used) or without it; a plain write always
    // has it (the new value); an atomic never has it. So: WRITE set and no data = an atomic.
    bool atomic = pData == nullptr && (flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE);
    if (flags & SANITIZER_MEMORY_DEVICE_FLAG_ATOMSYS)
        atomic = true;
    bool write = (flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE) != 0;
    unsigned long long block = gc_block();
    unsigned int tid = gc_tid();
    unsigned long long g = gc_gtid(block, tid);
    unsigned int epoch = L->epochs[g] & 0xffffu;
    unsigned int wepoch = L->wepochs[g] & 0x3fu;
    // An atomic synchronizes wherever it lands, tracked memory or not.
    if (atomic)
        gc_sync_mark(L, block, g, epoch, true, pc);
    GcRange* r = gc_find(L, a);
    if (r == nullptr || r->shadow == nullptr) {
        atomicAdd(&L->untracked, 1ull);
        return SANITIZER_PATCH_SUCCESS;
    }
    unsigned long long base_rec = GC_VALID | (atomic ? GC_ATOMIC : 0ull)
        | ((block & ((1ull << GC_BLOCK_BITS) - 1)) << GC_BLOCK_SHIFT)
        | ((unsigned long long)epoch << GC_EPOCH_SHIFT) | ((unsigned long long)(tid & 0x3ffu) << GC_TID_SHIFT)
        | wepoch;
    unsigned long long off = a - r->base;
    unsigned long long end = off + size;
    if (end > r->size)
        end = r->size;
    const unsigned char* data = (const unsigned char*)pData;
    for (unsigned long long w = off / 4; w * 4 < end; w++) {
        unsigned int mask = 0;
        unsigned int value = 0;
        for (unsigned int b = 0; b < 4; b++) {
            unsigned long long byte = w * 4 + b;
            if (byte >= off && byte < end) {
                mask |= 1u << b;
                if (write && data != nullptr)
                    value |= (unsigned int)data[byte - off] << (8 * b);
            }
        }
        unsigned long long rec = base_rec | ((unsigned long long)mask << GC_MASK_SHIFT);
        GcShadow* s = &r->shadow[w];
        unsigned long long addr = r->base + w * 4;
        // Publish this access first, then look at the other kind's last access, with a fence
        // between (__threadfence() is membar.gl, which PTX defines as fence.sc.gpu on sm_70 and
        // later: the sequentially consistent fence this needs): of a write and a read that run at the same moment in two threads,
        // at least one sees the other. Looking first and publishing after, as a plain
        // check-then-set does, lets both pass unseen, which is how a race between two warps
        // that run side by side escaped. A write takes the previous write out of the shadow in
        // the same atomic exchange that puts itself in, so of two writes exactly the later one
        // sees the earlier, with that access's own pc and value.
        if (write) {
            GcSlot mine;
            mine.rec = rec;
            mine.info = (pc << 32) | value;
            GcSlot prev_w = atomicExch(&s->w, mine);
            __threadfence();
            GcSlot prev_r = gc_load(&s->r);
            unsigned long long pw = prev_w.rec, pr = prev_r.rec;
            unsigned long long pwpc = gc_pc(pc, prev_w.info), prpc = gc_pc(pc, prev_r.info);
            unsigned int pval = (unsigned int)prev_w.info;
            unsigned int sc = gc_scope(L, pw, rec);
            bool same_value = !atomic && !(pw & GC_ATOMIC) && pval == value && rec_mask(pw) == mask;
            unsigned int rs = (pr & GC_ATOMIC) || atomic ? 0 : gc_scope(L, pr, rec);
            // A plain write to the word this thread read last is a read-modify-write: racing
            // with any other thread's access it loses updates, whatever the values.
            bool rmw = !atomic && L->last_read[g] == addr;
            if (rmw && (sc != 0 || rs != 0)) {
                if (sc != 0)
                    gc_report(L, GC_KIND_LOST_UPDATE, sc, pc, pwpc, addr, rec, pw, value, pval);
                else
                    gc_report(L, GC_KIND_LOST_UPDATE, rs, pc, prpc, addr, rec, pr, value, 0);
            } else {
                if (sc != 0 && !same_value)
                    gc_report(L, GC_KIND_WRITE_WRITE, sc, pc, pwpc, addr, rec, pw, value, pval);
                if (rs != 0)
                    gc_report(L, GC_KIND_READ_WRITE, rs, pc, prpc, addr, rec, pr, value, 0);
            }
        } else {
            GcSlot mine;
            mine.rec = rec;
            mine.info = pc << 32;
            atomicExch(&s->r, mine);
            __threadfence();
            GcSlot cur_w = gc_load(&s->w);
            unsigned long long pw = cur_w.rec;
            // A plain read of a word others update atomically is the polling idiom, not a race,
            // and an acquire for the reading block.
            if (pw & GC_ATOMIC)
                gc_sync_mark(L, block, g, epoch, false, pc);
            else {
                unsigned int sc = gc_scope(L, pw, rec);
                if (sc != 0)
                    gc_report(L, GC_KIND_WRITE_READ, sc, pc, gc_pc(pc, cur_w.info), addr, rec, pw, 0,
                              (unsigned int)cur_w.info);
                else if ((L->mode & GC_MODE_FENCE) && L->handoffs != nullptr && (pw & GC_VALID)
                         && rec_block(pw) != rec_block(rec) && (rec_mask(pw) & rec_mask(rec)) != 0)
                    gc_record_handoff(L, pw, rec, gc_pc(pc, cur_w.info), pc, addr);
            }
            L->last_read[g] = addr;
        }
    }
    return SANITIZER_PATCH_SUCCESS;
}

// Before the barrier: the thread enters the next epoch (no access of it happens until the
// barrier releases, so nothing it does is mistaken for the new epoch too early).
extern "C" __device__ __noinline__ SanitizerPatchResult gc_barrier(void* userdata, uint64_t pc, uint32_t barIndex,
                                                                   uint32_t threadCount, uint32_t flags)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L == nullptr)
        return SANITIZER_PATCH_SUCCESS;
    if (L->mode & (GC_MODE_DETECT | GC_MODE_SHARED)) {
        unsigned long long g = gc_gtid(gc_block(), gc_tid());
        // Epochs are compared in 16 bits (15 for order): past that a comparison could be wrong,
        // so the launch says so and racegate judges it inconclusive.
        if (++L->epochs[g] == 0x8000u)
            atomicAdd(&L->epoch_overflow, 1ull);
        // A named or partial barrier (bar.sync N, M) orders only some warps; epochs count it
        // as if it ordered the whole block, so the launch says so.
        if (barIndex != 0)
            atomicAdd(&L->named_barriers, 1ull);
    }
    return SANITIZER_PATCH_SUCCESS;
}

// After the barrier releases: the jitter. Three warps in four sleep 0 to ~4 us, each for its
// own time, as racegate's prelude does for the kernels it compiles itself.
extern "C" __device__ __noinline__ SanitizerPatchResult gc_barrier_release(void* userdata, uint64_t pc,
                                                                           uint32_t barIndex, uint32_t threadCount,
                                                                           uint32_t flags)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L == nullptr || !(L->mode & GC_MODE_JITTER))
        return SANITIZER_PATCH_SUCCESS;
    unsigned long long key = L->jitter_seed ^ (gc_block() << 24) ^ ((unsigned long long)(gc_tid() / 32) << 12)
        ^ (pc & 0xfffull) ^ ((unsigned long long)(clock64() >> 8) << 40);
    unsigned int h = (unsigned int)gc_mix(key);
    if ((h & 3u) != 0u)
        __nanosleep((h >> 2) % 4096u);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult gc_syncwarp(void* userdata, uint64_t pc, uint32_t mask)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L == nullptr || !(L->mode & (GC_MODE_DETECT | GC_MODE_SHARED)))
        return SANITIZER_PATCH_SUCCESS;
    L->wepochs[gc_gtid(gc_block(), gc_tid())] += 1;
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult gc_shfl(void* userdata, uint64_t pc)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L == nullptr || !(L->mode & (GC_MODE_DETECT | GC_MODE_SHARED)))
        return SANITIZER_PATCH_SUCCESS;
    L->wepochs[gc_gtid(gc_block(), gc_tid())] += 1;
    return SANITIZER_PATCH_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// sharedcheck: shared memory, per block. The shadow of each block's shared window starts zeroed
// (no byte written), so
//   - a plain read or an atomic of bytes no thread of the block wrote since the block started
//     is SC_KIND_UNINIT (value_then 1 for an atomic); a read's byte mask (pData) leaves padding
//     out; atomics mark bytes written; in the confirm runs those bytes get poison first;
//   - an atomic and a plain access (read or write) to one word from different threads, with no
//     __syncthreads between them (different warps), or lanes of one warp with no __syncwarp or
//     shuffle between them (a warning), is SC_KIND_ATOMIC_PLAIN, both pcs kept. Two atomics
//     never conflict, and two plain accesses are racecheck's to judge.
// Barrier and warp epochs are globalcheck's (gc_barrier, gc_syncwarp, gc_shfl count them).
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ unsigned int sc_scope(unsigned long long then, unsigned long long now)
{
    if (!(then & GC_VALID))
        return 0;
    if ((rec_mask(then) & rec_mask(now)) == 0)
        return 0;
    unsigned int tt = rec_tid(then), tn = rec_tid(now);
    if (tt == tn)
        return 0;
    if (rec_epoch(then) != rec_epoch(now))
        return 0;
    if (tt / 32 != tn / 32)
        return GC_SCOPE_WARPS;
    if (rec_wepoch(then) != rec_wepoch(now))
        return 0;
    return GC_SCOPE_LANES;
}

// Marks bytes [off, off + size) of this block's window written (cp.async's destination too).
__device__ __forceinline__ void sc_mark_written(GcLaunch* L, unsigned long long block, unsigned long long off,
                                                unsigned long long size)
{
    unsigned long long end = off + size;
    if (end > L->sm_bytes)
        end = L->sm_bytes;
    unsigned int* written = L->swritten + block * ((L->sm_words + 7) / 8);
    for (unsigned long long w = off / 4; w * 4 < end; w++) {
        unsigned int mask = 0;
        for (unsigned int b = 0; b < 4; b++) {
            unsigned long long byte = w * 4 + b;
            if (byte >= off && byte < end)
                mask |= 1u << b;
        }
        atomicOr(&written[w / 8], mask << (4 * (w % 8)));
    }
}

// The confirm runs (GC_MODE_SPOISON): the unwritten bytes of the shared word at byte offset
// `at` (bit k of `bytes` = byte k) get the run's poison byte before the access reads them.
// racegate runs three poisons (0x00, 0x4B, 0xF7: zero, a large positive and a negative value
// for every integer and float width, none of them a NaN or an infinity), so a value that reaches
// the output changes it. Only bytes no thread of the block wrote are touched: a correct program
// never had a value there.
__device__ __forceinline__ void sc_poison(GcLaunch* L, unsigned long long at, unsigned int bytes)
{
    unsigned int v = (unsigned int)(L->spoison_byte & 0xffu);
    for (unsigned int b = 0; b < 4; b++) {
        if (!((bytes >> b) & 1u))
            continue;
        unsigned int a = (unsigned int)(at + b);
        asm volatile("st.shared.u8 [%0], %1;" ::"r"(a), "r"(v) : "memory");
    }
    atomicAdd(&L->spoisoned, 1ull);
}

// The block's dynamic shared memory is larger than the host sized the shadow for: nothing
// this block does in shared memory can be judged (counted once per block, by thread 0).
__device__ __forceinline__ bool sc_unsized(GcLaunch* L)
{
    unsigned int dyn;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    return dyn > L->sm_dynamic;
}

extern "C" __device__ __noinline__ SanitizerPatchResult sc_access(void* userdata, uint64_t pc, void* ptr,
                                                                  uint32_t size, uint32_t flags, const void* pData)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L == nullptr || !(L->mode & GC_MODE_SHARED) || L->sshadow == nullptr)
        return SANITIZER_PATCH_SUCCESS;
    if (flags & SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH)
        return SANITIZER_PATCH_SUCCESS;
    unsigned long long off = (unsigned long long)ptr;
    // Counted by each warp's first active lane (one atomic per warp instruction, not per thread).
    unsigned int active = __activemask();
    if ((unsigned int)__ffs(active) - 1 == (gc_tid() % 32)) {
        atomicAdd(&L->saccesses, (unsigned long long)__popc(active));
        atomicMin(&L->smin_offset, off);
    }
    if (sc_unsized(L)) {
        atomicAdd(&L->sunsized, 1ull);
        return SANITIZER_PATCH_SUCCESS;
    }
    bool write = (flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE) != 0;
    if (off + size > L->sm_bytes) {
        // Past every byte the launch declared (static + dynamic, with room for the alignment of
        // dynamic memory): an out-of-bounds access the hardware does not fault on (shared memory
        // is allocated in granules). Between the shadow's end and there: not judged.
        if (L->sm_end != 0 && off + size > L->sm_end) {
            unsigned long long rec = GC_VALID | ((gc_block() & ((1ull << GC_BLOCK_BITS) - 1)) << GC_BLOCK_SHIFT)
                | ((unsigned long long)(gc_tid() & 0x3ffu) << GC_TID_SHIFT);
            gc_report_into(L->sfindings, &L->sdropped, SC_KIND_PAST_END, 0, pc, 0, off, rec, 0, size,
                           write ? 1u : 0u);
        }
        atomicAdd(&L->suntracked, 1ull);
        return SANITIZER_PATCH_SUCCESS;
    }
    bool atomic = pData == nullptr && write;
    if (flags & SANITIZER_MEMORY_DEVICE_FLAG_ATOMSYS)
        atomic = true;
    // Plain reads and atomics are checked against the written bytes. An atomic's callback does
    // not say which atomic it is, and atomicExch (an initializing store) reads nothing it uses
    // (on the H200, run 22's probe, the correct handoff's atomicExch(&ready, 0)): an atomic's
    // finding says it was an atomic, and racegate drops those whose instruction is an exchange
    // (ATOMS.EXCH in the SASS). Atomics mark their bytes written.
    bool reads = !write || atomic;
    // A plain read's mask of the loaded bytes it uses (bit k = byte k of the access).
    unsigned int used = 0xffffu;
    if (!write && pData != nullptr)
        used = *(const unsigned int*)pData;
    unsigned long long block = gc_block();
    unsigned int tid = gc_tid();
    unsigned long long g = gc_gtid(block, tid);
    unsigned int epoch = L->epochs[g] & 0xffffu;
    unsigned int wepoch = L->wepochs[g] & 0x3fu;
    // The block field only names the block in a finding: the shadow is the block's own.
    unsigned long long base_rec = GC_VALID | (atomic ? GC_ATOMIC : 0ull)
        | ((block & ((1ull << GC_BLOCK_BITS) - 1)) << GC_BLOCK_SHIFT)
        | ((unsigned long long)epoch << GC_EPOCH_SHIFT) | ((unsigned long long)(tid & 0x3ffu) << GC_TID_SHIFT) | wepoch;
    unsigned long long nwords = (L->sm_words + 7) / 8;
    unsigned int* written = L->swritten + block * nwords;
    ScShadow* shadow = L->sshadow + block * L->sm_words;
    unsigned long long end = off + size;
    for (unsigned long long w = off / 4; w * 4 < end; w++) {
        unsigned int mask = 0;
        for (unsigned int b = 0; b < 4; b++) {
            unsigned long long byte = w * 4 + b;
            if (byte >= off && byte < end && (write || ((used >> (byte - off)) & 1u)))
                mask |= 1u << b;
        }
        if (mask == 0)
            continue;
        unsigned int shift = 4 * (unsigned int)(w % 8);
        unsigned long long rec = base_rec | ((unsigned long long)mask << GC_MASK_SHIFT);
        if (reads) {
            unsigned int have = (((volatile unsigned int*)written)[w / 8] >> shift) & 0xfu;
            unsigned int unwritten = mask & ~have;
            if (unwritten != 0) {
                gc_report_into(L->sfindings, &L->sdropped, SC_KIND_UNINIT, 0, pc, 0, w * 4, rec, 0, unwritten,
                               atomic ? 1u : 0u);
                if (L->mode & GC_MODE_SPOISON)
                    sc_poison(L, w * 4, unwritten);
            }
        }
        if (write)
            atomicOr(&written[w / 8], mask << shift);  // plain stores and atomics alike
        // Publish, fence, then look at the other class's last access (as gc_access does): of
        // two accesses at the same moment, at least one sees the other.
        GcSlot mine;
        mine.rec = rec;
        mine.info = pc << 32;
        ScShadow* s = &shadow[w];
        GcSlot other;
        if (atomic) {
            atomicExch(&s->atomic, mine);
            __threadfence_block();
            other = gc_load(&s->plain);
        } else {
            atomicExch(&s->plain, mine);
            __threadfence_block();
            other = gc_load(&s->atomic);
        }
        unsigned int sc = sc_scope(other.rec, rec);
        if (sc != 0)
            gc_report_into(L->sfindings, &L->sdropped, SC_KIND_ATOMIC_PLAIN, sc, pc, gc_pc(pc, other.info), w * 4,
                           rec, other.rec, 0, atomic ? 1u : 0u);
    }
    return SANITIZER_PATCH_SUCCESS;
}

// cp.async: the shared destination is written (when the copy lands; a read before the wait is
// racecheck's to find). Marked at issue, so a correct pipelined tile is not an uninitialized read.
extern "C" __device__ __noinline__ SanitizerPatchResult sc_memcpy_async(void* userdata, uint64_t pc, void* src,
                                                                        uint32_t dst, uint32_t size)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L == nullptr || !(L->mode & GC_MODE_SHARED) || L->sshadow == nullptr)
        return SANITIZER_PATCH_SUCCESS;
    if (sc_unsized(L)) {
        atomicAdd(&L->sunsized, 1ull);
        return SANITIZER_PATCH_SUCCESS;
    }
    if ((unsigned long long)dst + size > L->sm_bytes) {
        atomicAdd(&L->suntracked, 1ull);
        return SANITIZER_PATCH_SUCCESS;
    }
    sc_mark_written(L, gc_block(), dst, size);
    return SANITIZER_PATCH_SUCCESS;
}

// Writes into shared memory whose extent the tool does not read (bulk/TMA copies, shared memset,
// stmatrix): the launch's uninitialized-read judgement becomes inconclusive.
extern "C" __device__ __noinline__ SanitizerPatchResult sc_bulk_g2s(void* userdata, uint64_t pc, uint64_t src,
                                                                    uint32_t dst, uint32_t barrier, uint32_t data,
                                                                    uint32_t isMulticast)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L != nullptr && (L->mode & GC_MODE_SHARED))
        atomicAdd(&L->sunseen, 1ull);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult sc_bulk_s2s(void* userdata, uint64_t pc, uint32_t src,
                                                                    uint32_t dst, uint32_t barrier, uint32_t numBlocks)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L != nullptr && (L->mode & GC_MODE_SHARED))
        atomicAdd(&L->sunseen, 1ull);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult sc_memset_shared(void* userdata, uint64_t pc, uint32_t dst,
                                                                         uint32_t numBlocks)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L != nullptr && (L->mode & GC_MODE_SHARED))
        atomicAdd(&L->sunseen, 1ull);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult sc_matrix(void* userdata, uint64_t pc, uint32_t address,
                                                                  uint32_t size, uint32_t flags, uint32_t count,
                                                                  const void* pNewValue)
{
    GcLaunch* L = (GcLaunch*)userdata;
    if (L != nullptr && (L->mode & GC_MODE_SHARED) && (flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE))
        atomicAdd(&L->sunseen, 1ull);
    return SANITIZER_PATCH_SUCCESS;
}
