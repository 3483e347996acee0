//! The compile child (`racegate::build::compile_child`) through the real binary: it builds, refuses
//! file access, keeps NVRTC's log, and stops at each of its limits with the message that names
//! it, in a clean environment and an empty folder.

use std::time::{Duration, Instant};

use racegate::build::compile_child::{compile, LimitHit, Limits, Outcome, Request};

use crate::runner::racegate;

fn root() -> std::path::PathBuf {
    super::package_dir().parent().unwrap().to_path_buf()
}

fn run(src: &str, limits: Limits) -> Outcome {
    compile(
        &super::racegate_exe(),
        &Request::new("alice.cu", src),
        &limits,
    )
    .expect("the machine did its part")
    .outcome
}

const GOOD: &str = "extern \"C\" __global__ void k(float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] = 1.0f; }\n";

#[test]
fn a_good_source_builds() {
    match run(GOOD, Limits::default()) {
        Outcome::Built(b) => assert!(b.ptx.contains(".entry k("), "{}", b.ptx),
        other => panic!("{other}"),
    }
}

#[test]
fn nvrtc_log_names_the_file_and_line() {
    match run(
        "extern \"C\" __global__ void k() {\n  nope;\n}\n",
        Limits::default(),
    ) {
        Outcome::Failed(log) => assert!(log.contains("alice.cu(2): error"), "{log}"),
        other => panic!("{other}"),
    }
}

#[test]
fn file_access_is_refused_before_nvrtc() {
    let src = format!("%:include \"/etc/passwd\"\n{GOOD}");
    match run(&src, Limits::default()) {
        Outcome::Refused(a) => {
            assert_eq!(a.line, 1);
            let msg = Outcome::Refused(a).to_string();
            assert!(
                msg.starts_with("line 1: `%:include` is not allowed"),
                "{msg}"
            );
        }
        other => panic!("{other}"),
    }
}

/// 22 levels of doubling macros: 4 million tokens from 600 bytes.
fn macro_bomb() -> String {
    let mut s = String::from("#define A0 x +\n");
    for i in 1..=22 {
        s.push_str(&format!("#define A{i} A{0} A{0}\n", i - 1));
    }
    s + "extern \"C\" __global__ void k(float* out) { float x = 0; out[0] = A22 0; }\n"
}

#[test]
fn a_macro_bomb_stops_at_the_deadline() {
    let start = Instant::now();
    let limits = Limits {
        deadline: Duration::from_secs(3),
        ..Limits::default()
    };
    let out = run(&macro_bomb(), limits);
    let took = start.elapsed();
    match out {
        Outcome::Limit(LimitHit::Deadline(_)) | Outcome::Limit(LimitHit::Memory(_)) => {}
        other => panic!("{other}"),
    }
    assert!(took < Duration::from_secs(8), "{took:?}");
}

/// An array initializer doubled 19 times: half a million rows, which NVRTC keeps in memory.
fn memory_bomb() -> String {
    let mut s = String::from("#define A0 {1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16},\n");
    for i in 1..=19 {
        s.push_str(&format!("#define A{i} A{0} A{0}\n", i - 1));
    }
    s + "__device__ int t[][16] = { A19 };\nextern \"C\" __global__ void k(int* o) { o[0] = t[3][3]; }\n"
}

#[test]
fn a_small_memory_limit_is_named() {
    let limits = Limits {
        memory_mib: 500,
        deadline: Duration::from_secs(60),
        ..Limits::default()
    };
    // Out of memory, NVRTC says so; now and then it dies on its (smaller) stack first.
    match run(&memory_bomb(), limits) {
        o @ (Outcome::Limit(LimitHit::Memory(500)) | Outcome::Crashed(_)) => {
            assert!(o.to_string().contains("memory"), "{o}")
        }
        Outcome::Limit(LimitHit::Stack(250)) => {}
        other => panic!("{other}"),
    }
}

/// Parentheses nested `depth` deep around one number.
fn deep(depth: usize) -> String {
    format!(
        "extern \"C\" __global__ void k(float* out) {{ out[0] = {}1{}; }}\n",
        "(".repeat(depth),
        ")".repeat(depth)
    )
}

#[test]
fn deep_nesting_needs_the_big_stack_and_a_small_one_is_named() {
    // 40 KB of nesting overflowed an 8 MiB thread stack: the default stack takes it.
    assert!(matches!(
        run(&deep(20_000), Limits::default()),
        Outcome::Built(_)
    ));
    let small = Limits {
        stack_mib: 4,
        ..Limits::default()
    };
    match run(&deep(20_000), small) {
        o @ Outcome::Limit(LimitHit::Stack(4)) => {
            assert!(o.to_string().contains("ran out of stack"), "{o}")
        }
        other => panic!("{other}"),
    }
}

#[test]
fn the_child_gets_a_clean_environment_and_a_folder_holding_only_the_source() {
    // A stand-in for racegate that answers with what it sees: its environment and its folder.
    // This test process has cargo's variables (CARGO_*), as a grader has its secret: none may
    // reach the child.
    assert!(std::env::var_os("CARGO_PKG_NAME").is_some() || std::env::var_os("PATH").is_some());
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("fake-racegate");
    std::fs::write(
        &exe,
        "#!/bin/sh
printf '{\"reply\":{\"Failed\":{\"log\":\"%s|%s\"}},\"layers\":null}' \"$(env | grep -v '^PWD=\\|^SHLVL=\\|^_=' | sort | tr '\\n' ' ')\" \"$(ls -A)\" > \"$5\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = compile(&exe, &Request::new("-rf.cu", GOOD), &Limits::default())
        .unwrap()
        .outcome;
    let Outcome::Failed(seen) = out else {
        panic!("{out}")
    };
    let (env, files) = seen.split_once('|').unwrap();
    let names: Vec<&str> = env
        .split_whitespace()
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
        .collect();
    for n in &names {
        assert!(
            [
                "HOME",
                "LC_ALL",
                "PATH",
                "TMPDIR",
                "RACEGATE_NVRTC_LIB",
                "LD_LIBRARY_PATH",
                // The parent's pid: the child dies with it; nothing secret.
                "RACEGATE_COMPILE_PARENT",
                // The watchdog's job token (a pid and a counter): how it finds and kills
                // everything the child starts; nothing secret.
                "RACEGATE_JOB"
            ]
            .contains(n),
            "the child got {n}: {env}"
        );
    }
    assert!(env.contains("PATH=/usr/bin:/bin "), "{env}");
    assert_eq!(files, "-rf.cu", "the folder holds the source only");
}

#[test]
fn an_allowed_header_is_served_from_memory_and_no_other() {
    let dirs = racegate::build::toolchain::cuda_include_dirs();
    if !dirs.iter().any(|d| d.join("cuda_fp16.h").is_file()) {
        // A plain `#[test]` cannot be ignored at run time: under CI=true this fails (CI
        // installs the headers), elsewhere it says loudly that it did not run.
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        let why = format!(
            "no cuda_fp16.h in {dirs:?}: install the toolkit headers with `racegate setup`"
        );
        assert!(!ci, "{why} (CI=true: this test must run)");
        eprintln!("NOT RUN: {why}");
        return;
    }
    let served = racegate::build::headers::serve(&["cuda_fp16.h".to_string()], &dirs).unwrap();
    let src = "#include <cuda_fp16.h>\nextern \"C\" __global__ void k(__half* o) { o[0] = __float2half(1.0f); }\n";
    let mut req = Request::new("h.cu", src);
    req.headers = served.clone();
    req.allowed_includes = vec!["cuda_fp16.h".into()];
    let out = compile(&super::racegate_exe(), &req, &Limits::default())
        .unwrap()
        .outcome;
    assert!(matches!(out, Outcome::Built(_)), "{out}");
    // A header it includes is served, but the submission may not name it itself.
    req.source = src.replace("cuda_fp16.h", "cuda_fp16.hpp");
    let out = compile(&super::racegate_exe(), &req, &Limits::default())
        .unwrap()
        .outcome;
    assert!(matches!(out, Outcome::Refused(_)), "{out}");
}

#[test]
fn team_code_compiles_in_the_child_to_the_same_ptx_as_in_this_process() {
    // Every file of the catalog and of the user-shaped corpus (include folders, quoted includes,
    // C++ name expressions), with jitter: the child, working in this process's folder, gives
    // byte-identical PTX, line information included.
    use racegate::build::compile::{compile_here, BuildOptions};
    use racegate::build::compile_child::compile_team;
    use racegate::source::catalog::Catalog;
    let root = root();
    let exe = super::racegate_exe();
    let corpus =
        racegate::source::manifest::Manifest::load(&root.join("examples/corpus/racegate.toml"))
            .expect("the corpus manifest loads");
    let catalogs = [
        Catalog::discover(&root).expect("the catalog loads"),
        Catalog::from_manifest(corpus),
    ];
    let mut compared = 0;
    for cat in &catalogs {
        for file in cat.files() {
            let opts = BuildOptions {
                arch: "compute_90".into(),
                jitter: true,
                extra: cat
                    .cases
                    .iter()
                    .find(|c| c.path == file)
                    .map(|c| c.compile_options())
                    .unwrap_or_default(),
            };
            let source = std::fs::read_to_string(cat.root.join(file)).unwrap();
            let here = compile_here(&cat.root, file, &source, &opts)
                .unwrap_or_else(|e| panic!("{file} in process: {e}"));
            let child = compile_team(&exe, &cat.root, file, &source, &opts)
                .unwrap_or_else(|e| panic!("{file} in the child: {e}"));
            // `racegate bench` also builds the pct prelude's earlier out-of-line hook, and one
            // that counts no barrier.
            for define in ["-DRACEGATE_PCT_NOINLINE", "-DRACEGATE_PCT_NOCOUNT"] {
                let mut variant = opts.clone();
                variant.extra.push(define.into());
                let other = compile_here(&cat.root, file, &source, &variant)
                    .unwrap_or_else(|e| panic!("{file} with {define}: {e}"));
                if source.contains("__syncthreads") {
                    assert_ne!(other.ptx, here.ptx, "{file}: {define} changed nothing");
                }
            }
            let (here, child) = (here.ptx, child.ptx);
            if here != child {
                let diff: Vec<String> = here
                    .lines()
                    .zip(child.lines())
                    .filter(|(a, b)| a != b)
                    .take(3)
                    .map(|(a, b)| format!("here:  {a}\nchild: {b}"))
                    .collect();
                panic!("{file}: the PTX differs\n{}", diff.join("\n"));
            }
            compared += 1;
        }
    }
    assert!(compared >= 60, "only {compared} files");
}

#[test]
fn a_team_compile_error_names_the_file_by_its_own_path_and_keeps_a_long_log() {
    use racegate::build::compile::BuildOptions;
    let root = root();
    let bad: String = (0..100)
        .map(|i| format!("__device__ int f{i}() {{ return undeclared_{i}; }}\n"))
        .collect();
    match racegate::build::compile_child::compile_team(
        &super::racegate_exe(),
        &root,
        "kernels/not_there.cu",
        &bad,
        &BuildOptions::default(),
    ) {
        Err(racegate::Error::Compile { log, .. }) => {
            assert!(log.contains("kernels/not_there.cu(1): error"), "{log}");
            // A submission's log stops at 60 lines; a team's own keeps its 100 errors.
            assert!(log.contains("undeclared_99"), "{log}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_lower_hard_memory_limit_than_the_childs_own_is_kept_not_an_error() {
    // A shell's `ulimit -v` below the team limit (32 GiB): the child lowers its limit to what
    // it may, and the compile goes on (it used to fail raising the hard limit, exit 3).
    let exe = super::racegate_exe();
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 20000000 && exec '{}' compile counter_single",
            exe.display()
        ))
        .current_dir(root())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("ok   compile kernels/atomic_counter.cu"),
        "{text}"
    );
}

#[test]
fn a_compile_child_dies_with_racegate() {
    // racegate killed mid-compile (Ctrl-C reaches only the foreground group; a CI timeout kills
    // the job): the child in its own process group must not run on unwatched.
    let dir = tempfile::tempdir().unwrap();
    let bomb = macro_bomb();
    std::fs::write(dir.path().join("bomb.cu"), &bomb).unwrap();
    std::fs::write(
        dir.path().join("racegate.toml"),
        r#"[[kernel]]
name = "k"
source = "bomb.cu"
entry = "k"
sizes = { n = [1, 1000] }
grid = ["1"]
block = ["1"]
oracle = "none"
args = [{ name = "out", kind = "out", type = "f32", len = "1" }]
"#,
    )
    .unwrap();
    let mut rg = racegate(["compile", "--manifest", "racegate.toml"])
        .at(dir.path())
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let compile_children = |parent: u32| -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                let want = format!("RACEGATE_COMPILE_PARENT={parent}");
                env.split(|b| *b == 0).any(|kv| kv == want.as_bytes())
            })
            .collect()
    };
    let start = Instant::now();
    while compile_children(rg.id()).is_empty() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !compile_children(rg.id()).is_empty(),
        "no compile child started"
    );
    rg.kill().unwrap();
    rg.wait().unwrap();
    let gone = Instant::now();
    while !compile_children(rg.id()).is_empty() && gone.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        compile_children(rg.id()).is_empty(),
        "the compile child outlived racegate"
    );
}
