//! Known false positives of the sanitizers inside a library's own code: the built-in list, as
//! valgrind ships default suppressions for the system libraries. A finding this list matches is
//! set aside by the gate (noted with what it names, never counted), unless the user asks to keep
//! them (`gate --keep-library-reports`).
//!
//! Today the list holds CUB's (the CUDA toolkit's CCCL, under `thrust::sort`, `thrust::reduce`,
//! `cub::DeviceScan` and friends): compute-sanitizer's initcheck reports "Uninitialized
//! __global__ memory read" at CUB's own loads of its own temporary storage, by design. The
//! single-pass scans' decoupled look-back polls the {status, value} words of earlier tiles before
//! those tiles write them (a status that is not ready yet is waited on, its value never used);
//! merge sort reads its partition array and its global-memory stand-in for shared memory (`vsmem`)
//! where padding was never written. NVIDIA calls the look-back reads per design (NVIDIA/cub#98)
//! and keeps the reports open (NVIDIA/cccl#2104 and #8054, 2026); on an H100 they made
//! NVIDIA's own correct thrust examples fail the gate (racegate run 34,
//! `thrust/examples/sorting_aos_vs_soa.cu`; run 33, `custom_temporary_allocation.cu`).
//!
//! What this costs: a program's own uninitialized input handed to CUB (a never-written buffer
//! given to `thrust::sort`) is read by the same functions and reported at the same lines, so
//! initcheck is not judged there; the gate's note says so. Only initcheck's device reads are
//! matched, only where the reporting frame (the innermost, where the read is) is one of the CUB
//! headers and functions below: a report at a line of the user's own file, and the host-side
//! "Host API uninitialized memory access" (a copy of never-written memory, which has no device
//! line), always count.

use super::normalize::Finding;
use super::tool::Tool;

/// One entry of the list: a tool's report at a function of a library header, and the upstream
/// issue that reports it.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KnownFalsePositive {
    /// The tool that reports it.
    pub tool: Tool,
    /// How the tool's description of the report begins.
    pub what: &'static str,
    /// The library, as the note names it.
    pub library: &'static str,
    /// The header, relative to the library's own folder (`thread/thread_load.cuh` in
    /// `.../include/cccl/cub/`).
    pub header: &'static str,
    /// The functions of the reporting frame, by their own names (no namespace, no template
    /// arguments).
    pub functions: &'static [&'static str],
    /// The upstream issue(s) reporting it, e.g. `NVIDIA/cccl#2104`.
    pub issues: &'static str,
}

/// initcheck's description of a device read of never-written global memory.
const UNINITIALIZED_READ: &str = "Uninitialized __global__ memory read";

/// The list. An entry names the upstream issue that reports it; add one only with such an issue
/// and a report seen on a GPU.
pub const LIST: &[KnownFalsePositive] = &[
    // Every CUB load with a cache modifier: the look-back polls of the scans (`LOAD_CG`, cccl#2104,
    // open), the onesweep radix sort's (`LOAD_VOLATILE`), the tiles of merge sort, reduce and
    // adjacent difference (`LOAD_LDG`; cccl#1889, #1891). Seen on the H100 at lines 260 (size 2)
    // and 287 (size 4) of CUDA 13.0's header, under `thrust::sort`.
    KnownFalsePositive {
        tool: Tool::Initcheck,
        what: UNINITIALIZED_READ,
        library: "CUB",
        header: "thread/thread_load.cuh",
        functions: &["ThreadLoad"],
        issues: "NVIDIA/cccl#2104, NVIDIA/cccl#1889, NVIDIA/cccl#1891",
    },
    // The look-back's strong loads of tile status words (CUB's `detail` only: never a user's
    // data), the same polls as above on newer CUB.
    KnownFalsePositive {
        tool: Tool::Initcheck,
        what: UNINITIALIZED_READ,
        library: "CUB",
        header: "detail/strong_load.cuh",
        functions: &["load_relaxed", "load_acquire"],
        issues: "NVIDIA/cccl#2104, NVIDIA/cub#98",
    },
    KnownFalsePositive {
        tool: Tool::Initcheck,
        what: UNINITIALIZED_READ,
        library: "CUB",
        header: "agent/single_pass_scan_operators.cuh",
        functions: &["WaitForValid", "LoadValid", "LoadStatus"],
        issues: "NVIDIA/cccl#2104, NVIDIA/cccl#1790, NVIDIA/cub#98",
    },
    // Merge sort's merge path over its key buffers (seen on the H100 at line 69, `MergePath`,
    // size 4; `SerialMerge` at line 97 in cccl#5327's vsmem report).
    KnownFalsePositive {
        tool: Tool::Initcheck,
        what: UNINITIALIZED_READ,
        library: "CUB",
        header: "block/block_merge_sort.cuh",
        functions: &["MergePath", "SerialMerge"],
        issues: "NVIDIA/cccl#8054, NVIDIA/cccl#5327",
    },
    // Merge sort's merge of a tile reading its partition array (seen on the H100 at line 512,
    // `merge_partitions[tile_idx + 1]`, size 4).
    KnownFalsePositive {
        tool: Tool::Initcheck,
        what: UNINITIALIZED_READ,
        library: "CUB",
        header: "agent/agent_merge_sort.cuh",
        functions: &["consume_tile"],
        issues: "NVIDIA/cccl#8054, NVIDIA/cccl#5327",
    },
];

/// Where CUB's own headers are: an installed CCCL, the CUDA toolkit's or a pip wheel's
/// (`.../include/cccl/cub/`), or an older toolkit's (`.../include/cub/`). A CUB inside the
/// gated tree (a vendored or patched copy, CCCL's own repository) is the user's code, never set
/// aside.
const CUB_FOLDERS: &[&str] = &["/include/cccl/cub/", "/include/cub/"];

/// The entry of [`LIST`] that `f`, a normalized finding of `tool`, matches, if any.
pub fn known(tool: Tool, f: &Finding) -> Option<&'static KnownFalsePositive> {
    if f.kind != "Initcheck" {
        return None;
    }
    let (file, _) = f.file_line()?;
    let header = cub_header(file)?;
    let function = own_name(&f.kernel);
    LIST.iter().find(|k| {
        k.tool == tool
            && f.what.starts_with(k.what)
            && k.header == header
            && k.functions.contains(&function)
    })
}

/// The path of `file` inside an installed CUB's folder (`thread/thread_load.cuh`), when it is
/// there. Paths under the gated root are relative (normalized so): only an absolute path, one
/// outside the root, or a Python environment's installed package under it can be an installed
/// library's.
fn cub_header(file: &str) -> Option<&str> {
    if !file.starts_with('/') && !file.contains("/site-packages/") {
        return None;
    }
    CUB_FOLDERS.iter().find_map(|folder| {
        let i = file.rfind(folder)?;
        Some(&file[i + folder.len()..])
    })
}

/// A function's own name from the name a tool gives: `ThreadLoad` from `ThreadLoad`,
/// `ThreadLoad<LOAD_CG,const unsigned int *>` or `std::iterator_traits<T2>::value_type
/// cub::CUB_200500_NS::ThreadLoad<(cub::CacheLoadModifier)2, const unsigned long long
/// *>(T2)`: the last name outside template arguments and parameter lists.
fn own_name(func: &str) -> &str {
    let mut depth = 0i32;
    let mut last = "";
    let mut start = None;
    for (i, c) in func.char_indices() {
        let in_name = c.is_alphanumeric() || c == '_';
        if in_name && depth == 0 && start.is_none() {
            start = Some(i);
        }
        if !in_name {
            if let Some(s) = start.take() {
                last = &func[s..i];
            }
        }
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            _ => {}
        }
    }
    match start {
        Some(s) => &func[s..],
        None => last,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_functions_own_name_is_the_last_name_outside_its_arguments() {
        for (func, name) in [
            ("ThreadLoad", "ThreadLoad"),
            ("ThreadLoad<LOAD_CG,const unsigned int *>", "ThreadLoad"),
            (
                "std::iterator_traits<T2>::value_type cub::CUB_200500_600_700_800_NS::ThreadLoad<(cub::CUB_200500_600_700_800_NS::CacheLoadModifier)2, const unsigned long long *>(T2)",
                "ThreadLoad",
            ),
            (
                "void cub::CUB_300200_SM_700::SerialMerge<int *, int, less_t, (int)1>(T1, int, int, int, int, T2 (&)[T4], int (&)[T4], T3, T2)",
                "SerialMerge",
            ),
            ("IterateThreadLoad<0, 2>::Load", "Load"),
            ("", ""),
        ] {
            assert_eq!(own_name(func), name, "{func}");
        }
    }

    #[test]
    fn cubs_headers_are_found_in_the_toolkit_and_the_wheels_never_in_the_gated_tree() {
        for (file, header) in [
            (
                "/usr/local/cuda-13.0/targets/x86_64-linux/include/cccl/cub/thread/thread_load.cuh",
                Some("thread/thread_load.cuh"),
            ),
            (
                "/usr/local/cuda-12.2/targets/x86_64-linux/include/cub/thread/thread_load.cuh",
                Some("thread/thread_load.cuh"),
            ),
            (
                ".venv/lib/python3.12/site-packages/nvidia/cu13/include/cccl/cub/block/block_merge_sort.cuh",
                Some("block/block_merge_sort.cuh"),
            ),
            // CCCL's own repository, or a CUB vendored into the gated tree: the user's code.
            ("/home/coder/cccl/cub/cub/block/block_merge_sort.cuh", None),
            ("cub/cub/agent/agent_merge_sort.cuh", None),
            ("third_party/cccl/include/cccl/cub/thread/thread_load.cuh", None),
            ("src/thread_load.cuh", None),
            ("kernels/cub_like/thread/thread_load.cuh", None),
        ] {
            assert_eq!(cub_header(file), header, "{file}");
        }
    }
}
