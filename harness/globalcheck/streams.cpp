// streamcheck's recorder (see streams.h). One JSON line per operation, with its host thread `t`,
// its stream (`s`: the Sanitizer API's unique handle; `api`: the CUstream the program passed,
// 0 or 1 for the legacy default stream, 2 for the per-thread one) and its call site (`site`:
// the return addresses of the host backtrace that lie in the program's own executable, as
// offsets from its load bias, innermost first; racegate maps them to file:line with addr2line).
// Line kinds: start, stream, alloc, free, kernel, memcpy, memset, record, wait, event_sync,
// stream_sync, ctx_sync, host, guard, unjudged (the fields are the ones streams.rs reads).
//
// Kernels: the pointer words of a launch's arguments that point into a known allocation. The
// driver's launch call (cuLaunchKernel*, which nvcc's <<<>>> reaches through cudaLaunchKernel)
// gives `kernelParams` (a pointer to each argument's value) and the stream as passed; its
// `f` is a CUkernel when the runtime loaded the module as a library (CUDA 12+), so the layout
// comes from cuFuncGetParamInfo on the launch callback's loaded CUfunction, else on `f`, else
// from cuKernelGetParamInfo. Without a layout the launch says `"args_known":false` and why;
// with one, `params` (how many parameters it has). Host accesses: while an async copy may
// still write (or read) host-visible memory (pinned, mapped or managed), and after a kernel
// launch (any host-visible allocation: a kernel may reach memory its arguments do not name),
// its pages are protected; a fault there is written as a host access (with `in_api` when it
// happened inside a CUDA call) and the guards on that page are lifted (the others on it are
// set again). A guard lifted by an access outside its own bytes, or inside a CUDA call, is
// written as `unguard`: host accesses to those bytes are not seen from then on, and racegate
// finds the run inconclusive if a device operation may still touch them. Guards are lifted at
// a synchronization that covers their stream; one kept too long only costs a fault that
// racegate's model then finds ordered. A fault on no guard goes to the program's own handler
// (called from ours, never by restoring it while guards stand) or, with none, kills the
// program as it would have. System calls given guarded memory (read(2) into it) fail with
// EFAULT instead of faulting: those accesses are not seen.
//
// cudaFreeAsync: the allocation is kept as "freed" until an allocation takes its addresses
// again, so that a launch given a pointer into it still names it.
#include "streams.h"

#include <cuda.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>
#include <dlfcn.h>
#include <execinfo.h>
#include <unwind.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

namespace {

struct Alloc {
    uint64_t size = 0;
    std::string kind;
};

struct Guard {
    uint64_t lo = 0, hi = 0;      // page-aligned
    uint64_t base = 0, size = 0;  // the bytes guarded
    uint64_t stream = 0;
    int prot = PROT_NONE;
};

struct Recorder {
    std::recursive_mutex lock;
    FILE* out = nullptr;
    std::map<uint64_t, Alloc> allocs;
    std::map<uint64_t, uint64_t> event_stream;  // event -> stream of its last record
    std::vector<Guard> guards;
    std::map<uint64_t, uint64_t> host_visible;  // base -> size of pinned, mapped, managed memory
    uint64_t lifted[64][2] = {};                // page ranges whose guards were lifted lately
    unsigned lifted_next = 0;
    uintptr_t exe_bias = 0, exe_lo = ~(uintptr_t)0, exe_hi = 0;
    CUcontext context = nullptr;
    struct sigaction old_segv;
    CUresult (*param_info)(CUfunction, size_t, size_t*, size_t*) = nullptr;
    CUresult (*kernel_param_info)(CUkernel, size_t, size_t*, size_t*) = nullptr;
    CUresult (*stream_flags)(CUstream, unsigned*) = nullptr;
};

Recorder* r = nullptr;
thread_local int in_api = 0;              // depth of driver API calls on this thread
thread_local bool api_ptsz = false;       // the current driver call is a per-thread-stream variant
// The driver launch call this thread is in (set at its entry, cleared at its exit: the argument
// pointers are valid only until it returns).
struct PendingLaunch {
    bool live = false;
    CUfunction f = nullptr;
    void** params = nullptr;
    void** extra = nullptr;
    uint64_t api = 0;  // the stream as passed (api_stream)
};
thread_local PendingLaunch pending;
thread_local uint64_t last_fault = 0;  // a fault on no guard at the same address twice is not ours
thread_local int same_fault = 0;

// The thread's id, asked of the kernel once per thread (a system call per operation was part of
// streamcheck's cost on ci/streams-cost).
uint64_t tid()
{
    thread_local uint64_t id = (uint64_t)syscall(SYS_gettid);
    return id;
}

// Lines written since the last flush. The log is flushed every FLUSH_EVERY lines, at every
// synchronization, before the program dies of a fault, and by exit(): a write system call per
// operation cost more than the operation (H200 run 32, call A: ci/streams-cost 2.81x the whole
// run). A program killed at its deadline can lose its last lines: it is a hang then, and its
// streamcheck run is not judged on them.
unsigned unflushed = 0;
constexpr unsigned FLUSH_EVERY = 512;

void flush()
{
    if (r && r->out)
        fflush(r->out);
    unflushed = 0;
}

void emit(const std::string& s)
{
    if (!r->out)
        return;
    fputs(s.c_str(), r->out);
    fputc('\n', r->out);
    if (++unflushed >= FLUSH_EVERY)
        flush();
}

std::string esc(const char* p)
{
    std::string o;
    for (; p && *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            o += '\\';
            o += (char)c;
        } else if (c < 0x20) {
            char b[8];
            snprintf(b, sizeof b, "\\u%04x", c);
            o += b;
        } else {
            o += (char)c;
        }
    }
    return o;
}

std::string n(uint64_t v) { return std::to_string(v); }

// The frames of this call that lie in the program's executable (the CUDA runtime linked into it
// included: racegate passes over those by name).
// The unwinding stops at the 12th such frame, or at the first frame outside the executable
// after its own (main's caller, in the C library): those frames were never kept, and unwinding
// them cost a lookup each.
struct Walk {
    std::string s = "[";
    int kept = 0;
};

_Unwind_Reason_Code walk_frame(struct _Unwind_Context* ctx, void* arg)
{
    auto* w = (Walk*)arg;
    uintptr_t pc = (uintptr_t)_Unwind_GetIP(ctx);
    if (pc < r->exe_lo || pc >= r->exe_hi)
        return w->kept ? _URC_END_OF_STACK : _URC_NO_REASON;
    w->s += std::string(w->kept ? "," : "") + n(pc - r->exe_bias);
    return ++w->kept >= 12 ? _URC_END_OF_STACK : _URC_NO_REASON;
}

std::string site()
{
    Walk w;
    _Unwind_Backtrace(walk_frame, &w);
    return w.s + "]";
}

int first_object(struct dl_phdr_info* info, size_t, void*)
{
    // The first object is the program itself.
    r->exe_bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)& p = info->dlpi_phdr[i];
        if (p.p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + p.p_vaddr, hi = lo + p.p_memsz;
        if (lo < r->exe_lo)
            r->exe_lo = lo;
        if (hi > r->exe_hi)
            r->exe_hi = hi;
    }
    return 1;
}

const Alloc* alloc_of(uint64_t a, uint64_t* base)
{
    auto it = r->allocs.upper_bound(a);
    if (it == r->allocs.begin())
        return nullptr;
    --it;
    if (a >= it->first + it->second.size)
        return nullptr;
    if (base)
        *base = it->first;
    return &it->second;
}

uint64_t api_stream(CUstream s)
{
    uint64_t v = (uint64_t)(uintptr_t)s;
    if (v == 0 && api_ptsz)
        return 2;
    return v;
}

long page() { return sysconf(_SC_PAGESIZE); }

// Sets the protection of every standing guard that overlaps [lo, hi) again (read-only ones
// first, so that a no-access one on the same page wins).
void reprotect(uint64_t lo, uint64_t hi)
{
    for (int pass = 0; pass < 2; pass++)
        for (const Guard& g : r->guards)
            if (g.lo < hi && lo < g.hi && (g.prot == PROT_NONE) == (pass == 1))
                mprotect((void*)g.lo, g.hi - g.lo, g.prot);
}

// Lifts guard i: its pages are opened, then the other guards on them set again.
void lift(size_t i)
{
    Guard g = r->guards[i];
    r->guards.erase(r->guards.begin() + i);
    mprotect((void*)g.lo, g.hi - g.lo, PROT_READ | PROT_WRITE);
    r->lifted[r->lifted_next % 64][0] = g.lo;
    r->lifted[r->lifted_next % 64][1] = g.hi;
    r->lifted_next++;
    reprotect(g.lo, g.hi);
}

void lift_if(bool (*pred)(const Guard&, uint64_t), uint64_t arg)
{
    for (size_t i = r->guards.size(); i-- > 0;)
        if (pred(r->guards[i], arg))
            lift(i);
}

bool on_stream(const Guard& g, uint64_t s) { return g.stream == s; }
bool always(const Guard&, uint64_t) { return true; }

bool host_kind(const std::string& k) { return k == "pinned" || k == "mapped" || k == "managed"; }

// Protects the pages of [addr, addr+size) of host-visible memory: none for a copy's destination
// and for what a kernel may touch (the host must not read or write it yet), read-only for a
// copy's source (the host must not write it). One guard per bytes, stream and protection.
void guard(uint64_t addr, uint64_t size, uint64_t stream, bool dst)
{
    uint64_t base = 0;
    const Alloc* a = alloc_of(addr, &base);
    if (!a || !host_kind(a->kind) || size == 0)
        return;
    int prot = dst ? PROT_NONE : PROT_READ;
    for (const Guard& g : r->guards)
        if (g.base == addr && g.size == size && g.stream == stream && g.prot == prot)
            return;
    uint64_t ps = (uint64_t)page();
    Guard g;
    g.lo = addr & ~(ps - 1);
    g.hi = (addr + size + ps - 1) & ~(ps - 1);
    g.base = addr;
    g.size = size;
    g.stream = stream;
    g.prot = prot;
    bool ok = mprotect((void*)g.lo, g.hi - g.lo, prot) == 0;
    if (ok) {
        r->guards.push_back(g);
        reprotect(g.lo, g.hi);  // a no-access guard on these pages stays no-access
    }
    emit("{\"op\":\"guard\",\"base\":" + n(addr) + ",\"size\":" + n(size) + ",\"ok\":" + (ok ? "true" : "false") + "}");
}

void on_segv(int sig, siginfo_t* info, void* uc)
{
    uint64_t a = (uint64_t)(uintptr_t)info->si_addr;
    if (r) {
        std::lock_guard<std::recursive_mutex> hold(r->lock);
        bool ours = false, write = false;
#if defined(__x86_64__)
        write = (((ucontext_t*)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
        for (size_t i = r->guards.size(); i-- > 0;) {
            Guard g = r->guards[i];
            if (a < g.lo || a >= g.hi)
                continue;
            if (!ours)
                emit("{\"op\":\"host\",\"t\":" + n(tid()) + ",\"addr\":" + n(a) + ",\"write\":" + (write ? "true" : "false")
                     + ",\"in_api\":" + (in_api > 0 ? "true" : "false") + ",\"site\":" + site() + "}");
            ours = true;
            // Beside its bytes (or the driver's own access): later host accesses to them are unseen.
            if (a < g.base || a >= g.base + g.size || in_api > 0)
                emit("{\"op\":\"unguard\",\"t\":" + n(tid()) + ",\"base\":" + n(g.base) + ",\"size\":" + n(g.size)
                     + ",\"addr\":" + n(a) + "}");
            lift(i);
        }
        if (ours) {
            last_fault = 0;
            return;  // the access runs again, now allowed
        }
        // Another thread lifted the guard while this one waited for the lock: run it again (once).
        bool recent = false;
        for (unsigned k = 0; k < 64; k++)
            recent = recent || (a >= r->lifted[k][0] && a < r->lifted[k][1]);
        if (recent && !(last_fault == a && same_fault >= 2)) {
            same_fault = last_fault == a ? same_fault + 1 : 1;
            last_fault = a;
            return;
        }
    }
    // Not ours: the program's own handler, called from here so that ours stays for the guards
    // that stand; with none, the default action (the process ends) when the access runs again.
    struct sigaction old;
    memset(&old, 0, sizeof old);
    old.sa_handler = SIG_DFL;
    if (r)
        old = r->old_segv;
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
        old.sa_sigaction(sig, info, uc);
        return;
    }
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
        old.sa_handler(sig);
        return;
    }
    flush();  // the program dies of this fault when the access runs again
    signal(SIGSEGV, SIG_DFL);
}

// (offset, size) of each parameter of `f` by `query`: what the query of the first returned
// (CUDA_ERROR_INVALID_VALUE for a valid function without parameters), and `why` says so.
template <typename H>
CUresult layout(CUresult (*query)(H, size_t, size_t*, size_t*), H f, const char* what,
                std::vector<std::pair<size_t, size_t>>& info, std::string& why)
{
    info.clear();
    if (!query || !f)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < 4096; i++) {
        size_t off = 0, size = 0;
        CUresult e = query(f, i, &off, &size);
        if (e != CUDA_SUCCESS) {
            if (i > 0)
                break;
            why += std::string(why.empty() ? "" : ", ") + what + " returned " + n((uint64_t)e);
            return e;
        }
        info.push_back({off, size});
    }
    return CUDA_SUCCESS;
}

// The launch's pointer words that point into known allocations, as JSON pairs; false when they
// could not be read (`why`), with `count` the number of parameters when they could.
bool launch_args(CUfunction loaded, std::string& args, size_t& count, std::string& why)
{
    if (!pending.live) {
        why = "not inside a driver launch call";
        return false;
    }
    if (!r->param_info) {
        why = "no cuFuncGetParamInfo in this driver";
        return false;
    }
    std::vector<std::pair<size_t, size_t>> info;
    // The launch callback's function is a loaded CUfunction: "invalid value" for its first
    // parameter means it has none. `f` may be a CUkernel, which cuFuncGetParamInfo may refuse.
    CUresult e = layout(r->param_info, loaded, "cuFuncGetParamInfo(launched function)", info, why);
    if (e != CUDA_SUCCESS && !(loaded && e == CUDA_ERROR_INVALID_VALUE)
        && layout(r->param_info, pending.f, "cuFuncGetParamInfo(f)", info, why) != CUDA_SUCCESS
        && layout(r->kernel_param_info, (CUkernel)pending.f, "cuKernelGetParamInfo(f)", info, why) != CUDA_SUCCESS)
        return false;
    const char* buffer = nullptr;
    if (!pending.params && pending.extra) {
        for (size_t i = 0; pending.extra[i] != CU_LAUNCH_PARAM_END; i += 2)
            if (pending.extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buffer = (const char*)pending.extra[i + 1];
    }
    if (!pending.params && !buffer && !info.empty()) {
        why = "neither kernelParams nor an argument buffer";
        return false;
    }
    for (size_t i = 0; i < info.size(); i++) {
        const char* p = pending.params ? (const char*)pending.params[i] : buffer + info[i].first;
        for (size_t o = 0; p && o + 8 <= info[i].second; o += 8) {
            uint64_t w;
            memcpy(&w, p + o, 8);
            if (alloc_of(w, nullptr))
                args += std::string(args.empty() ? "" : ",") + "[" + n(i) + "," + n(w) + "]";
        }
    }
    count = info.size();
    return true;
}

// Whether `s` begins with (`pre`) or is (`is`) the literal `p`: the driver calls every
// callback of the domain, and a std::string per call was part of streamcheck's cost.
template <size_t N>
bool pre(const char* s, const char (&p)[N])
{
    return strncmp(s, p, N - 1) == 0;
}
template <size_t N>
bool is(const char* s, const char (&p)[N])
{
    return strcmp(s, p) == 0;
}

void driver_api(const Sanitizer_CallbackData* c)
{
    const char* fn = c->functionName;
    if (!fn)
        return;
    if (c->callbackSite == SANITIZER_API_EXIT) {
        if (in_api > 0)
            in_api--;
        if (pre(fn, "cuLaunch"))
            pending.live = false;
        CUresult ret = c->functionReturnValue ? *(const CUresult*)c->functionReturnValue : CUDA_ERROR_UNKNOWN;
        // A query that says "done" orders the host after the work, like a synchronize.
        if (ret == CUDA_SUCCESS && c->functionParams && (is(fn, "cuStreamQuery") || is(fn, "cuStreamQuery_ptsz"))) {
            CUstream s = *(const CUstream*)c->functionParams;
            Sanitizer_StreamHandle h = nullptr;
            sanitizerGetStreamHandle(nullptr, s, &h);
            emit("{\"op\":\"stream_sync\",\"t\":" + n(tid()) + ",\"s\":" + n((uint64_t)(uintptr_t)h) + ",\"api\":"
                 + n(api_stream(s)) + "}");
            lift_if(on_stream, (uint64_t)(uintptr_t)h);
        } else if (ret == CUDA_SUCCESS && c->functionParams && is(fn, "cuEventQuery")) {
            CUevent e = *(const CUevent*)c->functionParams;
            emit("{\"op\":\"event_sync\",\"t\":" + n(tid()) + ",\"ev\":" + n((uint64_t)(uintptr_t)e) + "}");
        }
        return;
    }
    in_api++;
    size_t len = strlen(fn);
    api_ptsz = len > 5 && (strcmp(fn + len - 5, "_ptsz") == 0 || strcmp(fn + len - 5, "_ptds") == 0);
    if (pre(fn, "cuIpcOpenMemHandle") || pre(fn, "cuIpcOpenEventHandle"))
        emit("{\"op\":\"unjudged\",\"why\":\"memory or events shared with another process (IPC)\"}");
    // Exported: another process may use it, unseen (written at the call, whether it succeeds).
    if (pre(fn, "cuIpcGetMemHandle") || pre(fn, "cuIpcGetEventHandle"))
        emit("{\"op\":\"unjudged\",\"why\":\"memory or events exported to another process (IPC)\"}");
    // Work captured into a graph runs when the graph is launched, in the graph's order.
    if (pre(fn, "cuStreamBeginCapture") || pre(fn, "cuGraphLaunch"))
        emit("{\"op\":\"unjudged\",\"why\":\"a CUDA graph was captured or launched (its nodes' order is not modelled)\"}");
    if (pre(fn, "cuLaunchHostFunc") || pre(fn, "cuStreamAddCallback"))
        emit("{\"op\":\"unjudged\",\"why\":\"host functions run in stream order (cudaLaunchHostFunc): their accesses are not seen\"}");
    if (pre(fn, "cuStreamWaitValue") || pre(fn, "cuStreamWriteValue") || pre(fn, "cuStreamBatchMemOp"))
        emit("{\"op\":\"unjudged\",\"why\":\"stream memory operations (cuStreamWaitValue and the like) order streams in ways not modelled\"}");
    if (!c->functionParams)
        return;
    struct Launch { CUfunction f; unsigned gx, gy, gz, bx, by, bz, shared; CUstream s; void** params; void** extra; };
    struct LaunchEx { const CUlaunchConfig* config; CUfunction f; void** params; void** extra; };
    // Read at the launch callback, inside this call (the function is loaded by then).
    if (pre(fn, "cuLaunchKernelEx")) {
        auto* p = (const LaunchEx*)c->functionParams;
        pending = {true, p->f, p->params, p->extra, api_stream(p->config ? p->config->hStream : nullptr)};
    } else if (pre(fn, "cuLaunchKernel")) {
        auto* p = (const Launch*)c->functionParams;
        pending = {true, p->f, p->params, p->extra, api_stream(p->s)};
    } else if (pre(fn, "cuLaunchCooperativeKernel")) {
        auto* p = (const Launch*)c->functionParams;
        pending = {true, p->f, p->params, nullptr, api_stream(p->s)};
    }
}

}  // namespace

bool streams_init(const char* dir)
{
    r = new Recorder();
    r->out = fopen((std::string(dir) + "/streams.jsonl").c_str(), "a");
    dl_iterate_phdr(first_object, nullptr);
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda)
        cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (cuda) {
        r->param_info = (CUresult(*)(CUfunction, size_t, size_t*, size_t*))dlsym(cuda, "cuFuncGetParamInfo");
        r->kernel_param_info = (CUresult(*)(CUkernel, size_t, size_t*, size_t*))dlsym(cuda, "cuKernelGetParamInfo");
        r->stream_flags = (CUresult(*)(CUstream, unsigned*))dlsym(cuda, "cuStreamGetFlags");
    }
    char exe[4096] = {0};
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0)
        exe[k] = 0;
    void* warm[2];
    backtrace(warm, 2);  // loads the unwinder now, not first in a signal handler
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &r->old_segv);
    emit("{\"op\":\"start\",\"pid\":" + n((uint64_t)getpid()) + ",\"exe\":\"" + esc(exe) + "\"}");
    return r->out != nullptr;
}

void streams_enable(Sanitizer_SubscriberHandle handle)
{
    for (auto d : {SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CB_DOMAIN_LAUNCH, SANITIZER_CB_DOMAIN_MEMCPY,
                   SANITIZER_CB_DOMAIN_MEMSET, SANITIZER_CB_DOMAIN_SYNCHRONIZE, SANITIZER_CB_DOMAIN_EVENTS,
                   SANITIZER_CB_DOMAIN_GRAPHS, SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CB_DOMAIN_BATCH_MEMOP})
        sanitizerEnableDomain(1, handle, d);
}

void streams_on_callback(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* cbdata)
{
    if (!r)
        return;
    std::lock_guard<std::recursive_mutex> hold(r->lock);
    switch (domain) {
    case SANITIZER_CB_DOMAIN_DRIVER_API:
        driver_api((const Sanitizer_CallbackData*)cbdata);
        break;
    case SANITIZER_CB_DOMAIN_RESOURCE: {
        if (cbid == SANITIZER_CBID_RESOURCE_STREAM_CREATED) {
            auto* d = (const Sanitizer_ResourceStreamData*)cbdata;
            unsigned flags = 0;
            if (r->stream_flags && d->stream)
                r->stream_flags(d->stream, &flags);
            emit("{\"op\":\"stream\",\"s\":" + n((uint64_t)(uintptr_t)d->hStream) + ",\"cu\":"
                 + n((uint64_t)(uintptr_t)d->stream) + ",\"flags\":" + n(flags) + "}");
        } else if (cbid == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC || cbid == SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC
                   || cbid == SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC) {
            auto* m = (const Sanitizer_ResourceMemoryData*)cbdata;
            Alloc a;
            a.size = m->size;
            a.kind = (m->flags & SANITIZER_MEMORY_FLAG_MANAGED) ? "managed"
                : (m->flags & SANITIZER_MEMORY_FLAG_HOST_PINNED) ? "pinned"
                : (m->flags & SANITIZER_MEMORY_FLAG_HOST_MAPPED) ? "mapped"
                : (m->flags & SANITIZER_MEMORY_FLAG_MODULE) ? "module"
                : cbid == SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC ? "async" : "device";
            if (cbid == SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC && a.kind == "device")
                a.kind = "pinned";
            if (m->flags & SANITIZER_MEMORY_FLAG_PEER)
                emit("{\"op\":\"unjudged\",\"why\":\"memory of a peer device (several devices)\"}");
            // Freed memory (cudaFreeAsync) handed out again: it is this allocation now.
            auto it = r->allocs.upper_bound(m->address);
            if (it != r->allocs.begin())
                --it;
            while (it != r->allocs.end() && it->first < m->address + m->size) {
                if (it->second.kind == "freed" && it->first + it->second.size > m->address)
                    it = r->allocs.erase(it);
                else
                    ++it;
            }
            r->allocs[m->address] = a;
            if (host_kind(a.kind))
                r->host_visible[m->address] = m->size;
            emit("{\"op\":\"alloc\",\"base\":" + n(m->address) + ",\"size\":" + n(m->size) + ",\"kind\":\"" + a.kind + "\"}");
        } else if (cbid == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE || cbid == SANITIZER_CBID_RESOURCE_HOST_MEMORY_FREE
                   || cbid == SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC) {
            auto* m = (const Sanitizer_ResourceMemoryData*)cbdata;
            uint64_t lo = m->address, hi = m->address + m->size;
            for (size_t i = r->guards.size(); i-- > 0;)
                if (r->guards[i].base < hi && lo < r->guards[i].base + r->guards[i].size)
                    lift(i);
            // Only a free of what is still allocated: a release after cudaFreeAsync is no sync.
            auto it = r->allocs.find(m->address);
            bool known = it != r->allocs.end() && it->second.kind != "freed";
            r->host_visible.erase(m->address);
            if (cbid == SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC && it != r->allocs.end())
                it->second.kind = "freed";  // kept: a launch given a pointer into it still names it
            else if (it != r->allocs.end())
                r->allocs.erase(it);
            if (cbid == SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC)  // in stream order, on its stream
                emit("{\"op\":\"free\",\"base\":" + n(m->address) + ",\"t\":" + n(tid()) + ",\"s\":"
                     + n((uint64_t)(uintptr_t)m->hStream) + ",\"api\":" + n(api_stream(m->stream))
                     + ",\"async\":true,\"site\":" + site() + "}");
            else if (known)
                emit("{\"op\":\"free\",\"base\":" + n(m->address) + ",\"t\":" + n(tid()) + "}");
        } else if (cbid == SANITIZER_CBID_RESOURCE_MEMPOOL_IMPORT_POINTER) {
            emit("{\"op\":\"unjudged\",\"why\":\"memory imported from another process (IPC)\"}");
        }
        break;
    }
    case SANITIZER_CB_DOMAIN_LAUNCH: {
        if (cbid != SANITIZER_CBID_LAUNCH_BEGIN)
            break;
        auto* d = (const Sanitizer_LaunchData*)cbdata;
        if (r->context && r->context != d->context)
            emit("{\"op\":\"unjudged\",\"why\":\"kernels launched in more than one CUDA context (several devices)\"}");
        r->context = d->context;
        std::string args, why;
        size_t count = 0;
        bool known = launch_args(d->function, args, count, why);
        // The stream as the program passed it; the launch data's apiStream is for graph launches.
        uint64_t api = pending.live ? pending.api : (uint64_t)(uintptr_t)(d->apiStream ? d->apiStream : d->stream);
        emit("{\"op\":\"kernel\",\"t\":" + n(tid()) + ",\"s\":" + n((uint64_t)(uintptr_t)d->hStream) + ",\"api\":" + n(api)
             + ",\"name\":\"" + esc(d->functionName) + "\",\"args\":[" + (known ? args : "") + "],\"args_known\":"
             + (known ? "true,\"params\":" + n(count) : "false,\"args_why\":\"" + esc(why.c_str()) + "\"")
             + ",\"site\":" + site() + "}");
        pending.live = false;
        // Until a synchronization covers the launch, the host must not touch what it may reach.
        for (const auto& hv : r->host_visible)
            guard(hv.first, hv.second, (uint64_t)(uintptr_t)d->hStream, true);
        break;
    }
    case SANITIZER_CB_DOMAIN_MEMCPY: {
        auto* d = (const Sanitizer_MemcpyData*)cbdata;
        uint64_t rows = (d->height ? d->height : 1) * (d->depth ? d->depth : 1);
        bool pitched = rows > 1;
        uint64_t size = d->size;
        if (pitched) {
            uint64_t pitch = d->srcPitch > d->dstPitch ? d->srcPitch : d->dstPitch;
            size = pitch * (rows - 1) + d->width;
        }
        uint64_t s = (uint64_t)(uintptr_t)(d->hApiStream ? d->hApiStream : d->hDstStream);
        if (d->srcContext != d->dstContext)
            emit("{\"op\":\"unjudged\",\"why\":\"a copy between two contexts (several devices)\"}");
        emit("{\"op\":\"memcpy\",\"t\":" + n(tid()) + ",\"s\":" + n(s) + ",\"api\":" + n(api_stream(d->apiStream)) + ",\"src\":"
             + n(d->srcAddress) + ",\"dst\":" + n(d->dstAddress) + ",\"size\":" + n(size) + ",\"dir\":"
             + n((uint64_t)d->direction) + ",\"async\":" + (d->isAsync ? "true" : "false") + ",\"pitched\":"
             + (pitched ? "true" : "false") + ",\"site\":" + site() + "}");
        if (d->isAsync) {
            guard(d->dstAddress, size, s, true);
            guard(d->srcAddress, size, s, false);
        }
        break;
    }
    case SANITIZER_CB_DOMAIN_MEMSET: {
        auto* d = (const Sanitizer_MemsetData*)cbdata;
        uint64_t elem = d->elementSize ? d->elementSize : 1;
        bool pitched = d->height > 1;
        uint64_t size = pitched ? d->pitch * (d->height - 1) + d->width * elem : d->width * elem;
        emit("{\"op\":\"memset\",\"t\":" + n(tid()) + ",\"s\":" + n((uint64_t)(uintptr_t)d->hStream) + ",\"api\":"
             + n(api_stream(d->stream)) + ",\"addr\":" + n(d->address) + ",\"size\":" + n(size) + ",\"async\":"
             + (d->isAsync ? "true" : "false") + ",\"pitched\":" + (pitched ? "true" : "false") + ",\"site\":" + site() + "}");
        break;
    }
    case SANITIZER_CB_DOMAIN_EVENTS: {
        auto* d = (const Sanitizer_EventData*)cbdata;
        uint64_t ev = (uint64_t)(uintptr_t)d->event, s = (uint64_t)(uintptr_t)d->hStream;
        const char* op = cbid == SANITIZER_CBID_EVENTS_RECORD ? "record" : cbid == SANITIZER_CBID_EVENTS_STREAM_WAIT ? "wait" : nullptr;
        if (op) {
            if (cbid == SANITIZER_CBID_EVENTS_RECORD)
                r->event_stream[ev] = s;
            emit(std::string("{\"op\":\"") + op + "\",\"t\":" + n(tid()) + ",\"s\":" + n(s) + ",\"api\":" + n(api_stream(d->stream))
                 + ",\"ev\":" + n(ev) + ",\"site\":" + site() + "}");
        } else if (cbid == SANITIZER_CBID_EVENTS_SYNCHRONIZE) {
            emit("{\"op\":\"event_sync\",\"t\":" + n(tid()) + ",\"ev\":" + n(ev) + "}");
            auto it = r->event_stream.find(ev);
            if (it != r->event_stream.end())
                lift_if(on_stream, it->second);
        }
        break;
    }
    case SANITIZER_CB_DOMAIN_SYNCHRONIZE: {
        auto* d = (const Sanitizer_SynchronizeData*)cbdata;
        if (cbid == SANITIZER_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED) {
            uint64_t s = (uint64_t)(uintptr_t)d->hStream;
            emit("{\"op\":\"stream_sync\",\"t\":" + n(tid()) + ",\"s\":" + n(s) + ",\"api\":" + n(api_stream(d->stream)) + "}");
            lift_if(on_stream, s);
        } else if (cbid == SANITIZER_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED) {
            emit("{\"op\":\"ctx_sync\",\"t\":" + n(tid()) + "}");
            lift_if(always, 0);
        }
        flush();
        break;
    }
    case SANITIZER_CB_DOMAIN_GRAPHS:
        if (cbid == SANITIZER_CBID_GRAPHS_LAUNCH_BEGIN)
            emit("{\"op\":\"unjudged\",\"why\":\"a CUDA graph was launched (its nodes' order is not modelled)\"}");
        break;
    case SANITIZER_CB_DOMAIN_BATCH_MEMOP:
        emit("{\"op\":\"unjudged\",\"why\":\"stream memory operations (cuStreamWaitValue and the like) order streams in ways not modelled\"}");
        break;
    default:
        break;
    }
}

void streams_line(const std::string& json)
{
    if (r)
        emit(json);
}
