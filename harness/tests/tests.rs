//! racegate's test target (libtest-mimic): one trial per thing worth knowing, one module per
//! subject, each with its `trials()`:
//!
//! * `compile`: `compile::<file>` and `compile_jitter::<file>`, NVRTC builds every `.cu` (host);
//! * `snapshots`: `snapshot::<case>::<tool>`, H200 sanitizer XML fixture -> findings ->
//!   normalized text -> the snapshot under `snapshots/` (host);
//! * `grade`: `grade::gpu::<name>`, `racegate grade` on a GPU: the performance rubric;
//! * `samples`: `grade::{host,gpu}::<exercise>::<sample>`, each sample submission gets the grade
//!   its `expected.toml` gives;
//! * `gpu`: `<case>::<detector>`, the case's declared expectation (flag / clean / may) holds on
//!   the GPU;
//! * `manifest_gpu`: `manifest_gpu::<kernel>::<detector>`, every manifest buffer kind and
//!   comparison mode on the GPU (`tests/fixtures/manifest_gpu/`);
//! * `mutate_gpu`: `mutate::<kernel>`, `racegate mutate --run` kills every mutant of operators
//!   that must die on that kernel, with a clean control.
//!
//! * `selftest`: `selftest::<name>`, this binary run by itself: GPU trials never pass without a
//!   device, and `.config/nextest.toml`'s `gpu` test group is exactly the GPU trials (host).
//!
//! GPU trials (kind `gpu`) are listed as ignored when there is no CUDA device, decided when the
//! list is made, so `cargo nextest run` reports them as skipped (`<skipped>` in its JUnit) rather
//! than passed; a note on stderr says why. One run anyway (`--ignored`, `--include-ignored`,
//! nextest's `--run-ignored only|all`) fails with "no CUDA device: ..." (`util::no_device`):
//! nextest judges a test by its exit code, so a runtime "ignored" would be a pass there. Under
//! `CI=true` a missing NVRTC fails the compile trials instead of skipping them. The fixed tables
//! of cases and the mechanisms tested end to end with fakes (`header::<name>`, `gate::<name>`,
//! `cli::<name>`, ...) are plain `#[test]`s in the `host` target (`tests/host/`).

mod compile;
mod gpu;
mod grade;
mod manifest_gpu;
mod mutate_gpu;
mod samples;
mod snapshots;
mod util;

use libtest_mimic::Arguments;
use racegate::source::catalog::Catalog;

fn main() {
    let args = Arguments::from_args();
    let root = util::root();
    let catalog = match Catalog::discover(&root) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: catalog discovery failed: {e}");
            std::process::exit(101);
        }
    };
    let device = racegate::run::device::probe();
    let mut trials: Vec<libtest_mimic::Trial> = Vec::new();
    trials.extend(compile::trials(&catalog));
    trials.extend(snapshots::trials(&catalog));
    trials.extend(grade::trials(&root, &device));
    trials.extend(samples::trials(&root, &device));
    trials.extend(gpu::trials(&catalog, &device));
    trials.extend(manifest_gpu::trials(&root, &device));
    trials.extend(mutate_gpu::trials(&root, &device));
    trials.extend(selftest::trials(&root));
    if let Err(why) = &device {
        let gpu = trials.iter().filter(|t| t.kind() == "gpu").count();
        // stderr: stdout of `--list` is parsed by nextest.
        eprintln!("note: {gpu} GPU trials ([gpu]) are ignored: no CUDA device: {why}");
        trials = trials
            .into_iter()
            .map(|t| {
                let gpu = t.kind() == "gpu";
                t.with_ignored_flag(gpu)
            })
            .collect();
    }
    libtest_mimic::run(&args, trials).exit();
}

/// `selftest::<name>`: this test binary run by itself (`current_exe`, so under `cargo test`,
/// nextest and a nextest archive alike), with `RACEGATE_NO_GPU=1` so that the answer is the
/// same on a machine with a GPU.
mod selftest {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use libtest_mimic::{Failed, Trial};

    pub fn trials(root: &Path) -> Vec<Trial> {
        let r = root.to_path_buf();
        vec![
            Trial::test(
                "selftest::gpu_trials_fail_without_a_device",
                gpu_trials_fail_without_a_device,
            )
            .with_kind("host"),
            Trial::test(
                "selftest::nextest_gpu_group_is_every_gpu_trial",
                move || nextest_gpu_group_is_every_gpu_trial(&r),
            )
            .with_kind("host"),
        ]
    }

    /// Runs this binary with `args` and no device: exit code, stdout, stderr. Through
    /// `/proc/self/exe` where there is one: the very file running, even when a build sharing the
    /// target folder has replaced it meanwhile.
    fn run_self(args: &[&str]) -> Result<(i32, String, String), Failed> {
        let proc_self = PathBuf::from("/proc/self/exe");
        let exe = if proc_self.exists() {
            proc_self
        } else {
            std::env::current_exe().map_err(|e| format!("no path to this binary: {e}"))?
        };
        let out = Command::new(&exe)
            .args(args)
            .args(["--color", "never"])
            .env("RACEGATE_NO_GPU", "1")
            .output()
            .map_err(|e| format!("{} does not run: {e}", exe.display()))?;
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }

    /// The names `--list` prints (`[KIND] NAME`), with `extra` arguments.
    fn list(extra: &[&str]) -> Result<Vec<String>, Failed> {
        let mut args = vec!["--list"];
        args.extend(extra);
        let (code, stdout, stderr) = run_self(&args)?;
        if code != 0 {
            return Err(format!("--list exited {code}\n{stderr}").into());
        }
        Ok(stdout
            .lines()
            .filter_map(|l| l.strip_suffix(": test"))
            .map(String::from)
            .collect())
    }

    fn some(names: &[&String]) -> String {
        let mut s: Vec<&str> = names.iter().take(5).map(|n| n.as_str()).collect();
        if names.len() > 5 {
            s.push("...");
        }
        s.join(", ")
    }

    /// With `--run-ignored only` nextest once reported 10 GPU trials as PASS on a machine
    /// without a GPU. Every GPU trial is listed as ignored without a device, and run anyway it
    /// fails with "no CUDA device", in one process (`cargo test -- --ignored`) and in one
    /// process per test, judged by the exit code, as nextest runs them.
    fn gpu_trials_fail_without_a_device() -> Result<(), Failed> {
        let all = list(&[])?;
        let gpu: BTreeSet<&str> = all
            .iter()
            .filter_map(|n| n.strip_prefix("[gpu] "))
            .collect();
        if gpu.len() < 100 {
            return Err(format!(
                "only {} [gpu] trials listed:\n{}",
                gpu.len(),
                all.join("\n")
            )
            .into());
        }
        // Listed as ignored up front: exactly the GPU trials.
        let ignored: BTreeSet<String> = list(&["--ignored"])?.into_iter().collect();
        let not_ignored: Vec<&String> = all
            .iter()
            .filter(|n| n.starts_with("[gpu] ") && !ignored.contains(*n))
            .collect();
        let wrongly: Vec<&String> = ignored
            .iter()
            .filter(|n| !n.starts_with("[gpu] "))
            .collect();
        if !not_ignored.is_empty() || !wrongly.is_empty() {
            return Err(format!(
                "without a device, {} GPU trials are not listed as ignored ({}) and {} others are \
                 ({})",
                not_ignored.len(),
                some(&not_ignored),
                wrongly.len(),
                some(&wrongly)
            )
            .into());
        }
        for flag in ["--ignored", "--include-ignored"] {
            let (code, stdout, stderr) = run_self(&[flag, "--format", "json", "[gpu] "])?;
            // JSON events name a trial without its kind; the message is in "stdout".
            let mut seen: BTreeMap<String, (String, String)> = BTreeMap::new();
            for line in stdout.lines() {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                if v["type"] == "test" && v["event"] != "started" {
                    seen.insert(
                        v["name"].as_str().unwrap_or("").to_string(),
                        (
                            v["event"].as_str().unwrap_or("").to_string(),
                            v["stdout"].as_str().unwrap_or("").to_string(),
                        ),
                    );
                }
            }
            let wrong: Vec<String> = gpu
                .iter()
                .filter_map(|name| match seen.get(*name) {
                    Some((event, msg))
                        if event == "failed" && msg.starts_with("Error: \"no CUDA device") =>
                    {
                        None
                    }
                    Some((event, msg)) => Some(format!("{name}: {event} {}", msg.trim())),
                    None => Some(format!("{name}: did not run")),
                })
                .collect();
            if code != 101 || !wrong.is_empty() {
                return Err(format!(
                    "{flag} without a device exited {code}; {} of {} GPU trials did not fail with \
                     \"no CUDA device\":\n{}\n{stderr}",
                    wrong.len(),
                    gpu.len(),
                    wrong
                        .iter()
                        .take(20)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("\n")
                )
                .into());
            }
        }
        // nextest: one process per test, `--exact NAME --nocapture` (`--ignored` for an ignored
        // one), and the exit code decides. One trial of each group (`grade`, `mutate`, each case).
        let mut groups = BTreeSet::new();
        for name in &gpu {
            if !groups.insert(name.split("::").next().unwrap_or(name)) {
                continue;
            }
            for flag in ["--ignored", "--include-ignored"] {
                let full = format!("[gpu] {name}");
                let (code, stdout, stderr) = run_self(&["--exact", &full, "--nocapture", flag])?;
                if code != 101 || !stdout.contains("no CUDA device") {
                    return Err(format!(
                        "--exact '{full}' {flag} without a device exited {code} (nextest: {}), \
                         not 101 with \"no CUDA device\":\n{stdout}\n{stderr}",
                        if code == 0 { "PASS" } else { "FAIL" }
                    )
                    .into());
                }
            }
        }
        Ok(())
    }

    /// The `gpu` test group's filter once named `^grade::gpu::` and `^snapshot::`, but
    /// nextest sees `[gpu] grade::gpu::...` and `[host] snapshot::...`, so GPU trials ran outside
    /// the group and host snapshots inside it. Every override of `.config/nextest.toml` that
    /// names the group, applied to what `--list` prints (the names nextest sees), must take in
    /// every `[gpu]` trial and nothing else.
    fn nextest_gpu_group_is_every_gpu_trial(root: &Path) -> Result<(), Failed> {
        let path: PathBuf = root.join(".config/nextest.toml");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let cfg: toml::Value =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if cfg.get("test-groups").and_then(|g| g.get("gpu")).is_none() {
            return Err("no [test-groups] gpu in .config/nextest.toml".into());
        }
        let all = list(&[])?;
        let mut checked = Vec::new();
        let profiles = cfg.get("profile").and_then(|p| p.as_table());
        for (profile, p) in profiles.into_iter().flatten() {
            let overrides = p.get("overrides").and_then(|o| o.as_array());
            for o in overrides.into_iter().flatten() {
                if o.get("test-group").and_then(|g| g.as_str()) != Some("gpu") {
                    continue;
                }
                let text = o.get("filter").and_then(|f| f.as_str()).unwrap_or("");
                let f = filterset::parse(text)
                    .map_err(|e| format!("profile.{profile}: filter {text:?}: {e}"))?;
                let inside: Vec<&String> = all
                    .iter()
                    .filter(|n| !n.starts_with("[gpu] ") && f.matches(n))
                    .collect();
                let outside: Vec<&String> = all
                    .iter()
                    .filter(|n| n.starts_with("[gpu] ") && !f.matches(n))
                    .collect();
                if !inside.is_empty() || !outside.is_empty() {
                    return Err(format!(
                        "profile.{profile}: filter {text:?} puts {} other trials in the gpu \
                         group ({}) and leaves {} GPU trials out ({})",
                        inside.len(),
                        some(&inside),
                        outside.len(),
                        some(&outside)
                    )
                    .into());
                }
                checked.push(profile.clone());
            }
        }
        if !checked.iter().any(|p| p == "default") {
            return Err("no override of profile.default puts trials in the gpu group".into());
        }
        Ok(())
    }

    /// The part of nextest's filterset language the config uses, evaluated on a test's name:
    /// `test(/REGEX/)`, `test(=NAME)`, `test(~TEXT)`, `test(TEXT)` (contains), `all()`,
    /// `none()`, `not`/`!`, `and`/`&`, `-` (and not), `or`/`|`/`+`, parentheses; `not` binds
    /// tightest, then `and` and `-`, then `or`. Anything else is an error, so a new form is
    /// added here rather than silently misread.
    mod filterset {
        use regex::Regex;

        pub enum F {
            Regex(Regex),
            Equal(String),
            Contains(String),
            All(bool),
            Not(Box<F>),
            And(Box<F>, Box<F>),
            Or(Box<F>, Box<F>),
        }

        impl F {
            pub fn matches(&self, name: &str) -> bool {
                match self {
                    F::Regex(r) => r.is_match(name),
                    F::Equal(s) => name == s,
                    F::Contains(s) => name.contains(s.as_str()),
                    F::All(b) => *b,
                    F::Not(f) => !f.matches(name),
                    F::And(a, b) => a.matches(name) && b.matches(name),
                    F::Or(a, b) => a.matches(name) || b.matches(name),
                }
            }
        }

        pub fn parse(text: &str) -> Result<F, String> {
            let mut p = Parser { s: text, i: 0 };
            let f = p.or()?;
            p.ws();
            if p.i != text.len() {
                return Err(format!("unexpected {:?}", &text[p.i..]));
            }
            Ok(f)
        }

        struct Parser<'a> {
            s: &'a str,
            i: usize,
        }

        impl Parser<'_> {
            fn rest(&self) -> &str {
                &self.s[self.i..]
            }
            fn ws(&mut self) {
                while self.rest().starts_with(char::is_whitespace) {
                    self.i += 1;
                }
            }
            /// Takes one of `ops` (a word operator only when a space or `(` follows).
            fn op(&mut self, ops: &[&str]) -> Option<String> {
                self.ws();
                for op in ops {
                    if let Some(after) = self.rest().strip_prefix(op) {
                        let word = op.chars().all(|c| c.is_ascii_alphabetic());
                        if word && !after.starts_with([' ', '(']) {
                            continue;
                        }
                        self.i += op.len();
                        return Some(op.to_string());
                    }
                }
                None
            }
            fn or(&mut self) -> Result<F, String> {
                let mut f = self.and()?;
                while self.op(&["|", "+", "or"]).is_some() {
                    f = F::Or(Box::new(f), Box::new(self.and()?));
                }
                Ok(f)
            }
            fn and(&mut self) -> Result<F, String> {
                let mut f = self.not()?;
                while let Some(op) = self.op(&["&", "-", "and"]) {
                    let g = self.not()?;
                    let g = if op == "-" { F::Not(Box::new(g)) } else { g };
                    f = F::And(Box::new(f), Box::new(g));
                }
                Ok(f)
            }
            fn not(&mut self) -> Result<F, String> {
                if self.op(&["!", "not"]).is_some() {
                    return Ok(F::Not(Box::new(self.not()?)));
                }
                if self.op(&["("]).is_some() {
                    let f = self.or()?;
                    return match self.op(&[")"]) {
                        Some(_) => Ok(f),
                        None => Err(format!("no `)` before {:?}", self.rest())),
                    };
                }
                self.atom()
            }
            fn atom(&mut self) -> Result<F, String> {
                self.ws();
                let open = self
                    .rest()
                    .find('(')
                    .ok_or_else(|| format!("expected a predicate at {:?}", self.rest()))?;
                let name = self.rest()[..open].trim().to_string();
                self.i += open + 1;
                let arg = if self.rest().starts_with('/') {
                    // A regex ends at the first `/` not escaped; `\/` is a `/`.
                    let body = &self.rest()[1..];
                    let mut end = None;
                    let mut prev = ' ';
                    for (k, c) in body.char_indices() {
                        if c == '/' && prev != '\\' {
                            end = Some(k);
                            break;
                        }
                        prev = if prev == '\\' { ' ' } else { c };
                    }
                    let end = end.ok_or("a regex without its closing `/`")?;
                    let re = body[..end].replace("\\/", "/");
                    self.i += end + 2;
                    Some(Regex::new(&re).map_err(|e| e.to_string())?)
                } else {
                    None
                };
                let close = self
                    .rest()
                    .find(')')
                    .ok_or_else(|| format!("`{name}(` without its `)`"))?;
                let text = self.rest()[..close].to_string();
                self.i += close + 1;
                match (name.as_str(), arg) {
                    ("test", Some(re)) if text.trim().is_empty() => Ok(F::Regex(re)),
                    ("test", None) => Ok(match text.strip_prefix('=') {
                        Some(exact) => F::Equal(exact.to_string()),
                        None => F::Contains(text.strip_prefix('~').unwrap_or(&text).to_string()),
                    }),
                    ("all", None) if text.trim().is_empty() => Ok(F::All(true)),
                    ("none", None) if text.trim().is_empty() => Ok(F::All(false)),
                    _ => Err(format!(
                        "`{name}(...)` is not understood here (see `mod filterset` in tests.rs)"
                    )),
                }
            }
        }
    }
}
