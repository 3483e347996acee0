#!/usr/bin/env python3
"""The H200 evidence run: everything racegate claims about GPU behaviour comes from here.

Runs on the GPU machine (no Rust there) with a release `racegate` built on a CPU machine:
    python3 ci/h200_run.py --racegate target/release/racegate --out $OUT
Writes under --out: env.txt (date, GPU, driver, toolkit and sanitizer versions), compile.txt
(every file compiled, loaded and its kernels found), stress.jsonl and stress.txt (every case with
and without jitter at two sizes), hang.txt (the deadlock variant under the watchdog, and a
process listing afterwards), sanitize.tar.gz (raw XML, logs and JSON of every case x tool x 5
runs), mutate.json and mutate.txt (phase `mutate`: every correct kernel's mutants under the battery),
and summary.txt. Nothing is edited afterwards: the files are committed as they came back.
"""
import tomllib
import argparse, concurrent.futures as cf, datetime, json, os, pathlib, subprocess, sys, tarfile, tempfile, time

# One fixed size per family for the second stress setting: large enough that a race which needs
# many warps in flight has them (the H200 showed the WAR matmul bug only from N=384 without jitter).
FIXED = {"matmul": 512, "transpose": 2048, "reduce": 65536, "histogram": 65536, "counter": 65536, "handoff": 4096, "stencil": 65536, "lastblock": 65536}
TOOLS = ["racecheck", "synccheck", "memcheck", "initcheck"]

# The globalcheck phase's plain column: stands in for compute-sanitizer in `racegate sanitize`
# (RACEGATE_COMPUTE_SANITIZER) and runs the target, racegate's own binary, alone. It was
# ci/gc_wrapper.py, which H200 run 13's probe also used (now docs/h200/run-13/gc_wrapper.py).
PLAIN_SANITIZER = """#!/usr/bin/env python3
import os, sys
args = sys.argv[1:]
i = next(i for i, a in enumerate(args) if os.path.isabs(a) and os.path.basename(a).startswith("racegate"))
os.execv(args[i], args[i:])
"""


def sh(cmd, timeout=120):
    try:
        p = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout)
        return f"$ {cmd}\n{p.stdout}{p.stderr}[rc={p.returncode}]\n"
    except subprocess.TimeoutExpired:
        return f"$ {cmd}\n[timed out after {timeout} s]\n"


def sanitize_once(rg, folder, name, tool, run, timeout=300):
    """One `racegate sanitize` run kept whole: the tool's raw output (XML, or globalcheck's JSON-lines
    report), the log, and racegate's JSON. Returns (name, tool, run, exit code)."""
    stem = f"{name.replace('::', '__')}__{tool}.{run}"
    raw = folder / f"{stem}.{'jsonl' if tool in ('globalcheck', 'sharedcheck') else 'xml'}"
    cmd = [rg, "sanitize", name, "--tool", tool, "--json", "-", "--timeout", "30",
           "--save-xml", str(raw), "--save-log", str(folder / f"{stem}.log")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    (folder / f"{stem}.json").write_text(p.stdout + (("\nSTDERR:\n" + p.stderr) if p.stderr else ""))
    return name, tool, run, p.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--racegate", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--runs", type=int, default=5, help="sanitizer runs per case and tool")
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--phases", default="env,compile,hang,sanitize,stress",
                    help="comma-separated, in this order: env, doctor, sigint, compile, hang, sanitize, stress, exit, check, "
                         "gate, corpus, mutate, poison, grade, grade30, bench, detection, globalcheck, ncu, samples, nextest")
    ap.add_argument("--pack", action="store_true", help="pack all outputs but summary.txt into results.tar.gz")
    ap.add_argument("--bundle", default="target/bundle", help="from ci/bundle: racegate, cargo-nextest, racegate-tests.tar.zst")
    ap.add_argument("--old-racegate", default=None, help="phase poison: an earlier build, run side by side")
    ap.add_argument("--samples", type=int, default=30, help="phase samples: how many of ci/gate-samples' list")
    ap.add_argument("--gc-timing", type=float, default=480,
                    help="phase globalcheck: seconds for the side-by-side timing loop (0: none)")
    ap.add_argument("--no-gc-programs", dest="gc_programs", action="store_false",
                    help="phase globalcheck: leave out the program examples")
    ap.add_argument("--budget", type=float, default=540, help="seconds; stress jobs not started by then are skipped")
    ap.add_argument("--grade30-shared-only", action="store_true",
                    help="phase grade30: only the side-by-side batch (not also each submission alone); "
                         "compare its grades with an earlier run's grade30.json offline")
    a = ap.parse_args()
    out = pathlib.Path(a.out); out.mkdir(parents=True, exist_ok=True)
    rg = os.path.abspath(a.racegate)
    phases = a.phases.split(",")
    t0 = time.time()
    log = open(out / "summary.txt", "w")

    def say(s):
        print(s, flush=True); log.write(s + "\n"); log.flush()

    say(f"racegate H200 run, started {datetime.datetime.now(datetime.timezone.utc).isoformat()}")
    say(f"command: {' '.join(sys.argv)}")
    if "env" in phases:
        env = "".join(sh(c) for c in [
            "date -u", "nvidia-smi", "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv",
            "compute-sanitizer --version", "nvcc --version", "uname -a", "cat /etc/os-release | head -3",
            "ldconfig -p | grep -i nvrtc", "ls /usr/local/cuda/lib64/ | grep -i nvrtc", f"{rg} --version"])
        (out / "env.txt").write_text(env)
        say("env: written to env.txt")
    cases = json.loads(subprocess.run([rg, "list", "--json", "-"], capture_output=True, text=True, check=True).stdout)
    say(f"catalog: {len(cases)} cases")

    if "compile" in phases:
        r = sh(f"{rg} compile --load", timeout=300)
        (out / "compile.txt").write_text(r)
        say("compile --load: " + r.strip().splitlines()[-1])

    if "hang" in phases:
        r = sh(f"{rg} stress handoff::barrier_before_flag --trials 3 --seed 7 --timeout 5", timeout=120)
        r += sh("ps -eo pid,pgid,stat,etime,cmd | grep -v grep | grep -E 'racegate|compute-sanitizer' || echo 'no racegate or compute-sanitizer process left'")
        (out / "hang.txt").write_text(r)
        say("hang: written to hang.txt")

    if "doctor" in phases:
        # Issue 23: which confinement layers a submission's compile gets on this machine.
        r = sh(f"{rg} doctor; {rg} doctor --json -", timeout=120)
        (out / "doctor.txt").write_text(r)
        say("doctor: " + "; ".join(l.strip() for l in r.splitlines() if "confinement" in l)[:300])

    if "sigint" in phases:
        # Issue 23: SIGINT to each command that starts children, while a child hangs (a kernel
        # that deadlocks, a program that hangs and left an `env -i setsid` grandchild): racegate
        # must end and leave no process behind. `ps` before, during and after each.
        import signal
        ps = ("ps -eo pid,ppid,pgid,stat,etime,cmd | grep -v grep | "
              "grep -E 'racegate|compute-sanitizer|sleep 777|hang.sh' || echo '(none)'")
        hang = pathlib.Path(tempfile.mkdtemp()) / "hang.sh"
        hang.write_text("#!/bin/sh\nenv -i setsid sh -c 'sleep 7771' &\nsleep 7772\n"); hang.chmod(0o755)
        subs = "harness/tests/submissions/reduce"
        runs = [
            ("check, a deadlocking kernel", f"exec {rg} check handoff::barrier_before_flag --trials 5 --stress-timeout 60 --sanitize-timeout 60"),
            ("stress, a deadlocking kernel", f"exec {rg} stress handoff::barrier_before_flag --trials 3 --timeout 60"),
            ("gate manifest mode (the corpus, about a minute)", f"cd examples/corpus && exec {rg} gate --baseline /tmp/sigint-baseline.json --trials 100 --sanitize-timeout 60"),
            ("gate program mode, a hanging program with a setsid grandchild", f"exec {rg} gate --baseline /tmp/sigint-prog.json --timeout 60 -- {hang}"),
            ("grade, an infinite loop", f"exec {rg} grade --exercise reduce --timeout 60 {subs}/cheat_infinite_loop.cu"),
        ]
        r = "before:\n" + sh(ps)
        for name, cmd in runs:
            p = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            time.sleep(8)
            r += f"\n=== {name}\n$ {cmd}\nduring (racegate pid {p.pid}):\n" + sh(ps)
            t1 = time.time()
            os.kill(p.pid, signal.SIGINT)
            try:
                o, _ = p.communicate(timeout=30)
                r += f"SIGINT -> exit {p.returncode} after {time.time() - t1:.1f} s\n{o[-3000:]}\n"
            except subprocess.TimeoutExpired:
                p.kill(); o, _ = p.communicate()
                r += f"SIGINT -> still running after 30 s: killed\n{o[-3000:]}\n"
            time.sleep(1)
            r += "after:\n" + sh(ps)
        (out / "sigint.txt").write_text(r)
        say("sigint: written to sigint.txt")

    if "sanitize" in phases:
        sdir = out / "sanitize"; sdir.mkdir(exist_ok=True)
        jobs = [(c["name"], tool, run) for c in cases for tool in TOOLS for run in range(1, a.runs + 1)]

        def sanitize(job):
            return sanitize_once(rg, sdir, *job)

        t = time.time()
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            results = list(ex.map(sanitize, jobs))
        say(f"sanitize: {len(jobs)} runs in {time.time() - t:.0f} s")
        with tarfile.open(out / "sanitize.tar.gz", "w:gz") as tf:
            tf.add(sdir, arcname="sanitize")
        import shutil; shutil.rmtree(sdir)
        rcs = {}
        for _, tool, _, rc in results:
            rcs[(tool, rc)] = rcs.get((tool, rc), 0) + 1
        say("sanitize exit codes (tool, rc): count = " + ", ".join(f"{k}: {v}" for k, v in sorted(rcs.items())))
    if "stress" in phases:
        jobs = []
        for c in cases:
            for jitter in (True, False):
                for size in (None, FIXED[c["exercise"]]):
                    jobs.append((c["name"], jitter, size))

        def stress(job):
            name, jitter, size = job
            if time.time() - t0 > a.budget:
                return {"case": name, "jitter": jitter, "size": str(size), "skipped": "time budget of the run spent"}
            cmd = [rg, "stress", name, "--trials", str(a.trials), "--seed", "20261129", "--json", "-", "--timeout", "5"]
            if not jitter: cmd.append("--no-jitter")
            if size: cmd += ["--size", str(size)]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            try:
                rep = json.loads(p.stdout)
            except Exception:
                rep = {"case": name, "jitter": jitter, "size": str(size), "error": p.stdout[-2000:] + p.stderr[-2000:]}
            rep["command"] = " ".join(cmd[1:]); rep["rc"] = p.returncode
            return rep

        t = time.time()
        with cf.ThreadPoolExecutor(4) as ex, open(out / "stress.jsonl", "w") as f, open(out / "stress.txt", "w") as txt:
            for rep in ex.map(stress, jobs):
                f.write(json.dumps(rep) + "\n"); f.flush()
                line = (f"{rep.get('case'):45} jitter={'on ' if rep.get('jitter') else 'off'} size={rep.get('size'):>8} "
                        f"{rep.get('verdict', 'SKIPPED' if 'skipped' in rep else 'ERROR'):6} {rep.get('failures', '?')}/{rep.get('trials_run', '?')} "
                        f"{rep.get('seconds', 0):.1f}s")
                txt.write(line + "\n"); txt.flush()
        say(f"stress: {len(jobs)} runs in {time.time() - t:.0f} s -> stress.jsonl, stress.txt")

    if "exit" in phases:
        # The one exit-code table, each code from the real binary with a real trigger on a GPU machine.
        r = sh(f"{rg} stress no_such_case")                                                    # 2
        r += sh(f"RACEGATE_NO_GPU=1 {rg} stress counter_single --trials 1")                   # 4
        r += sh(f"RACEGATE_NVRTC_LIB=/nonexistent/libnvrtc.so.13 {rg} stress counter_single --trials 1")  # 3
        r += sh(f"{rg} stress counter_single --trials 20 --seed 1")                           # 0
        r += sh(f"{rg} stress matmul_tiled16::no_sync_after_load --trials 20 --seed 1")       # 1
        (out / "exit-codes.txt").write_text(r)
        say("exit codes: " + ", ".join(l for l in r.splitlines() if l.startswith("[rc=")))

    if "check" in phases:
        t = time.time()
        r = sh(f"RACEGATE_TIMELINE={out}/timeline-check.tsv {rg} check --jobs 14 --table {out}/detection-matrix.md --junit {out}/check-junit.xml --json {out}/check.json", timeout=400)
        (out / "check.txt").write_text(r)
        say(f"check: {time.time() - t:.0f} s wall -> check.txt, detection-matrix.md, check-junit.xml, check.json; " + r.strip().splitlines()[-1])

    if "gate" in phases:
        t = time.time()
        ex = "examples/gate"
        base = f"{ex}/racegate-baseline.json"
        r = sh(f"rm -f {base}; cd {ex} && {rg} gate --sarif {out}/gate.sarif --junit {out}/gate-junit.xml --summary {out}/gate-summary.md", timeout=300)
        r += sh(f"cd {ex} && {rg} gate --update-baseline && cp racegate-baseline.json {out}/racegate-baseline.json", timeout=300)
        r += sh(f"cd {ex} && {rg} gate", timeout=300)
        r += sh(f"nvcc -arch=sm_90 -lineinfo -o /tmp/racy_program {ex}/program/racy_program.cu && /tmp/racy_program", timeout=120)
        r += sh(f"{rg} gate --baseline /tmp/no-baseline.json --sarif {out}/gate-program.sarif -- /tmp/racy_program", timeout=300)
        (out / "gate.txt").write_text(r)
        say(f"gate: {time.time() - t:.0f} s -> gate.txt, gate.sarif, gate-junit.xml, gate-summary.md, racegate-baseline.json, gate-program.sarif")

    if "corpus" in phases:
        # The user-shaped corpus under the gate (issue #12): every correct kernel clean, every
        # broken twin flagged by the detectors examples/corpus/expected.toml names.
        t = time.time()
        ex = "examples/corpus"
        r = sh(f"cd {ex} && rm -f racegate-baseline.json && {rg} compile", timeout=300)
        t1 = time.time()
        # The defaults: every kernel tool, fencecheck included (expected.toml's `dot_f64_nofence`
        # is flagged by it alone).
        r += sh(f"cd {ex} && RACEGATE_TIMELINE={out}/timeline-corpus.tsv {rg} gate --trials {a.trials} --sanitize-timeout 20 --timeout 5 --sarif {out}/corpus.sarif "
                f"--junit {out}/corpus-junit.xml --summary {out}/corpus-summary.md", timeout=540)
        r += f"[gate wall time: {time.time() - t1:.1f} s]\n"
        r += sh(f"python3 ci/check-corpus {out}/corpus.sarif", timeout=60)
        (out / "corpus.txt").write_text(r)
        say(f"corpus: {time.time() - t:.0f} s -> corpus.txt, corpus.sarif, corpus-junit.xml, corpus-summary.md; " + r.strip().splitlines()[-2])

    if "mutate" in phases:
        # Issue 17: every correct kernel of the catalog and of the user-shaped corpus under
        # `racegate mutate --run` (stress with jitter, 20 trials, then the sanitizers, each mutant
        # stopping at its first detection; the mutants of a kernel side by side). Each run stops
        # starting new mutants after --budget s, so the phase fits in about 8 minutes.
        t = time.time()
        corpus = "examples/corpus"
        twins = set(tomllib.loads(open(f"{corpus}/expected.toml").read()))
        names = [k["name"] for k in tomllib.loads(open(f"{corpus}/racegate.toml").read())["kernel"]
                 if k["name"] not in twins]
        o = out.resolve()
        common = f"--run --trials 20 --jobs {a.jobs} --stress-timeout 5 --sanitize-timeout 30 --budget 80"
        r = sh(f"{rg} mutate {common} --json {o}/mutate-catalog.json --table {o}/mutate-catalog.md", timeout=200)
        r += sh(f"cd {corpus} && {rg} mutate {common} --json {o}/mutate-corpus.json --table {o}/mutate-corpus.md {' '.join(names)}", timeout=200)
        both = {}
        for part in ("catalog", "corpus"):
            f = out / f"mutate-{part}.json"
            both[part] = json.loads(f.read_text()) if f.exists() else None
            f.unlink(missing_ok=True)
        (out / "mutate.json").write_text(json.dumps(both, indent=1) + "\n")
        (out / "mutate.txt").write_text(r)
        rates = [f"{p}: {d['total']['kill_rate']}" for p, d in both.items() if d]
        say(f"mutate: {time.time() - t:.0f} s -> mutate.txt, mutate.json, mutate-catalog.md, mutate-corpus.md; kill rates " + ", ".join(rates))

    if "poison" in phases:
        # Issue 24: `drop-shared-init` mutants (a shared tile or halo element never written)
        # under `racegate mutate --run` on the catalog and the corpus, by this build and, side by
        # side in the same run, by --old-racegate (0xFF poison every trial) when given.
        t = time.time()
        corpus = "examples/corpus"
        twins = set(tomllib.loads(open(f"{corpus}/expected.toml").read()))
        names = [k["name"] for k in tomllib.loads(open(f"{corpus}/racegate.toml").read())["kernel"]
                 if k["name"] not in twins]
        o = out.resolve()
        common = (f"--run --operators drop-shared-init --trials 20 --jobs {a.jobs} --stress-timeout 5 "
                  f"--sanitize-timeout 30 --budget 100")
        r = ""
        both = {}
        for label, binary in (("new", rg), ("old", a.old_racegate)):
            if not binary:
                continue
            binary = os.path.abspath(binary)
            r += sh(f"{binary} mutate {common} --json {o}/poison-{label}-catalog.json", timeout=200)
            r += sh(f"cd {corpus} && {binary} mutate {common} --json {o}/poison-{label}-corpus.json {' '.join(names)}", timeout=200)
            for part in ("catalog", "corpus"):
                f = out / f"poison-{label}-{part}.json"
                both[f"{label}-{part}"] = json.loads(f.read_text()) if f.exists() else None
                f.unlink(missing_ok=True)
        (out / "poison.json").write_text(json.dumps(both, indent=1) + "\n")
        (out / "poison.txt").write_text(r)
        rates = [f"{k}: {d['total']['kill_rate']}" for k, d in both.items() if d]
        say(f"poison: {time.time() - t:.0f} s -> poison.txt, poison.json; drop-shared-init kill rates " + ", ".join(rates))

    if "grade" in phases:
        # Every sample submission graded: a batch per exercise (JSON, with the deadlines the
        # test suite uses), a few in the human format, one in every other format, and the
        # correct one with performance points on.
        t = time.time()
        subs = pathlib.Path("harness/tests/submissions")
        quick = "--sanitize-timeout 20"
        r = ""
        for folder in sorted(d.name for d in subs.iterdir() if d.is_dir()):
            # A folder is graded as the exercise its expected.toml names (hostile/ as reduce),
            # with the flags it gives, else as the exercise of its own name.
            want = tomllib.loads((subs / folder / "expected.toml").read_text())
            ex = want.get("exercise", folder)
            extra = " ".join(want.get("args", []))
            r += sh(f"{rg} grade --exercise {ex} {subs}/{folder} {quick} {extra} --format json --jobs 4 --output {out}/grade-{folder}.json", timeout=900)
        for f in ("correct", "missing_loop_barrier", "no_bounds_check", "cheat_trap", "cheat_infinite_loop"):
            r += sh(f"{rg} grade --exercise reduce {quick} {subs}/reduce/{f}.cu", timeout=600)
        one = subs / "reduce" / "missing_loop_barrier.cu"
        for fmt in ("gradescope", "prairielearn", "junit"):
            r += sh(f"{rg} grade --exercise reduce --format {fmt} {one}", timeout=600)
        r += sh(f"{rg} grade --exercise reduce --rubric {subs}/reduce/rubric-performance.toml {subs}/reduce/correct.cu", timeout=600)
        r += sh("ps -eo pid,pgid,stat,etime,cmd | grep -v grep | grep -E 'racegate|compute-sanitizer' || echo 'no racegate or compute-sanitizer process left'")
        (out / "grade.txt").write_text(r)
        say(f"grade: {time.time() - t:.0f} s -> grade.txt, grade-EXERCISE.json")

    if "grade30" in phases:
        # Issue 26: a batch of 30 `reduce` submissions (the sample submissions, cycled to 30,
        # each under its own name) with the defaults, timed; issue 27: the samples with Korean
        # feedback, and the HTML report of the batch.
        t = time.time()
        subs = pathlib.Path("harness/tests/submissions/reduce")
        files = sorted(f for f in subs.iterdir() if f.suffix == ".cu")
        batch = pathlib.Path(tempfile.mkdtemp()) / "batch30"
        batch.mkdir()
        for i in range(30):
            src = files[i % len(files)]
            (batch / f"s{i + 1:02d}_{src.name}").write_bytes(src.read_bytes())
        # One secret for both runs, so each submission meets the same inputs: first every
        # submission alone on the GPU (--exclusive-gpu, the behaviour before the shared lock),
        # then side by side (the default), and the two batches' grades compared item by item.
        secret = batch.parent / "secret"
        secret.write_text("20261202\n")
        r = ""
        runs = (("grade30-alone", "--exclusive-gpu"), ("grade30", ""))
        if a.grade30_shared_only:
            runs = runs[1:]
        for name, flags in runs:
            t1 = time.time()
            r += sh(f"RACEGATE_TIMELINE={out}/timeline-{name}.tsv {rg} grade --exercise reduce {batch} --secret-file {secret} "
                    f"{flags} --format json --output {out}/{name}.json", timeout=560)
            r += f"[30-submission batch wall time ({name}, {flags or 'default: side by side'}): {time.time() - t1:.1f} s]\n"
        try:
            if a.grade30_shared_only:
                raise RuntimeError("--grade30-shared-only: no batch alone to compare with")
            def items(f):
                return {pathlib.Path(g["submission"]).name: (g["score"], [(i["item"], i["status"], i["score"]) for i in g["items"]])
                        for g in json.loads((out / f).read_text())}
            alone, shared = items("grade30-alone.json"), items("grade30.json")
            diff = [k for k in sorted(alone) if alone[k] != shared.get(k)]
            r += f"[grades alone vs side by side: {len(alone)} and {len(shared)} submissions, {len(diff)} differ{': ' + ', '.join(diff) if diff else ''}]\n"
            for k in diff:
                r += f"  {k}: alone {alone[k]}\n  {k}: shared {shared.get(k)}\n"
        except Exception as e:  # noqa: BLE001 - a comparison that could not run is said, not hidden
            r += f"[grades not compared: {e}]\n"
        r += sh(f"{rg} report {out}/grade30.json --html {out}/grade30-html --lang ko", timeout=60)
        for f, lang in (("missing_loop_barrier", "ko"), ("no_bounds_check", "ko"), ("missing_loop_barrier", "en")):
            r += sh(f"{rg} grade --exercise reduce --lang {lang} --sanitize-timeout 20 {subs}/{f}.cu", timeout=300)
        (out / "grade30.txt").write_text(r)
        say(f"grade30: {time.time() - t:.0f} s -> grade30.txt, grade30.json, grade30-html/")

    if "bench" in phases:
        t = time.time()
        r = sh(f"{rg} bench --iters 20 --rounds 3 --json {out}/bench.json", timeout=300)
        (out / "bench.txt").write_text(r)
        say(f"bench: {time.time() - t:.0f} s -> bench.txt, bench.json")

    if "detection" in phases:
        # Issue 26: detection per jitter (dense, pct, none) on every variant stress flags.
        t = time.time()
        r = sh(f"{rg} bench --detection --seeds 3 --trials 60 --table {out}/detection-table.md "
               f"--json {out}/detection.json", timeout=420)
        (out / "detection.txt").write_text(r)
        say(f"detection: {time.time() - t:.0f} s -> detection.txt, detection-table.md, detection.json")

    if "globalcheck" in phases:
        # Issue 16: globalcheck on every case, twice (run 1 is the fixture, run 2 shows
        # stability); plain / racecheck / globalcheck timed side by side, one case at a time
        # (the hanging variant left out); the program example under `gate --`, one kernel at a
        # time; jitter on an nvcc-built program.
        t = time.time()
        gdir = out / "globalcheck"; gdir.mkdir(exist_ok=True)
        # sharedcheck (issue 24) the same way: run 1 of each case is its snapshot fixture
        # (`<case>__sharedcheck.1.jsonl` and its line tables, renamed as globalcheck's are).
        jobs = [(c["name"], tool, run) for c in cases for tool in ("globalcheck", "sharedcheck") for run in (1, 2)]

        def gc(job):
            name, tool, run = job
            name, _, run, rc = sanitize_once(rg, gdir, name, tool, run, timeout=120)
            return name, tool, run, rc
        with cf.ThreadPoolExecutor(8) as ex:
            results = list(ex.map(gc, jobs))
        for tool in ("globalcheck", "sharedcheck"):
            say(f"{tool}: exit codes of run 1: "
                + ", ".join(f"{n}={rc}" for n, tl, r, rc in results if r == 1 and tl == tool))
        say(f"globalcheck + sharedcheck: {len(jobs)} runs in {time.time() - t:.0f} s")
        # Issue 24 item 5: sharedcheck alone and globalcheck + sharedcheck in one run
        # (`--tool globalcheck,sharedcheck`, whose JSON `seconds` is the one run's) beside them,
        # on the sanitizer geometry and on one large launch per heavy family (`--size`);
        # ci/sharedcheck-cost turns the CSV into the record's table. A run that failed or missed
        # its deadline is `nan`.
        timing = ["case,plain_s,racecheck_s,globalcheck_s,sharedcheck_s,globalcheck+sharedcheck_s"]
        wrapper = pathlib.Path(tempfile.mkdtemp()) / "plain-sanitizer"
        wrapper.write_text(PLAIN_SANITIZER); wrapper.chmod(0o755)
        t1 = time.time()
        rows = [(c["name"], None, 30) for c in cases] if a.gc_timing > 0 else []
        rows += [("transpose_padded", "4096", 240), ("matmul_tiled32", "1024", 240)] if a.gc_timing > 0 else []
        for name, size, deadline in rows:
            if name == "handoff::barrier_before_flag" or (size is None and time.time() - t1 > a.gc_timing):
                continue
            row = [name if size is None else f"{name}@{size}"]
            for mode in ("plain", "racecheck", "globalcheck", "sharedcheck", "globalcheck,sharedcheck"):
                env = dict(os.environ)
                tool = "racecheck" if mode == "plain" else mode
                if mode == "plain":
                    env["RACEGATE_COMPUTE_SANITIZER"] = str(wrapper)
                cmd = [rg, "sanitize", name, "--tool", tool, "--json", "-", "--timeout", str(deadline)]
                if size is not None:
                    cmd += ["--size", size]
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, timeout=deadline + 60, env=env)
                    row.append(f'{json.loads(p.stdout)["seconds"]:.3f}')
                except Exception:
                    row.append("nan")
            timing.append(",".join(row))
        (out / "globalcheck-timing.csv").write_text("\n".join(timing) + "\n")
        r0 = sh(f"python3 ci/sharedcheck-cost {out / 'globalcheck-timing.csv'}", timeout=60)
        (out / "sharedcheck-cost.md").write_text(r0)
        r = "" if a.gc_programs else "(the program examples were not run: --no-gc-programs)\n"
        r += "" if not a.gc_programs else sh("nvcc -arch=sm_90 -lineinfo -o /tmp/global_races examples/globalcheck/global_races.cu && "
               "nvcc -arch=sm_90 -lineinfo -o /tmp/matmul_war examples/globalcheck/matmul_war.cu && /tmp/global_races", timeout=120)
        kernels = ["counter_plain", "counter_atomic", "warps_no_barrier", "warps_barrier", "histogram_plain",
                   "histogram_atomic", "neighbour_read", "own_read", "last_block_sum", "handoff_fenced",
                   "lanes_no_syncwarp", "lanes_syncwarp"]
        for k in kernels if a.gc_programs else []:
            r += sh(f"{rg} gate --baseline /tmp/nb-{k}.json --tools globalcheck --runs 1 --no-jitter --sanitize-timeout 30 "
                    f"--json {gdir}/program-{k}.json -- /tmp/global_races {k}", timeout=100)
        if a.gc_programs:
            r += sh("for i in $(seq 1 20); do /tmp/matmul_war 256; done | sort | uniq -c", timeout=100)
            r += sh(f"{rg} gate --baseline /tmp/nb-mm.json --tools globalcheck --runs 10 --no-jitter --sanitize-timeout 30 -- /tmp/matmul_war 256", timeout=150)
            r += sh(f"{rg} gate --baseline /tmp/nb-mm2.json --tools globalcheck --runs 10 --sanitize-timeout 30 -- /tmp/matmul_war 256", timeout=150)
        (out / "globalcheck.txt").write_text(r)
        with tarfile.open(out / "globalcheck.tar.gz", "w:gz") as tf:
            tf.add(gdir, arcname="globalcheck")
        import shutil; shutil.rmtree(gdir)
        say(f"globalcheck: {time.time() - t:.0f} s -> globalcheck.txt, globalcheck-timing.csv, sharedcheck-cost.md, globalcheck.tar.gz")

    if "ncu" in phases:
        # Issue 28: Nsight Compute counters on the course's families (racegate's own stress path as
        # the target, the family's kernels only), CSV kept raw as fixtures for `racegate perf`.
        t = time.time()
        ndir = out / "ncu"; ndir.mkdir(exist_ok=True)
        metrics = ",".join([
            "gpu__time_duration.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
            "smsp__sass_inst_executed_op_shared_ld.sum",
            "smsp__sass_inst_executed_op_shared_st.sum",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            "smsp__sass_average_branch_targets_threads_uniform.pct",
            "dram__bytes.sum"])
        r = sh("ncu --version", timeout=60)
        for case, size, kern in [("transpose_naive_tile", 4096, "transpose"), ("transpose_padded", 4096, "transpose"),
                                 ("transpose_swizzled", 4096, "transpose"), ("reduce_interleaved", 16777216, "reduce"),
                                 ("reduce_sequential", 16777216, "reduce"), ("reduce_warp_unrolled", 16777216, "reduce"),
                                 ("reduce_shuffle", 16777216, "reduce"), ("matmul_naive", 1024, "matmul"),
                                 ("matmul_tiled16", 1024, "matmul"), ("matmul_tiled32", 1024, "matmul")]:
            cmd = (f"ncu --target-processes all --clock-control none --csv --metrics {metrics} -k regex:{kern} "
                   f"{rg} stress {case} --trials 2 --per-set 2 --seed 1 --size {size} --no-jitter --timeout 60")
            r += f"$ {cmd}\n"
            rc, o, e, dt = 0, "", "", 0.0
            t1 = time.time()
            p = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=180, errors="replace")
            (ndir / f"{case}.csv").write_text(p.stdout)
            (ndir / f"{case}.stderr.txt").write_text(p.stderr)
            r += f"exit {p.returncode} in {time.time() - t1:.1f} s; {len(p.stdout.splitlines())} stdout lines\n"
        # `racegate perf` itself: CUDA-event timing beside each family's reference, ncu run by racegate
        # (raw CSV kept per kernel under perf-csv/ as fixtures), the course tables, the header
        # expectations (--check: exit 0 when all hold, 1 when one breaks), and the exit codes without
        # counters (a missing ncu: 3; --no-counters: 0).
        fam = ("transpose_naive_tile transpose_padded transpose_swizzled reduce_interleaved reduce_sequential "
               "reduce_warp_unrolled reduce_shuffle matmul_naive matmul_tiled16 matmul_tiled32")
        r += sh(f"{rg} perf {fam} --table {ndir}/perf-tables.md --json {ndir}/perf.json "
                f"--save-csv {ndir}/perf-csv", timeout=1200)
        r += sh(f"{rg} perf --check --json {ndir}/perf-check.json --save-csv {ndir}/perf-check-csv", timeout=600)
        r += sh(f"RACEGATE_NCU=/nonexistent/ncu {rg} perf transpose_padded --json {ndir}/perf-no-ncu.json", timeout=300)
        r += sh(f"{rg} perf transpose_padded --no-counters", timeout=300)
        (out / "ncu.txt").write_text(r)
        with tarfile.open(out / "ncu.tar.gz", "w:gz") as tf:
            tf.add(ndir, arcname="ncu")
        import shutil; shutil.rmtree(ndir)
        say(f"ncu: {time.time() - t:.0f} s -> ncu.txt, ncu.tar.gz")

    if "samples" in phases:
        # Issue 32: correct third-party programs (NVIDIA/cuda-samples, staged by
        # `ci/gate-samples stage` into BUNDLE/samples) under `racegate gate --` with the defaults.
        t = time.time()
        r = sh(f"python3 ci/gate-samples run --racegate {rg} --samples {a.bundle}/samples --out {out} --limit {a.samples}",
               timeout=560)
        (out / "samples.txt").write_text(r)
        say(f"samples: {time.time() - t:.0f} s -> samples.txt, samples-gate.md, samples-gate.json, samples/")

    if "nextest" in phases:
        t = time.time()
        b = a.bundle
        r = sh(f"INSTA_WORKSPACE_ROOT=$PWD {b}/cargo-nextest nextest run --archive-file {b}/racegate-tests.tar.zst "
               f"--workspace-remap . --profile ci --no-fail-fast; cp target/nextest/ci/junit.xml {out}/nextest-junit.xml", timeout=560)
        (out / "nextest.txt").write_text(r)
        say(f"nextest: {time.time() - t:.0f} s -> nextest.txt, nextest-junit.xml; " + r.strip().splitlines()[-1])

    say(f"done in {time.time() - t0:.0f} s")
    if a.pack:
        # The device tool returns at most 8 files: everything but the summary goes in one tarball.
        log.close()
        files = [f for f in out.iterdir() if f.name not in ("summary.txt", "run.log", "results.tar.gz")]
        with tarfile.open(out / "results.tar.gz", "w:gz") as tf:
            for f in files:
                tf.add(f, arcname=f.name)
        for f in files:
            if f.is_dir():
                import shutil; shutil.rmtree(f)
            else:
                f.unlink()


if __name__ == "__main__":
    main()
