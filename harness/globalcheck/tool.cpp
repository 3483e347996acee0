// globalcheck host part: loaded into a CUDA program through CUDA_INJECTION64_PATH. It patches
// every module the program loads with racegate's device patches (patches.cu), gives each kernel
// launch its shadow memory, and after the launch writes what the patches found as one JSON
// line to RACEGATE_GC_DIR/report.jsonl. racegate (harness/src/globalcheck/) reads that file,
// maps program counters to source lines with nvdisasm, and judges.
//
// Settings, from the environment (racegate sets them):
//   RACEGATE_GC_DIR      folder for report.jsonl and the loaded modules' cubins (module-K.cubin)
//   RACEGATE_GC_PATCHES  the patches' fatbin
//   RACEGATE_GC_MODE     comma-separated: detect (globalcheck), shared (sharedcheck), jitter,
//                        fence (fencecheck: detect, and each ordered handoff as a line
//                        {"handoff":{...}} after its launch's line)
//   RACEGATE_GC_SEED     jitter seed (decimal)
//   RACEGATE_GC_BUDGET_MB  shadow memory budget in MiB (default 4096); allocations past it are
//                        not tracked, and each launch's line names them
//   RACEGATE_GC_SHARED_BUDGET_MB  sharedcheck's shadow budget per launch in MiB (default 4096);
//                        a launch past it is not judged for shared memory, and its line says so
//   RACEGATE_GC_SPOISON  with shared: a byte (decimal); every read of shared bytes no thread of
//                        the block wrote first writes it into them (the confirm runs: does the
//                        value reach the output?); the launch's line counts those reads as
//                        "poisoned"
//
// Launches it cannot handle (kernel nodes of CUDA graphs) are stepped aside: their patches get
// no data (they return at once), and a line {"note":"stepped-aside","reason":"cuda-graph",
// "launches":N} says how many.
//
// Built by racegate: g++ -std=c++17 -shared -fPIC tool.cpp -lsanitizer-public -ldl.
#include <sanitizer.h>
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <vector>
#include <elf.h>
#include <dlfcn.h>
#include <unistd.h>

#include "globalcheck.h"
#include "streams.h"

namespace {

struct Function {
    std::string name;
    uint64_t pc = 0;
    uint64_t size = 0;
};

struct Module {
    int index = 0;
    std::vector<Function> functions;
    std::vector<uint64_t> globals;  // bases of its __device__ variables in `allocs`
};

struct Alloc {
    uint64_t size = 0;
    GcShadow* shadow = nullptr;  // allocated lazily at the first launch that needs it
    bool over_budget = false;
    std::string name;            // for module globals: the variable's name
};

struct Pending {
    std::string kernel;
    int module = -1;
    uint32_t grid[3] = {0, 0, 0};
    uint32_t block[3] = {0, 0, 0};
    Sanitizer_StreamHandle stream = nullptr;
    GcLaunch* dlaunch = nullptr;
    std::vector<std::pair<uint64_t, uint64_t>> untracked;  // allocations past the budget
    size_t nranges = 0;  // the ranges the launch was given (read back in a footprint run)
    unsigned launch = 0;
    // sharedcheck: the window's parts, and whether its shadow fit the budget.
    uint64_t sm_static = 0, sm_dynamic = 0, sm_reserved = 0;
    bool sm_dynamic_known = false;
    bool sm_over_budget = false;
    bool cluster = false;
    bool sm_static_known = false;
};

struct State {
    std::recursive_mutex lock;
    std::string dir;
    std::string patches;
    unsigned mode = GC_MODE_DETECT;
    unsigned long long seed = 0;
    unsigned long long spoison_byte = 0;  // RACEGATE_GC_SPOISON (GC_MODE_SPOISON)
    uint64_t budget = 4096ull << 20;
    uint64_t used = 0;
    FILE* out = nullptr;
    std::map<CUmodule, Module> modules;
    int next_module = 0;
    CUcontext context = nullptr;  // the one context the tool serves (several: inconclusive)
    bool refused = false;         // an unsupported situation was reported: judge nothing more
    std::map<uint64_t, Alloc> allocs;  // by base address
    // Scratch buffers, grown as launches need (launches are serialized: each launch's end
    // synchronizes its stream before the program continues).
    void* scratch = nullptr;
    size_t scratch_size = 0;
    std::vector<Pending> pending;
    unsigned launches = 0;
    // sharedcheck's per-launch shadow (grown as launches need, like the scratch).
    void* sscratch = nullptr;
    size_t sscratch_size = 0;
    uint64_t shared_budget = 4096ull << 20;
    unsigned graph_launches = 0;  // kernel nodes of CUDA graphs stepped aside, not yet reported
    // Launches per kernel (its mangled name), written at exit ("launch_counts"): racegate plans
    // compute-sanitizer's sampled passes from them.
    std::map<std::string, unsigned long long> per_kernel;
    // The most shared memory (static and dynamic bytes) a launch of each kernel had, -1 once a
    // launch's is not known: racecheck, which checks shared memory only, skips kernels with none.
    std::map<std::string, long long> per_kernel_shared;
    // RACEGATE_GC_SAMPLE=F: a judging run checks each kernel's first F launches, then those
    // whose number is a power of two; the others run unjudged (0: every launch).
    unsigned long long sample_first = 0;
    unsigned long long sampled_out = 0;  // launches not judged by that rule
};

State* g = nullptr;
// Set while the tool itself calls the Sanitizer API, whose allocations must not become tracked memory.
thread_local bool busy = false;
// streamcheck's recorder (streams.cpp) gets every callback: RACEGATE_GC_MODE has "streams".
bool streams = false;
// RACEGATE_GC_FREEZE_TIME=1: every CUDA event time the program reads (cuEventElapsedTime) is
// 1 ms, so that what it prints from event timings no longer follows its speed. racegate's runs
// that tell a timing from a race's result compare two such runs, with and without jitter.
bool freeze_time = false;
// How many event times were held still, and how many kernel launch calls the program made
// (cuLaunchKernel and the like, whatever they returned), both written at exit: racegate trusts
// a run with the clock held still only if it held some, and calls "no kernel launched" only on
// a count of zero calls.
unsigned long long frozen_times = 0;
unsigned long long launch_calls = 0;
// The dynamic shared bytes of the launch API call this thread is in (-1: none seen), taken from
// the driver API's parameters at the call's entry, before the launch callback.
thread_local long long dyn_hint = -1;
// Inside a CUDA graph's launch (or a graph upload): kernel launches here are graph nodes.
thread_local int in_graph = 0;

// What the tool reads from the driver, looked up at run time (the program has loaded it).
struct Driver {
    CUresult (*func_attr)(int*, CUfunction_attribute, CUfunction) = nullptr;
    CUresult (*dev_attr)(int*, CUdevice_attribute, CUdevice) = nullptr;
};
Driver& driver()
{
    static Driver d;
    static bool looked = false;
    if (!looked) {
        looked = true;
        void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (!cuda)
            cuda = dlopen("libcuda.so.1", RTLD_NOW);
        if (cuda) {
            d.func_attr = (CUresult(*)(int*, CUfunction_attribute, CUfunction))dlsym(cuda, "cuFuncGetAttribute");
            d.dev_attr = (CUresult(*)(int*, CUdevice_attribute, CUdevice))dlsym(cuda, "cuDeviceGetAttribute");
        }
    }
    return d;
}

// The launch API's parameters as the driver API callback passes them (cuda.h's signatures).
struct LaunchKernelParams {
    CUfunction f;
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
};
struct LaunchKernelExParams {
    const CUlaunchConfig* config;
};

bool tracing();

void line(const std::string& s)
{
    if (g->out) {
        // One write per line (stdio locks the stream per call), so lines of two threads never
        // splice. Under RACEGATE_GC_TRACE each line is preceded by the wall clock (where a slow
        // run's time goes: patching, launches, teardown), in the same write.
        std::string text;
        if (tracing()) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            text = "{\"stage\":\"clock\",\"unix_us\":"
                + std::to_string((long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000) + "}\n";
        }
        text += s;
        text += '\n';
        fputs(text.c_str(), g->out);
        fflush(g->out);
    }
}

std::string esc(const std::string& s)
{
    std::string o;
    for (char c : s) {
        if (c == '"' || c == '\\') {
            o += '\\';
            o += c;
        } else if ((unsigned char)c < 0x20) {
            char b[8];
            snprintf(b, sizeof b, "\\u%04x", c);
            o += b;
        } else {
            o += c;
        }
    }
    return o;
}

void error(const std::string& what, SanitizerResult r)
{
    const char* s = nullptr;
    sanitizerGetResultString(r, &s);
    line("{\"error\":\"" + esc(what) + ": " + esc(s ? s : "?") + "\"}");
}

// Function and global-variable symbols of a cubin (ELF64).
void symbols(const char* img, size_t n, std::vector<std::string>& funcs, std::vector<std::string>& globals)
{
    if (n < sizeof(Elf64_Ehdr) || memcmp(img, ELFMAG, SELFMAG) != 0 || img[EI_CLASS] != ELFCLASS64)
        return;
    auto* eh = (const Elf64_Ehdr*)img;
    if (eh->e_shoff == 0 || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > n)
        return;
    auto* sh = (const Elf64_Shdr*)(img + eh->e_shoff);
    const char* shstr = eh->e_shstrndx < eh->e_shnum ? img + sh[eh->e_shstrndx].sh_offset : nullptr;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const char* str = img + sh[sh[i].sh_link].sh_offset;
        auto* sym = (const Elf64_Sym*)(img + sh[i].sh_offset);
        size_t count = sh[i].sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < count; k++) {
            std::string name = str + sym[k].st_name;
            if (name.empty())
                continue;
            int type = ELF64_ST_TYPE(sym[k].st_info);
            if (sym[k].st_shndx == SHN_UNDEF || sym[k].st_shndx >= eh->e_shnum)
                continue;
            if (type == STT_FUNC) {
                funcs.push_back(name);
            } else if (type == STT_OBJECT && sym[k].st_shndx < eh->e_shnum && shstr) {
                std::string sec = shstr + sh[sym[k].st_shndx].sh_name;
                if (sec.rfind(".nv.global", 0) == 0)
                    globals.push_back(name);
            }
        }
    }
}

// Whether RACEGATE_GC_TRACE=1 asks for the tool's stage lines; read once (the callback asks at
// every driver call, and getenv walks the whole environment).
bool tracing()
{
    static const bool on = [] {
        const char* v = getenv("RACEGATE_GC_TRACE");
        return v && *v == '1';
    }();
    return on;
}

void module_loaded(Sanitizer_ResourceModuleData* d)
{
    Module m;
    if (tracing())
        line("{\"stage\":\"module loaded\",\"bytes\":" + std::to_string(d->cubinSize) + "}");
    m.index = g->next_module++;
    SanitizerResult r = sanitizerAddPatchesFromFile(g->patches.c_str(), d->context);
    if (r != SANITIZER_SUCCESS) {
        error("adding the patches from " + g->patches, r);
        return;
    }
    struct Patch { Sanitizer_InstructionId id; const char* fn; unsigned modes; } p[] = {
        {SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, "gc_access", GC_MODE_DETECT | GC_MODE_FOOTPRINT},
        {SANITIZER_INSTRUCTION_BARRIER, "gc_barrier", GC_MODE_DETECT | GC_MODE_SHARED},
        {SANITIZER_INSTRUCTION_SYNCWARP, "gc_syncwarp", GC_MODE_DETECT | GC_MODE_SHARED},
        {SANITIZER_INSTRUCTION_SHFL, "gc_shfl", GC_MODE_DETECT | GC_MODE_SHARED},
        {SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS, "sc_access", GC_MODE_SHARED},
        {SANITIZER_INSTRUCTION_MEMCPY_ASYNC, "sc_memcpy_async", GC_MODE_SHARED},
        {SANITIZER_INSTRUCTION_BULK_COPY_GLOBAL_TO_SHARED, "sc_bulk_g2s", GC_MODE_SHARED},
        {SANITIZER_INSTRUCTION_BULK_COPY_SHARED_TO_SHARED, "sc_bulk_s2s", GC_MODE_SHARED},
        {SANITIZER_INSTRUCTION_MEMSET_SHARED, "sc_memset_shared", GC_MODE_SHARED},
        {SANITIZER_INSTRUCTION_MATRIX_MEMORY_ACCESS, "sc_matrix", GC_MODE_SHARED},
    };
    for (auto& x : p) {
        if (!(g->mode & x.modes))
            continue;
        r = sanitizerPatchInstructions(x.id, d->module, x.fn);
        if (r != SANITIZER_SUCCESS)
            error(std::string("patching for ") + x.fn, r);
    }
    if (g->mode & GC_MODE_JITTER) {
        r = sanitizerPatchInstructions(SANITIZER_INSTRUCTION_BARRIER_RELEASE, d->module, "gc_barrier_release");
        if (r != SANITIZER_SUCCESS)
            error("patching for gc_barrier_release", r);
    }
    r = sanitizerPatchModule(d->module);
    if (r != SANITIZER_SUCCESS)
        error("patching the module", r);

    if (tracing())
        line("{\"stage\":\"patched\"}");
    std::vector<std::string> funcs, globals;
    if (d->pCubin && d->cubinSize)
        symbols(d->pCubin, d->cubinSize, funcs, globals);
    if (tracing())
        line("{\"stage\":\"symbols\",\"functions\":" + std::to_string(funcs.size()) + ",\"globals\":" + std::to_string(globals.size()) + "}");
    std::string fjson;
    for (auto& f : funcs) {
        Function fn;
        fn.name = f;
        if (sanitizerGetFunctionPcAndSize(d->module, f.c_str(), &fn.pc, &fn.size) != SANITIZER_SUCCESS)
            continue;
        fjson += std::string(fjson.empty() ? "" : ",") + "{\"name\":\"" + esc(f) + "\",\"pc\":" + std::to_string(fn.pc)
            + ",\"size\":" + std::to_string(fn.size) + "}";
        m.functions.push_back(fn);
    }
    // Module-scope __device__ variables are memory too: track them like allocations. The driver
    // is looked up at run time (the program has loaded it; the tool does not link it).
    std::string gjson;
    using GetGlobal = CUresult (*)(CUdeviceptr*, size_t*, CUmodule, const char*);
    static GetGlobal get_global = nullptr;
    if (!get_global) {
        void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (!cuda)
            cuda = dlopen("libcuda.so.1", RTLD_NOW);
        if (cuda)
            get_global = (GetGlobal)dlsym(cuda, "cuModuleGetGlobal_v2");
    }
    for (auto& v : globals) {
        CUdeviceptr p = 0;
        size_t size = 0;
        if (!get_global || get_global(&p, &size, d->module, v.c_str()) != CUDA_SUCCESS || size == 0)
            continue;
        Alloc a;
        a.size = size;
        a.name = v;
        g->allocs[(uint64_t)p] = a;
        m.globals.push_back((uint64_t)p);
        gjson += std::string(gjson.empty() ? "" : ",") + "{\"name\":\"" + esc(v) + "\",\"base\":" + std::to_string((uint64_t)p)
            + ",\"size\":" + std::to_string(size) + "}";
    }
    if (tracing())
        line("{\"stage\":\"functions and globals\"}");
    std::string cubin = "module-" + std::to_string(m.index) + ".cubin";
    bool elf = d->pCubin && d->cubinSize >= 4 && memcmp(d->pCubin, ELFMAG, SELFMAG) == 0;
    if (elf && (g->mode & (GC_MODE_DETECT | GC_MODE_SHARED))) {
        FILE* f = fopen((g->dir + "/" + cubin).c_str(), "wb");
        if (f) {
            fwrite(d->pCubin, 1, d->cubinSize, f);
            fclose(f);
        }
    }
    line("{\"module\":" + std::to_string(m.index) + ",\"cubin\":\"" + (elf ? cubin : "") + "\",\"image_bytes\":"
         + std::to_string(d->cubinSize) + ",\"functions\":[" + fjson + "],\"globals\":[" + gjson + "]}");
    g->modules[d->module] = m;
}

void* scratch(size_t bytes)
{
    if (bytes > g->scratch_size) {
        if (g->scratch)
            sanitizerFree(nullptr, g->scratch);
        g->scratch = nullptr;
        g->scratch_size = 0;
        if (sanitizerAlloc(nullptr, &g->scratch, bytes) != SANITIZER_SUCCESS)
            return nullptr;
        g->scratch_size = bytes;
    }
    return g->scratch;
}

size_t up(size_t n) { return (n + 255) & ~(size_t)255; }

void launch_begin(Sanitizer_LaunchData* d)
{
    // This launch's dynamic shared size, taken once: a later launch by another API must not
    // see it.
    const long long dyn = dyn_hint;
    dyn_hint = -1;
    if (tracing())
        line("{\"stage\":\"launch begin\"}");
    if (in_graph > 0) {
        // A kernel node of a CUDA graph: the tool cannot serialize and read it back like a
        // stream launch (its data would outlive this call), so its patches get none.
        sanitizerSetLaunchCallbackData(d->hLaunch, d->function, d->hStream, nullptr);
        g->graph_launches++;
        return;
    }
    const std::string kname = d->functionName ? d->functionName : "?";
    const unsigned long long nth = ++g->per_kernel[kname];
    {
        // The launch's shared memory: the function's static size and the launch API's dynamic
        // size (the driver API callback before this one); unknown if either is.
        int st = 0;
        long long used = -1;
        if (dyn >= 0 && driver().func_attr
            && driver().func_attr(&st, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, d->function) == CUDA_SUCCESS)
            used = (st > 0 ? st : 0) + dyn;
        auto seen = g->per_kernel_shared.find(kname);
        if (seen == g->per_kernel_shared.end())
            g->per_kernel_shared[kname] = used;
        else if (seen->second >= 0)
            seen->second = used < 0 ? -1 : std::max(seen->second, used);
    }
    if (g->refused)
        return;
    // Whether this launch is judged (its state read back at the launch's end).
    const unsigned judge = GC_MODE_DETECT | GC_MODE_SHARED | GC_MODE_FOOTPRINT;
    // A footprint run alone keeps no shadow and no per-thread state: the launch's header and its
    // ranges only.
    const bool footprint_only = (g->mode & GC_MODE_FOOTPRINT) && !(g->mode & (GC_MODE_DETECT | GC_MODE_SHARED));
    if (g->sample_first && (g->mode & judge) && nth > g->sample_first && (nth & (nth - 1)) != 0) {
        // Sampled out (racegate's gate/sampling.rs, own_tools_check): its patches get no data
        // and return at once, as a graph node's do.
        sanitizerSetLaunchCallbackData(d->hLaunch, d->function, d->hStream, nullptr);
        g->sampled_out++;
        return;
    }
    if ((g->mode & judge) && g->context && g->context != d->context) {
        line("{\"error\":\"kernels launched in more than one CUDA context (several devices, or a context made after a reset): globalcheck serves one\"}");
        g->refused = true;
        return;
    }
    g->context = d->context;
    if ((g->mode & judge) && !g->pending.empty()) {
        // Another host thread launched between this one's launch and its end: the scratch
        // and the pending list assume one launch at a time.
        line("{\"error\":\"overlapping kernel launches from several host threads: globalcheck judges one at a time\"}");
        g->refused = true;
        return;
    }
    if ((unsigned long long)d->gridDim_x * d->gridDim_y * d->gridDim_z > (1ull << GC_BLOCK_BITS)) {
        line("{\"error\":\"a grid of more than 2^26 blocks (" + std::string(d->functionName ? esc(d->functionName) : "?")
             + "): block ids would alias\"}");
        g->refused = true;
        return;
    }
    Pending p;
    p.kernel = d->functionName ? d->functionName : "?";
    auto mi = g->modules.find(d->module);
    p.module = mi == g->modules.end() ? -1 : mi->second.index;
    p.grid[0] = d->gridDim_x; p.grid[1] = d->gridDim_y; p.grid[2] = d->gridDim_z;
    p.block[0] = d->blockDim_x; p.block[1] = d->blockDim_y; p.block[2] = d->blockDim_z;
    p.stream = d->hStream;
    p.launch = g->launches++;
    unsigned long long nblocks = (unsigned long long)p.grid[0] * p.grid[1] * p.grid[2];
    unsigned long long nthreads = nblocks * p.block[0] * p.block[1] * p.block[2];

    std::vector<GcRange> ranges;
    if (g->mode & GC_MODE_DETECT) {
        for (auto& [base, a] : g->allocs) {
            size_t bytes = ((a.size + 3) / 4) * sizeof(GcShadow);
            if (!a.shadow && !a.over_budget) {
                if (g->used + bytes <= g->budget && sanitizerAlloc(d->context, (void**)&a.shadow, bytes) == SANITIZER_SUCCESS)
                    g->used += bytes;
                else
                    a.over_budget = true;
                // The patches exchange 16-byte slots with 128-bit atomics, which need 16-byte
                // alignment (sanitizerAlloc is documented as cudaMalloc's equal: 256 bytes).
                if (a.shadow && (reinterpret_cast<uintptr_t>(a.shadow) % alignof(GcSlot)) != 0) {
                    line("{\"error\":\"a shadow allocation is not 16-byte aligned: the tool cannot use it\"}");
                    sanitizerFree(d->context, a.shadow);
                    g->used -= bytes;
                    a.shadow = nullptr;
                    a.over_budget = true;
                }
            }
            if (a.shadow) {
                sanitizerMemset(a.shadow, 0, bytes, d->hStream);
                ranges.push_back(GcRange{base, a.size, a.shadow, ~0ull, 0, ~0ull, 0});
            } else {
                p.untracked.push_back({base, a.size});
            }
        }
    } else if (footprint_only) {
        for (auto& [base, a] : g->allocs)
            ranges.push_back(GcRange{base, a.size, nullptr, ~0ull, 0, ~0ull, 0});
    }
    p.nranges = ranges.size();
    size_t o_launch = 0;
    size_t o_ranges = up(sizeof(GcLaunch));
    size_t o_epochs = o_ranges + up(ranges.size() * sizeof(GcRange));
    size_t o_wepochs = o_epochs + up(nthreads * 4);
    size_t o_lastread = o_wepochs + up(nthreads * 4);
    size_t o_release = o_lastread + up(nthreads * 8);
    size_t o_acquire = o_release + up(nblocks * 4);
    size_t o_thread_sync = o_acquire + up(nblocks * 4);
    size_t o_findings = o_thread_sync + up(nthreads * 4);
    size_t o_sfindings = o_findings + up(GC_FINDING_SLOTS * sizeof(GcFinding));
    // fencecheck's pcs and handoff table: only in its mode, so globalcheck's cost is unchanged.
    bool fence = (g->mode & GC_MODE_FENCE) != 0;
    size_t o_rel_pc = o_sfindings + up(GC_FINDING_SLOTS * sizeof(GcFinding));
    size_t o_acq_pc = o_rel_pc + (fence ? up(nblocks * 8) : 0);
    size_t o_trel_pc = o_acq_pc + (fence ? up(nblocks * 8) : 0);
    size_t o_tsync_pc = o_trel_pc + (fence ? up(nthreads * 8) : 0);
    size_t o_handoffs = o_tsync_pc + (fence ? up(nthreads * 8) : 0);
    size_t total = o_handoffs + (fence ? up(GC_HANDOFF_SLOTS * sizeof(GcHandoff)) : 0);
    if (!(g->mode & judge))
        total = up(sizeof(GcLaunch));
    else if (footprint_only)
        total = o_epochs;
    // sharedcheck: one shadow of the launch's shared window per block, zeroed (nothing written).
    uint64_t sm_bytes = 0, sm_words = 0;
    void* sshadow = nullptr;
    size_t sbytes = 0;
    if (g->mode & GC_MODE_SHARED) {
        int st = 0, reserved = 1024;
        // The static size as the driver reports it (rounded up: 1048 bytes of `float s[262]` read
        // 1056 on the H200, run 23); unknown when the call fails, and then no access is judged
        // past the end.
        if (driver().func_attr
            && driver().func_attr(&st, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, d->function) == CUDA_SUCCESS)
            p.sm_static_known = true;
        if (driver().dev_attr)
            driver().dev_attr(&reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, d->device);
        p.sm_static = st > 0 ? (uint64_t)st : 0;
        p.sm_reserved = reserved > 0 ? (uint64_t)reserved : 0;
        p.sm_dynamic_known = dyn >= 0;
        p.sm_dynamic = dyn > 0 ? (uint64_t)dyn : 0;
        p.cluster = (unsigned long long)d->clusterDim_x * d->clusterDim_y * d->clusterDim_z > 1;
        // Offsets in the shared window are covered from 0, the reserved part included (where
        // it lies is the hardware's), so that no user variable falls outside.
        sm_bytes = p.sm_reserved + p.sm_static + p.sm_dynamic;
        sm_words = (sm_bytes + 3) / 4;
        size_t written = up(nblocks * ((sm_words + 7) / 8) * 4);
        sbytes = written + up(nblocks * sm_words * sizeof(ScShadow));
        if (sbytes > g->shared_budget) {
            p.sm_over_budget = true;
        } else {
            if (sbytes > g->sscratch_size) {
                if (g->sscratch)
                    sanitizerFree(nullptr, g->sscratch);
                g->sscratch = nullptr;
                g->sscratch_size = 0;
                if (sanitizerAlloc(d->context, &g->sscratch, sbytes) == SANITIZER_SUCCESS)
                    g->sscratch_size = sbytes;
            }
            if (g->sscratch && (reinterpret_cast<uintptr_t>(g->sscratch) % alignof(GcSlot)) == 0) {
                sshadow = g->sscratch;
                sanitizerMemset(sshadow, 0, sbytes, d->hStream);
            } else {
                p.sm_over_budget = true;
            }
        }
    }
    char* base = (char*)scratch(total);
    if (!base) {
        line("{\"error\":\"no device memory for launch " + std::to_string(p.launch) + " of " + esc(p.kernel) + "\"}");
        return;
    }
    GcLaunch h;
    memset(&h, 0, sizeof h);
    h.mode = g->mode;
    h.jitter_seed = g->seed;
    h.spoison_byte = g->spoison_byte;
    h.nthreads = nthreads;
    h.nblocks = nblocks;
    if (g->mode & judge) {
        h.nranges = (unsigned)ranges.size();
        h.ranges = (GcRange*)(base + o_ranges);
        h.smin_offset = ~0ull;
        if (!footprint_only) {
            h.epochs = (unsigned*)(base + o_epochs);
            h.wepochs = (unsigned*)(base + o_wepochs);
            h.last_read = (unsigned long long*)(base + o_lastread);
            h.block_release = (unsigned*)(base + o_release);
            h.block_acquire = (unsigned*)(base + o_acquire);
            h.thread_sync = (unsigned*)(base + o_thread_sync);
            h.findings = (GcFinding*)(base + o_findings);
        }
        if (fence) {
            h.block_release_pc = (unsigned long long*)(base + o_rel_pc);
            h.block_acquire_pc = (unsigned long long*)(base + o_acq_pc);
            h.thread_release_pc = (unsigned long long*)(base + o_trel_pc);
            h.thread_sync_pc = (unsigned long long*)(base + o_tsync_pc);
            h.handoffs = (GcHandoff*)(base + o_handoffs);
        }
        if (sshadow) {
            h.sm_bytes = sm_bytes;
            h.sm_words = sm_words;
            h.sm_dynamic = (unsigned)p.sm_dynamic;
            // Where declared shared memory surely ends: judged only when the launch said its
            // dynamic size and is no cluster launch (distributed shared memory has other offsets);
            // dynamic memory may start past an alignment gap, so up to 1 KiB of it is allowed.
            if (p.sm_dynamic_known && p.sm_static_known && !p.cluster)
                h.sm_end = p.sm_dynamic == 0 ? sm_bytes
                                             : p.sm_reserved + ((p.sm_static + 1023) & ~1023ull) + p.sm_dynamic;
            size_t written = up(nblocks * ((sm_words + 7) / 8) * 4);
            h.swritten = (unsigned*)sshadow;
            h.sshadow = (ScShadow*)((char*)sshadow + written);
            h.sfindings = (GcFinding*)(base + o_sfindings);
        }
        if (total > o_epochs)
            sanitizerMemset(base + o_epochs, 0, total - o_epochs, d->hStream);
        if (!ranges.empty())
            sanitizerMemcpyHostToDeviceAsync(base + o_ranges, ranges.data(), ranges.size() * sizeof(GcRange), d->hStream);
    }
    sanitizerMemcpyHostToDeviceAsync(base + o_launch, &h, sizeof h, d->hStream);
    p.dlaunch = (GcLaunch*)(base + o_launch);
    SanitizerResult r = sanitizerSetLaunchCallbackData(d->hLaunch, d->function, d->hStream, p.dlaunch);
    if (r != SANITIZER_SUCCESS)
        error("setting the launch's data", r);
    // Jitter alone reads nothing back: the launch stays asynchronous (a program whose kernels
    // wait on each other or on the host must not be serialized into a hang).
    if (g->mode & judge)
        g->pending.push_back(p);
}

const char* kind_name(unsigned k)
{
    switch (k) {
    case GC_KIND_WRITE_WRITE: return "write-write";
    case GC_KIND_READ_WRITE: return "read-write";
    case GC_KIND_WRITE_READ: return "write-read";
    case GC_KIND_LOST_UPDATE: return "lost-update";
    case SC_KIND_UNINIT: return "uninitialized-read";
    case SC_KIND_ATOMIC_PLAIN: return "atomic-plain";
    case SC_KIND_PAST_END: return "past-end";
    }
    return "?";
}

const char* scope_name(unsigned s)
{
    switch (s) {
    case GC_SCOPE_BLOCKS: return "blocks";
    case GC_SCOPE_WARPS: return "warps";
    case GC_SCOPE_LANES: return "lanes";
    case 0: return "block";
    }
    return "?";
}

void launch_end()
{
    if (tracing())
        line("{\"stage\":\"launch end\"}");
    for (auto& p : g->pending) {
        SanitizerResult r = sanitizerStreamSynchronize(p.stream);
        GcLaunch h;
        memset(&h, 0, sizeof h);
        if (r == SANITIZER_SUCCESS)
            r = sanitizerMemcpyDeviceToHost(&h, p.dlaunch, sizeof h, p.stream);
        std::vector<GcFinding> f, sf;
        std::vector<GcHandoff> ho;
        if (r == SANITIZER_SUCCESS && h.handoffs && (g->mode & GC_MODE_FENCE)) {
            ho.resize(GC_HANDOFF_SLOTS);
            r = sanitizerMemcpyDeviceToHost(ho.data(), h.handoffs, ho.size() * sizeof(GcHandoff), p.stream);
        }
        if (r == SANITIZER_SUCCESS && h.findings && (g->mode & GC_MODE_DETECT)) {
            f.resize(GC_FINDING_SLOTS);
            r = sanitizerMemcpyDeviceToHost(f.data(), h.findings, f.size() * sizeof(GcFinding), p.stream);
        }
        std::vector<GcRange> touched;
        if (r == SANITIZER_SUCCESS && h.ranges && p.nranges && (g->mode & GC_MODE_FOOTPRINT)) {
            touched.resize(p.nranges);
            r = sanitizerMemcpyDeviceToHost(touched.data(), h.ranges, touched.size() * sizeof(GcRange), p.stream);
        }
        if (r == SANITIZER_SUCCESS && h.sfindings) {
            sf.resize(GC_FINDING_SLOTS);
            r = sanitizerMemcpyDeviceToHost(sf.data(), h.sfindings, sf.size() * sizeof(GcFinding), p.stream);
        }
        unsigned long long want = (unsigned long long)p.grid[0] * p.grid[1] * p.grid[2] * p.block[0] * p.block[1] * p.block[2];
        if (r != SANITIZER_SUCCESS || h.nthreads != want) {
            // A fault in the kernel (or the tool) leaves the context unusable: nothing read back
            // can be trusted, and "nothing found" must not be concluded from it.
            if (r != SANITIZER_SUCCESS)
                error("reading back launch " + std::to_string(p.launch) + " of " + p.kernel, r);
            else
                line("{\"error\":\"launch " + std::to_string(p.launch) + " of " + esc(p.kernel) + ": its state did not come back\"}");
            continue;
        }
        std::string s = "{\"launch\":" + std::to_string(p.launch) + ",\"kernel\":\"" + esc(p.kernel)
            + "\",\"module\":" + std::to_string(p.module) + ",\"grid\":[" + std::to_string(p.grid[0]) + ","
            + std::to_string(p.grid[1]) + "," + std::to_string(p.grid[2]) + "],\"block\":["
            + std::to_string(p.block[0]) + "," + std::to_string(p.block[1]) + "," + std::to_string(p.block[2])
            + "],\"mode\":" + std::to_string(g->mode) + ",\"accesses\":" + std::to_string(h.accesses)
            + ",\"untracked_accesses\":" + std::to_string(h.untracked) + ",\"dropped\":" + std::to_string(h.dropped)
            + ",\"named_barriers\":" + std::to_string(h.named_barriers) + ",\"epoch_overflow\":" + std::to_string(h.epoch_overflow)
            + ",\"untracked_allocations\":[";
        for (size_t i = 0; i < p.untracked.size(); i++)
            s += std::string(i ? "," : "") + "{\"base\":" + std::to_string(p.untracked[i].first) + ",\"size\":"
                + std::to_string(p.untracked[i].second) + "}";
        s += "],\"findings\":[";
        bool first = true;
        for (auto& x : f) {
            if (x.key == 0)
                continue;
            std::string alloc;
            uint64_t alloc_base = 0;
            for (auto& [b, a] : g->allocs)
                if (x.addr >= b && x.addr < b + a.size) {
                    alloc_base = b;
                    alloc = a.name;
                }
            s += std::string(first ? "" : ",") + "{\"kind\":\"" + kind_name(x.kind) + "\",\"scope\":\""
                + scope_name(x.scope) + "\",\"pc_now\":" + std::to_string(x.pc_now) + ",\"pc_then\":"
                + std::to_string(x.pc_then) + ",\"addr\":" + std::to_string(x.addr) + ",\"alloc_base\":"
                + std::to_string(alloc_base) + ",\"alloc_name\":\"" + esc(alloc) + "\",\"block_now\":"
                + std::to_string(x.block_now) + ",\"thread_now\":" + std::to_string(x.thread_now)
                + ",\"block_then\":" + std::to_string(x.block_then) + ",\"thread_then\":"
                + std::to_string(x.thread_then) + ",\"value_now\":" + std::to_string(x.value_now)
                + ",\"value_then\":" + std::to_string(x.value_then) + ",\"count\":" + std::to_string(x.count) + "}";
            first = false;
        }
        s += "]";
        if (g->mode & GC_MODE_SHARED) {
            s += ",\"shared\":{\"bytes\":" + std::to_string(h.sm_bytes) + ",\"static\":" + std::to_string(p.sm_static)
                + ",\"dynamic\":" + std::to_string(p.sm_dynamic) + ",\"dynamic_known\":" + (p.sm_dynamic_known ? "true" : "false")
                + ",\"reserved\":" + std::to_string(p.sm_reserved) + ",\"over_budget\":" + (p.sm_over_budget ? "true" : "false")
                + ",\"cluster\":" + (p.cluster ? "true" : "false") + ",\"accesses\":" + std::to_string(h.saccesses)
                + ",\"untracked\":" + std::to_string(h.suntracked) + ",\"unsized\":" + std::to_string(h.sunsized)
                + ",\"unseen_writes\":" + std::to_string(h.sunseen) + ",\"dropped\":" + std::to_string(h.sdropped)
                + ",\"min_offset\":" + (h.smin_offset == ~0ull ? std::string("null") : std::to_string(h.smin_offset))
                + ((g->mode & GC_MODE_SPOISON) ? ",\"poisoned\":" + std::to_string(h.spoisoned) : std::string())
                + ",\"end\":" + std::to_string(h.sm_end)
                + "},\"shared_findings\":[";
            bool sfirst = true;
            for (auto& x : sf) {
                if (x.key == 0)
                    continue;
                s += std::string(sfirst ? "" : ",") + "{\"kind\":\"" + kind_name(x.kind) + "\",\"scope\":\""
                    + scope_name(x.scope) + "\",\"pc_now\":" + std::to_string(x.pc_now) + ",\"pc_then\":"
                    + std::to_string(x.pc_then) + ",\"offset\":" + std::to_string(x.addr) + ",\"block_now\":"
                    + std::to_string(x.block_now) + ",\"thread_now\":" + std::to_string(x.thread_now)
                    + ",\"thread_then\":" + std::to_string(x.thread_then) + ",\"bytes\":" + std::to_string(x.value_now) + ",\"now_atomic\":" + (x.value_then ? "true" : "false")
                    + ",\"count\":" + std::to_string(x.count) + "}";
                sfirst = false;
            }
            s += "]";
        }
        s += "}";
        line(s);
        // A footprint run: the bytes the launch read and wrote per allocation, into streamcheck's
        // trace right after the launch's own line (absolute addresses, [lo, hi) each).
        if (g->mode & GC_MODE_FOOTPRINT) {
            std::string reads, writes;
            for (const auto& x : touched) {
                if (x.rhi > 0)
                    reads += std::string(reads.empty() ? "" : ",") + "[" + std::to_string(x.base + x.rlo) + ","
                        + std::to_string(x.base + x.rhi) + "]";
                if (x.whi > 0)
                    writes += std::string(writes.empty() ? "" : ",") + "[" + std::to_string(x.base + x.wlo) + ","
                        + std::to_string(x.base + x.whi) + "]";
            }
            std::string f = "{\"op\":\"footprint\",\"name\":\"" + esc(p.kernel) + "\",\"s\":"
                + std::to_string((uint64_t)(uintptr_t)p.stream) + ",\"untracked\":" + (h.untracked ? "true" : "false")
                + ",\"reads\":[" + reads + "],\"writes\":[" + writes + "]}";
            if (streams)
                streams_line(f);
            else
                line(f);
        }
        // fencecheck: one line per distinct handoff, then the launch's summary (which says the
        // launch was recorded whole, or how many handoffs the table dropped).
        if (g->mode & GC_MODE_FENCE) {
            for (auto& x : ho) {
                if (x.key == 0)
                    continue;
                line("{\"handoff\":{\"launch\":" + std::to_string(p.launch) + ",\"kernel\":\"" + esc(p.kernel)
                     + "\",\"module\":" + std::to_string(p.module) + ",\"pc_store\":" + std::to_string(x.pc_store)
                     + ",\"pc_release\":" + std::to_string(x.pc_release) + ",\"pc_acquire\":"
                     + std::to_string(x.pc_acquire) + ",\"pc_read\":" + std::to_string(x.pc_read) + ",\"addr\":"
                     + std::to_string(x.addr) + ",\"block_store\":" + std::to_string(x.block_store)
                     + ",\"thread_store\":" + std::to_string(x.thread_store) + ",\"block_read\":"
                     + std::to_string(x.block_read) + ",\"thread_read\":" + std::to_string(x.thread_read)
                     + ",\"count\":" + std::to_string(x.count) + "}}");
            }
            line("{\"handoffs\":{\"launch\":" + std::to_string(p.launch) + ",\"kernel\":\"" + esc(p.kernel)
                 + "\",\"recorded\":" + (h.handoffs ? "true" : "false") + ",\"dropped\":" + std::to_string(h.hdropped) + "}}");
        }
    }
    g->pending.clear();
}

// At exit: how often each kernel was launched, and how many launches sampling left unjudged.
void launch_counts()
{
    if (!g)
        return;
    std::lock_guard<std::recursive_mutex> guard(g->lock);
    if (g->per_kernel.empty())
        return;
    std::string s = "{\"launch_counts\":[";
    bool first = true;
    for (const auto& [k, n] : g->per_kernel) {
        auto sh = g->per_kernel_shared.find(k);
        const long long shared = sh == g->per_kernel_shared.end() ? -1 : sh->second;
        s += std::string(first ? "" : ",") + "{\"kernel\":\"" + esc(k) + "\",\"launches\":" + std::to_string(n)
             + ",\"shared\":" + std::to_string(shared) + "}";
        first = false;
    }
    line(s + "],\"sampled_out\":" + std::to_string(g->sampled_out) + "}");
}

// Writes the note for kernel launches of CUDA graphs stepped aside since the last one.
void stepped_aside()
{
    if (g->graph_launches == 0)
        return;
    line("{\"note\":\"stepped-aside\",\"reason\":\"cuda-graph\",\"launches\":" + std::to_string(g->graph_launches) + "}");
    g->graph_launches = 0;
}

// Memory at `base` is no longer the program's (freed, or its module unloaded): untracked, its
// shadow given back to the budget.
void forget(uint64_t base)
{
    auto it = g->allocs.find(base);
    if (it == g->allocs.end())
        return;
    if (it->second.shadow) {
        sanitizerFree(nullptr, it->second.shadow);
        g->used -= ((it->second.size + 3) / 4) * sizeof(GcShadow);
    }
    g->allocs.erase(it);
}

// RACEGATE_GC_PROFILE=1: the time the tool's callbacks took, per callback domain, written at
// exit as one "profile" line (where a tool's cost goes; off by default, one branch per callback).
struct Profile {
    uint64_t ns[32] = {}, calls[32] = {};
};
Profile* profile = nullptr;

uint64_t now_ns()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void write_profile()
{
    if (!profile || !g)
        return;
    std::string s = "{\"profile\":[";
    for (int d = 0; d < 32; d++) {
        // Other threads may still be in a callback at exit: read as they write, atomically.
        const uint64_t calls = __atomic_load_n(&profile->calls[d], __ATOMIC_RELAXED);
        const uint64_t ns = __atomic_load_n(&profile->ns[d], __ATOMIC_RELAXED);
        if (calls)
            s += std::string(s.back() == '[' ? "" : ",") + "{\"domain\":" + std::to_string(d) + ",\"calls\":"
                 + std::to_string(calls) + ",\"ns\":" + std::to_string(ns) + "}";
    }
    line(s + "]}");
}

void callback_body(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* cbdata);

// At the exit of a successful cuEventElapsedTime (and its _v2), the time it wrote becomes 1 ms
// (its first parameter is the float it writes: `float* pMilliseconds, CUevent, CUevent`).
void frozen_event_time(const Sanitizer_CallbackData* c)
{
    if (c->callbackSite != SANITIZER_API_EXIT || !c->functionName || !c->functionParams || !c->functionReturnValue)
        return;
    if (strncmp(c->functionName, "cuEventElapsedTime", 18) != 0)
        return;
    if (*(const CUresult*)c->functionReturnValue != CUDA_SUCCESS)
        return;
    float* ms = *(float* const*)c->functionParams;
    if (ms) {
        *ms = 1.0f;
        frozen_times++;
    }
}

// Counts the program's kernel launch calls, at their entry (a host function launch is none).
void count_launch_call(const Sanitizer_CallbackData* c)
{
    if (c->callbackSite == SANITIZER_API_ENTER && c->functionName && strncmp(c->functionName, "cuLaunch", 8) == 0
        && strncmp(c->functionName, "cuLaunchHostFunc", 16) != 0)
        launch_calls++;
}

void write_counts()
{
    if (!g)
        return;
    std::lock_guard<std::recursive_mutex> guard(g->lock);
    line("{\"launch_calls\":" + std::to_string(launch_calls) + "}");
    if (freeze_time)
        line("{\"frozen_event_times\":" + std::to_string(frozen_times) + "}");
}

void callback(void*, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* cbdata)
{
    if (!profile) {
        callback_body(domain, cbid, cbdata);
        return;
    }
    uint64_t t0 = now_ns();
    callback_body(domain, cbid, cbdata);
    unsigned d = (unsigned)domain & 31u;
    __atomic_fetch_add(&profile->ns[d], now_ns() - t0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&profile->calls[d], 1, __ATOMIC_RELAXED);
}

void callback_body(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* cbdata)
{
    if (tracing())
        line("{\"stage\":\"callback\",\"domain\":" + std::to_string((int)domain) + ",\"cbid\":" + std::to_string((int)cbid) + "}");
    std::lock_guard<std::recursive_mutex> guard(g->lock);
    if (busy && (domain == SANITIZER_CB_DOMAIN_RESOURCE || domain == SANITIZER_CB_DOMAIN_DRIVER_API))
        return;  // the tool's own allocations, patch modules and driver calls
    if (domain == SANITIZER_CB_DOMAIN_DRIVER_API) {
        count_launch_call((const Sanitizer_CallbackData*)cbdata);
        if (freeze_time)
            frozen_event_time((const Sanitizer_CallbackData*)cbdata);
    }
    if (streams && !busy)
        streams_on_callback(domain, cbid, cbdata);
    if (g->mode == 0)
        return;  // streamcheck alone, or only event times held still: no module patched, no launch touched
    struct Busy { Busy() { busy = true; } ~Busy() { busy = false; } } mark;
    if (domain == SANITIZER_CB_DOMAIN_RESOURCE) {
        switch (cbid) {
        case SANITIZER_CBID_RESOURCE_MODULE_LOADED:
            module_loaded((Sanitizer_ResourceModuleData*)cbdata);
            break;
        case SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING: {
            // Its __device__ variables go with it, as freed memory does: a later module's launch
            // (the next case of a batch) must not find them tracked where a run of it alone
            // would count its access there as outside every allocation.
            auto it = g->modules.find(((Sanitizer_ResourceModuleData*)cbdata)->module);
            if (it != g->modules.end()) {
                for (uint64_t base : it->second.globals)
                    forget(base);
                g->modules.erase(it);
            }
            break;
        }
        case SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
            // cudaDeviceReset and the like: the shadows and the scratch die with the context.
            for (auto& [base, a] : g->allocs)
                a.shadow = nullptr;
            g->allocs.clear();
            g->used = 0;
            g->scratch = nullptr;
            g->scratch_size = 0;
            g->context = nullptr;
            break;
        case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC:
        case SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC: {
            auto* m = (Sanitizer_ResourceMemoryData*)cbdata;
            Alloc a;
            a.size = m->size;
            g->allocs[m->address] = a;
            break;
        }
        case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE:
        case SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC:
            forget(((Sanitizer_ResourceMemoryData*)cbdata)->address);
            break;
        default:
            break;
        }
    } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH) {
        if (cbid == SANITIZER_CBID_LAUNCH_BEGIN)
            launch_begin((Sanitizer_LaunchData*)cbdata);
        else if (cbid == SANITIZER_CBID_LAUNCH_END && in_graph == 0)
            launch_end();
    } else if (domain == SANITIZER_CB_DOMAIN_GRAPHS) {
        switch (cbid) {
        case SANITIZER_CBID_GRAPHS_GRAPHEXEC_CREATING:
        case SANITIZER_CBID_GRAPHS_LAUNCH_BEGIN:
            in_graph++;
            break;
        case SANITIZER_CBID_GRAPHS_GRAPHEXEC_CREATED:
        case SANITIZER_CBID_GRAPHS_LAUNCH_END:
            if (in_graph > 0)
                in_graph--;
            stepped_aside();
            break;
        case SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN: {
            // A kernel node: its patches get no data, so they return at once (no stale data of
            // an earlier launch, which is what faulted with cudaErrorIllegalAddress).
            auto* n = (Sanitizer_GraphNodeLaunchData*)cbdata;
            if (n->nodeType == CU_GRAPH_NODE_TYPE_KERNEL) {
                sanitizerSetLaunchCallbackData(n->launchData.hLaunch, n->launchData.function, n->launchData.hStream,
                                               nullptr);
                // Its shared memory is not measured here: a kernel also launched in a graph is
                // never known to have none (racecheck keeps it).
                if (n->launchData.functionName)
                    g->per_kernel_shared[n->launchData.functionName] = -1;
                if (!n->isGraphUpload)
                    g->graph_launches++;
            }
            break;
        }
        default:
            break;
        }
    } else if (domain == SANITIZER_CB_DOMAIN_DRIVER_API) {
        // The launch API's dynamic shared size, for sharedcheck's window (the launch callback
        // that follows on this thread does not carry it).
        auto* c = (const Sanitizer_CallbackData*)cbdata;
        if (c->callbackSite == SANITIZER_API_ENTER && c->functionName && c->functionParams) {
            // No std::string per driver call: this runs at every one of them.
            const char* fn = c->functionName;
            auto is = [fn](const char* name) { return strcmp(fn, name) == 0; };
            if (strncmp(fn, "cuLaunch", 8) != 0)
                return;
            if (is("cuLaunchKernel") || is("cuLaunchKernel_ptsz") || is("cuLaunchCooperativeKernel")
                     || is("cuLaunchCooperativeKernel_ptsz"))
                dyn_hint = ((const LaunchKernelParams*)c->functionParams)->sharedMemBytes;
            else if (is("cuLaunchKernelEx") || is("cuLaunchKernelEx_ptsz")) {
                const CUlaunchConfig* cfg = ((const LaunchKernelExParams*)c->functionParams)->config;
                if (cfg)
                    dyn_hint = cfg->sharedMemBytes;
            }
        }
    }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection()
{
    if (g)
        return 0;
    g = new State();
    // Module ids carry the pid: processes that share a report folder never mix their modules.
    g->next_module = (int)((getpid() & 0x7fff) << 16);
    const char* dir = getenv("RACEGATE_GC_DIR");
    const char* patches = getenv("RACEGATE_GC_PATCHES");
    const char* mode = getenv("RACEGATE_GC_MODE");
    const char* seed = getenv("RACEGATE_GC_SEED");
    const char* budget = getenv("RACEGATE_GC_BUDGET_MB");
    g->dir = dir ? dir : ".";
    g->patches = patches ? patches : "";
    if (mode) {
        std::string m = mode;
        g->mode = 0;
        if (m.find("detect") != std::string::npos)
            g->mode |= GC_MODE_DETECT;
        if (m.find("jitter") != std::string::npos)
            g->mode |= GC_MODE_JITTER;
        if (m.find("shared") != std::string::npos)
            g->mode |= GC_MODE_SHARED;
        // fencecheck reads the handoffs globalcheck's rule orders: detect runs with it.
        if (m.find("streams") != std::string::npos)
            streams = streams_init(g->dir.c_str());
        if (m.find("fence") != std::string::npos)
            g->mode |= GC_MODE_FENCE | GC_MODE_DETECT;
        // streamcheck's confirm runs: what each launch touched, per allocation.
        if (m.find("footprint") != std::string::npos)
            g->mode |= GC_MODE_FOOTPRINT;
    }
    // sharedcheck's confirm runs: reads of unwritten shared bytes get poison from this seed
    // first, so that racegate can see whether the value reaches the output.
    if (const char* sp = getenv("RACEGATE_GC_SPOISON")) {
        if ((g->mode & GC_MODE_SHARED) && *sp) {
            g->mode |= GC_MODE_SPOISON;
            g->spoison_byte = strtoull(sp, nullptr, 10) & 0xffu;
        }
    }
    if (const char* sb = getenv("RACEGATE_GC_SHARED_BUDGET_MB"))
        g->shared_budget = strtoull(sb, nullptr, 10) << 20;
    if (const char* sf = getenv("RACEGATE_GC_SAMPLE"))
        g->sample_first = strtoull(sf, nullptr, 10);
    if (seed)
        g->seed = strtoull(seed, nullptr, 10);
    if (budget)
        g->budget = strtoull(budget, nullptr, 10) << 20;
    g->out = fopen((g->dir + "/report.jsonl").c_str(), "a");
    line("{\"tool\":\"globalcheck\",\"mode\":" + std::to_string(g->mode) + ",\"budget_bytes\":"
         + std::to_string(g->budget) + ",\"shared_budget_bytes\":" + std::to_string(g->shared_budget) + ",\"patches\":\"" + esc(g->patches) + "\"}");
    if (const char* ft = getenv("RACEGATE_GC_FREEZE_TIME"); ft && *ft == '1')
        freeze_time = true;
    if (const char* pf = getenv("RACEGATE_GC_PROFILE"); pf && *pf == '1') {
        profile = new Profile();
        atexit(write_profile);
    }
    Sanitizer_SubscriberHandle handle;
    SanitizerResult r = sanitizerSubscribe(&handle, callback, nullptr);
    if (r != SANITIZER_SUCCESS) {
        error("subscribing", r);
        return 1;
    }
    if (tracing())
        line("{\"stage\":\"subscribed\"}");
    sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_RESOURCE);
    sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_LAUNCH);
    sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_GRAPHS);
    if (streams)
        streams_enable(handle);
    // The launch API's dynamic shared size: sharedcheck's window, and every kernel's shared
    // memory in the launch counts.
    sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_DRIVER_API);
    atexit(launch_counts);
    atexit(write_counts);
    if (tracing()) {
        line("{\"stage\":\"enabled\"}");
        atexit([] { line("{\"stage\":\"exit\"}"); });
    }
    return 0;
}
