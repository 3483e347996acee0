// globalcheck: the state shared by the host part (tool.cpp) and the device patches (patches.cu).
//
// One `GcLaunch` lives in device memory per kernel launch; the patches receive it as their
// `userdata`. Every 4-byte word of a tracked allocation has one `GcShadow` entry: the last
// write and the last read of the word, each a record packed in 64 bits (see the GC_* fields
// below) beside the access's program counter (low 32 bits) and the value a write stored.
#pragma once
#include <stdint.h>

// A packed access record (64 bits):
//   bit 63       valid
//   bit 62       atomic (any device-scope atomic; plain accesses have it clear)
//   bits 58..61  which bytes of the word were touched (bit k = byte k)
//   bits 32..57  the block, linearized (26 bits)
//   bits 16..31  the block's barrier epoch when the access happened (16 bits, wraps)
//   bits  6..15  the thread within the block, linearized (10 bits)
//   bits  0..5   the thread's __syncwarp/shuffle epoch (6 bits, wraps)
#define GC_VALID (1ull << 63)
#define GC_ATOMIC (1ull << 62)
#define GC_MASK_SHIFT 58
#define GC_BLOCK_SHIFT 32
#define GC_BLOCK_BITS 26
#define GC_EPOCH_SHIFT 16
#define GC_TID_SHIFT 6

// One access as the shadow keeps it: the packed record and, in `info`, the low 32 bits of the
// access's program counter (bits 32..63) and, for a write, the low 32 bits of the value it stored
// (bits 0..31). The pair is exchanged as one 128-bit atomic (sm_90), so a thread that takes the
// previous access out of the shadow gets its record, pc and value together, never a mix of two.
struct alignas(16) GcSlot {
    unsigned long long rec;
    unsigned long long info;
};

// The shadow of one 4-byte word: its last write and its last read (32 bytes).
struct GcShadow {
    GcSlot w;
    GcSlot r;
};

// One tracked allocation: [base, base + size) and its shadow (size / 4 rounded up entries; null
// in a footprint run, which keeps none). In a footprint run (GC_MODE_FOOTPRINT) the launch's
// lowest and highest byte offsets read and written in it: [rlo, rhi) and [wlo, whi), each lo
// starting at ~0 and each hi at 0 (untouched); an atomic counts as a read and a write.
struct GcRange {
    unsigned long long base;
    unsigned long long size;
    GcShadow* shadow;
    unsigned long long rlo, rhi, wlo, whi;
};

// Finding kinds.
enum {
    GC_KIND_WRITE_WRITE = 1,  // two plain writes (or a plain write and an atomic), different values
    GC_KIND_READ_WRITE = 2,   // a plain read, then another thread's write
    GC_KIND_WRITE_READ = 3,   // a write, then another thread's plain read
    GC_KIND_LOST_UPDATE = 4,  // a plain read-modify-write racing with another thread's access
    // sharedcheck (shared memory, per block):
    SC_KIND_UNINIT = 5,        // a read of shared bytes no thread of the block wrote since it started
    SC_KIND_ATOMIC_PLAIN = 6,  // an atomic and a plain access to one shared word, unordered
    SC_KIND_PAST_END = 7,      // an access past the end of the shared memory the launch declared
};

// Scopes: who the two accesses came from.
enum {
    GC_SCOPE_BLOCKS = 1,  // different blocks, no atomic handoff between them
    GC_SCOPE_WARPS = 2,   // different warps of one block, no __syncthreads between them
    GC_SCOPE_LANES = 3,   // lanes of one warp, no __syncwarp/shuffle/barrier between them (warning)
};

// A distinct finding: (kind, scope, pc now, pc before) is the key; `count` how often it was seen.
struct GcFinding {
    unsigned long long key;  // 0 = free slot
    unsigned long long pc_now;
    unsigned long long pc_then;
    unsigned long long addr;
    unsigned int kind;
    unsigned int scope;
    unsigned int block_now;
    unsigned int thread_now;
    unsigned int block_then;
    unsigned int thread_then;
    unsigned int value_now;   // for writes: the low 32 bits stored
    unsigned int value_then;
    unsigned int count;
    unsigned int pad;
};

#define GC_FINDING_SLOTS 1024

#define GC_MODE_DETECT 1u
#define GC_MODE_JITTER 2u
#define GC_MODE_SHARED 4u  // sharedcheck: shared memory, judged per block
#define GC_MODE_FENCE 8u   // fencecheck: record the handoffs globalcheck's rule orders (implies detect)
#define GC_MODE_SPOISON 16u  // sharedcheck's confirm runs: unwritten shared bytes read get a seeded poison
#define GC_MODE_FOOTPRINT 32u  // streamcheck's confirm runs: each launch's bytes touched per allocation

// fencecheck: one distinct handoff globalcheck's rule took as ordering a plain store of one block
// before a plain read of another: the store, the releasing atomic its block (or thread) did after
// it, the acquiring atomic or poll the reading block (or thread) did before its read, and the
// read. The four pcs are the key; racegate checks the fences between them in the SASS.
struct GcHandoff {
    unsigned long long key;  // 0 = free slot
    unsigned long long pc_store;
    unsigned long long pc_release;  // 0: no releasing atomic's pc was recorded
    unsigned long long pc_acquire;  // 0: no acquiring pc was recorded
    unsigned long long pc_read;
    unsigned long long addr;
    unsigned int block_store;
    unsigned int thread_store;
    unsigned int block_read;
    unsigned int thread_read;
    unsigned int count;
    unsigned int pad;
};

#define GC_HANDOFF_SLOTS 1024

// sharedcheck's shadow of one 4-byte shared word of one block: its last atomic access and its
// last plain access (records as above, the block field unused: the shadow is the block's own).
struct ScShadow {
    GcSlot atomic;
    GcSlot plain;
};

struct GcLaunch {
    unsigned int mode;
    unsigned int nranges;
    GcRange* ranges;               // sorted by base
    unsigned int* epochs;          // per thread of the grid: barriers passed
    unsigned int* wepochs;         // per thread of the grid: __syncwarp/shuffles passed
    unsigned long long* last_read; // per thread of the grid: the word its last plain read touched
    unsigned int* block_release;   // per block: 1 + the latest barrier epoch in which it did an atomic (0: none)
    unsigned int* block_acquire;   // per block: 0x10000 - the earliest epoch of an atomic or a read of an atomic word (0: none)
    unsigned int* thread_sync;     // per thread: 1 + the epoch of its last atomic or read of an atomic word (0: none)
    unsigned long long nthreads;
    unsigned long long nblocks;
    unsigned long long jitter_seed;
    GcFinding* findings;           // GC_FINDING_SLOTS slots
    unsigned long long accesses;   // global accesses seen (tracked or not)
    unsigned long long untracked;  // accesses outside every tracked range
    unsigned long long dropped;    // findings lost because the table was full
    unsigned long long barriers;   // barrier callbacks
    unsigned long long named_barriers;  // barriers with an id other than 0 (bar.sync N, cuda::barrier-like)
    unsigned long long epoch_overflow;  // threads past 2^15 barriers: epoch comparisons would wrap
    // sharedcheck (mode & GC_MODE_SHARED): the launch's shared window, [0, sm_bytes), per block.
    unsigned long long sm_bytes;   // reserved + static + dynamic shared bytes the shadow covers
    unsigned long long sm_words;   // sm_bytes / 4, rounded up: shadow entries per block
    unsigned int sm_dynamic;       // the dynamic shared bytes the host was told of
    unsigned int pad0;
    ScShadow* sshadow;             // nblocks x sm_words
    unsigned int* swritten;        // nblocks x ceil(sm_words / 8): 4 bits per word, bit k = byte k written
    GcFinding* sfindings;          // GC_FINDING_SLOTS slots for shared findings
    unsigned long long saccesses;      // shared accesses seen (counted per warp-instruction leader)
    unsigned long long suntracked;     // shared accesses outside [0, sm_bytes)
    unsigned long long sdropped;       // shared findings lost because the table was full
    unsigned long long sunseen;        // writes into shared memory it cannot see (bulk/TMA copies, stmatrix)
    unsigned long long sunsized;       // blocks whose dynamic shared size exceeded what the host sized
    unsigned long long smin_offset;    // the lowest shared offset accessed (~0 when none), for the record
    unsigned long long spoison_byte;   // GC_MODE_SPOISON: the byte every unwritten byte read gets first
    unsigned long long sm_end;         // accesses at or past this offset lie past all declared shared
                                       // memory (0: not known, never judged)
    unsigned long long spoisoned;      // GC_MODE_SPOISON: accesses that read unwritten bytes and got poison first
    // fencecheck (mode & GC_MODE_FENCE; null otherwise): which instruction synchronized.
    unsigned long long* block_release_pc;  // per block: pc of the atomic that set block_release
    unsigned long long* block_acquire_pc;  // per block: pc of an acquire in its earliest acquiring epoch
    unsigned long long* thread_release_pc; // per thread: pc of its last atomic
    unsigned long long* thread_sync_pc;    // per thread: pc of its last atomic or poll (thread_sync's)
    GcHandoff* handoffs;                   // GC_HANDOFF_SLOTS slots
    unsigned long long hdropped;           // handoffs lost because the table was full
};
