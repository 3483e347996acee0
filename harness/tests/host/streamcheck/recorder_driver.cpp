// A host-only driver of streamcheck's recorder (harness/globalcheck/streams.cpp), built and run
// by recorder.rs without a GPU: the Sanitizer API's two calls the recorder makes are stubbed, and
// its callbacks are fed by hand with allocations, copies and launches on ordinary mmap'd pages.
// It checks the guard pages and the SIGSEGV handler, which only a real fault can test.
//
//   recorder_driver DIR   (writes DIR/streams.jsonl; prints what it did, one `name value` a line)
#include "streams.h"

#include <sanitizer.h>

#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

SanitizerResult sanitizerGetStreamHandle(CUcontext, CUstream s, Sanitizer_StreamHandle* h)
{
    *h = (Sanitizer_StreamHandle)s;
    return SANITIZER_SUCCESS;
}

SanitizerResult sanitizerEnableDomain(uint32_t, Sanitizer_SubscriberHandle, Sanitizer_CallbackDomain)
{
    return SANITIZER_SUCCESS;
}

static volatile sig_atomic_t program_handler_calls = 0;
static char* foreign = nullptr;
static long ps = 0;

// The program's own SIGSEGV handler (installed before the recorder): it opens its own page.
static void program_handler(int, siginfo_t* info, void*)
{
    program_handler_calls = program_handler_calls + 1;
    char* a = (char*)info->si_addr;
    if (a >= foreign && a < foreign + ps)
        mprotect(foreign, ps, PROT_READ | PROT_WRITE);
    else
        _exit(90);  // a fault the program did not expect: the test fails on the exit code
}

static char* pages(int n)
{
    return (char*)mmap(nullptr, n * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void alloc(char* base, uint64_t size, uint32_t flags, Sanitizer_CallbackId cbid)
{
    Sanitizer_ResourceMemoryData m;
    memset(&m, 0, sizeof m);
    m.address = (uint64_t)(uintptr_t)base;
    m.size = size;
    m.flags = flags;
    streams_on_callback(SANITIZER_CB_DOMAIN_RESOURCE, cbid, &m);
}

static void copy_async(char* dst, char* src, uint64_t size, uintptr_t stream)
{
    Sanitizer_MemcpyData c;
    memset(&c, 0, sizeof c);
    c.dstAddress = (uint64_t)(uintptr_t)dst;
    c.srcAddress = (uint64_t)(uintptr_t)src;
    c.size = size;
    c.isAsync = 1;
    c.direction = SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_HOST;
    c.hApiStream = (Sanitizer_StreamHandle)stream;
    c.apiStream = (CUstream)stream;
    streams_on_callback(SANITIZER_CB_DOMAIN_MEMCPY, SANITIZER_CBID_MEMCPY_STARTING, &c);
}

static void launch(uintptr_t stream)
{
    Sanitizer_LaunchData d;
    memset(&d, 0, sizeof d);
    d.functionName = "_Z5scalePfi";
    d.hStream = (Sanitizer_StreamHandle)stream;
    d.stream = (CUstream)stream;
    streams_on_callback(SANITIZER_CB_DOMAIN_LAUNCH, SANITIZER_CBID_LAUNCH_BEGIN, &d);
}

static void sync_stream(uintptr_t stream)
{
    Sanitizer_SynchronizeData d;
    memset(&d, 0, sizeof d);
    d.hStream = (Sanitizer_StreamHandle)stream;
    d.stream = (CUstream)stream;
    streams_on_callback(SANITIZER_CB_DOMAIN_SYNCHRONIZE, SANITIZER_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED, &d);
}

int main(int argc, char** argv)
{
    if (argc != 2)
        return 2;
    ps = sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = program_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
    if (!streams_init(argv[1]))
        return 3;
    char* dev = pages(1);      // stands for device memory
    char* pinned = pages(2);   // host-pinned
    char* managed = pages(1);  // managed
    char* other = pages(1);    // pinned, for the handler check
    foreign = pages(1);        // the program's own protected page
    alloc(dev, ps, 0, SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC);
    alloc(pinned, 2 * ps, SANITIZER_MEMORY_FLAG_HOST_PINNED, SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC);
    alloc(managed, ps, SANITIZER_MEMORY_FLAG_MANAGED, SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC);
    alloc(other, ps, SANITIZER_MEMORY_FLAG_HOST_PINNED, SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC);
    const uintptr_t A = 0xa000, B = 0xb000;

    // 1. An async copy into 16 bytes of the pinned buffer; the host writes byte 100 of that page.
    copy_async(pinned, dev, 16, A);
    pinned[100] = 1;
    printf("beside_written %d\n", pinned[100]);
    sync_stream(A);

    // 2. A launch guards every host-visible allocation: a host read of managed memory is seen.
    launch(B);
    volatile char m = managed[8];
    printf("managed_read %d\n", (int)m);
    sync_stream(B);

    // 3. A fault the recorder does not own goes to the program's handler, and the recorder's
    //    handler stays for the guards that stand: a later host access to them is still seen.
    copy_async(other, dev, 64, A);
    mprotect(foreign, ps, PROT_NONE);
    foreign[0] = 5;
    printf("program_handler_calls %d\n", (int)program_handler_calls);
    volatile char o = other[0];
    printf("guarded_read %d\n", (int)o);
    printf("program_handler_calls_after %d\n", (int)program_handler_calls);
    sync_stream(A);
    printf("done 1\n");
    return 0;
}
