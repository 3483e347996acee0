//! Explanations people read, in the course's languages: for every kind of finding of every
//! detector, every graded item and the machine's own messages, a title, what it means, the usual
//! cause and a fix hint. The texts live in `harness/locales/{en,ko}.toml` (one table per key,
//! the same keys in both; a test fails on a missing one), never in code; this file only decides
//! which key a finding is ([`key_for`], [`key_for_item`]) and which language to speak ([`Lang`]).
//!
//! Korean uses the course's own words (공유 메모리, 동기화, 배리어, 아토믹, 간헐적 오답, ...);
//! code names (`__syncthreads()`, racecheck) stay as they are in both languages.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// A language racegate explains findings in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Lang {
    #[default]
    En,
    Ko,
}

impl Lang {
    /// Both, in the order tests and `--help` list them.
    #[cfg(test)]
    pub const ALL: [Lang; 2] = [Lang::En, Lang::Ko];

    /// The code `--lang` takes: `en`, `ko`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Ko => "ko",
        }
    }

    /// `en`, `ko`, or a locale such as `ko_KR.UTF-8` / `en-US`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Lang> {
        let lang = s
            .split(['_', '-', '.', '@'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        match lang.as_str() {
            "en" => Some(Lang::En),
            "ko" | "kor" | "korean" => Some(Lang::Ko),
            _ => None,
        }
    }

    /// The language of the environment, as POSIX orders it: `LC_ALL`, then `LC_MESSAGES`, then
    /// `LANG`; the first one set and not empty decides (`C`/`POSIX` and unknown ones mean
    /// English).
    pub fn from_env() -> Lang {
        Lang::from_vars(|k| std::env::var(k).ok())
    }

    /// [`Lang::from_env`] over any lookup (tests give their own).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Lang {
        for var in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let Some(v) = get(var).filter(|v| !v.is_empty()) {
                return Lang::parse(&v).unwrap_or(Lang::En);
            }
        }
        Lang::En
    }
}

/// One explanation: the four texts of a key in one language.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explanation {
    /// One line.
    pub title: String,
    /// What was seen.
    pub meaning: String,
    /// The usual mistake behind it.
    pub cause: String,
    /// What to change.
    pub fix: String,
}

type Catalog = BTreeMap<String, Explanation>;

const EN: &str = include_str!("../../locales/en.toml");
const KO: &str = include_str!("../../locales/ko.toml");

fn catalog(lang: Lang) -> &'static Catalog {
    static CATALOGS: OnceLock<[Catalog; 2]> = OnceLock::new();
    let all = CATALOGS.get_or_init(|| {
        // The files are part of the binary and tested in CI: a parse error is racegate's bug.
        let parse = |name: &str, text: &str| -> Catalog {
            toml::from_str(text).unwrap_or_else(|e| panic!("locales/{name}.toml: {e}"))
        };
        [parse("en", EN), parse("ko", KO)]
    });
    match lang {
        Lang::En => &all[0],
        Lang::Ko => &all[1],
    }
}

/// Every message key (English's keys; Korean has the same, tested).
#[cfg(test)]
pub fn keys() -> impl Iterator<Item = &'static str> {
    catalog(Lang::En).keys().map(String::as_str)
}

/// The explanation of `key` in `lang`; the `unknown` key's for a key that is not in the catalog.
pub fn explain(key: &str, lang: Lang) -> &'static Explanation {
    let c = catalog(lang);
    c.get(key)
        .or_else(|| c.get("unknown"))
        .expect("locales have an `unknown` key (tested)")
}

/// The message key of a finding, from the detector that reported it and its kind (for
/// sanitizers `Kind: what`, e.g. `Analysis: Race condition`, with the access directions in
/// `accesses` where the record had them, e.g. `Write -> Read`; for the others the kind text
/// racegate's own oracles write). Unknown shapes get `unknown`, never a wrong explanation.
pub fn key_for(detector: &str, kind: &str, accesses: &str) -> &'static str {
    let k = kind.to_ascii_lowercase();
    let acc = accesses.to_ascii_lowercase();
    match detector {
        "racecheck" => {
            if k.contains("buffer overflow") || k.contains("dropped") {
                "records-dropped"
            } else if k.starts_with("hang") {
                "hang"
            } else if k.contains("warp level") {
                // Intra-warp hazards: "Warning: (Warp Level Programming)" (compute-sanitizer's
                // manual); lanes of one warp, not warps of a block.
                "race-shared-warp"
            } else if acc.contains("write -> write") {
                // Two writers (a plain `+=` from many threads among them): the write-write
                // hazard is the cause whatever reads were reported beside it.
                "race-shared-waw"
            } else if acc.contains("write -> read") {
                "race-shared-raw"
            } else if acc.contains("read -> write") {
                "race-shared-war"
            } else if k.contains("race") {
                "race-shared-raw"
            } else {
                "unknown"
            }
        }
        "synccheck" => {
            if k.contains("divergent") {
                "barrier-divergent"
            } else if k.starts_with("hang") {
                "hang"
            } else if k.contains("barrier") || k.contains("syncwarp") || k.contains("sync") {
                "barrier-misuse"
            } else {
                "unknown"
            }
        }
        "memcheck" | "initcheck" if k.starts_with("api") || k.contains("program hit") => {
            "api-error"
        }
        "memcheck" => {
            if k.contains("out of bounds") || k.contains("misaligned") || k.contains("invalid") {
                "oob"
            } else if k.starts_with("hang") {
                "hang"
            } else {
                "unknown"
            }
        }
        "initcheck" => {
            if k.contains("host api") {
                "uninit-host-copy"
            } else if k.contains("uninitialized") {
                "uninit-global"
            } else if k.starts_with("hang") {
                "hang"
            } else {
                "unknown"
            }
        }
        "globalcheck" => {
            if k.contains("lost update") {
                "global-lost-update"
            } else if k.contains("between blocks") {
                "global-race-blocks"
            } else if k.contains("between warps") {
                "global-race-warps"
            } else if k.contains("between lanes") {
                "global-race-lanes"
            } else if k.starts_with("hang") {
                "hang"
            } else {
                "unknown"
            }
        }
        "sharedcheck" => {
            if k.contains("never wrote")
                || k.contains("no thread wrote")
                || k.contains("no thread of the block wrote")
                || k.contains("uninit")
            {
                "shared-uninit-read"
            } else if k.contains("atomic") {
                "shared-atomic-plain"
            } else if k.starts_with("hang") {
                "hang"
            } else {
                "unknown"
            }
        }
        "fencecheck" => {
            if k.starts_with("hang") {
                "hang"
            } else if k.contains("read of another block") {
                "fence-acquire"
            } else if k.contains("published to other blocks") || k.contains("fence of block scope")
            {
                "fence-missing"
            } else {
                "unknown"
            }
        }
        "streamcheck" => {
            if k.starts_with("hang") {
                "hang"
            } else if k.contains("between the host") || k.contains("streamhost") {
                "stream-host-race"
            } else {
                "stream-race"
            }
        }
        "stress" | "stress-nojitter" => {
            if k.contains("never wrote") {
                "reads-never-written"
            } else if k.starts_with("hang") {
                "hang"
            } else if k.contains("fault") || k.contains("crash") || k.contains("illegal") {
                "crash"
            } else if k.contains("nondetermin") {
                "nondeterministic"
            } else if k.contains("intermittent") {
                "intermittent"
            } else if k.contains("wrong") || k.contains("mismatch") {
                "wrong-result"
            } else {
                "unknown"
            }
        }
        "watchdog" => "hang",
        "exit" => "exit-code",
        "output" => "output-variance",
        "golden" => "golden-mismatch",
        "checker" => "checker-failed",
        "regex" => "regex-failed",
        _ => "unknown",
    }
}

/// The message key of a graded item (`compiles`, `correct`, a sanitizer, `performance`).
pub fn key_for_item(item: &str) -> &'static str {
    match item {
        "compiles" => "item-compiles",
        "correct" => "item-correct",
        "racecheck" => "item-racecheck",
        "synccheck" => "item-synccheck",
        "memcheck" => "item-memcheck",
        "initcheck" => "item-initcheck",
        "globalcheck" => "item-globalcheck",
        "sharedcheck" => "item-sharedcheck",
        "performance" => "item-performance",
        _ => "unknown",
    }
}

/// The explanation as a few lines of text for a terminal or a feedback box: the title, then
/// meaning, cause and fix, each on its line, and the course section to read where the exercise
/// names one.
pub fn render(key: &str, lang: Lang, see: Option<&str>) -> String {
    let e = explain(key, lang);
    let (cause, fix, read) = match lang {
        Lang::En => ("Usual cause", "Fix", "Read"),
        Lang::Ko => ("흔한 원인", "고치는 법", "참고"),
    };
    let mut s = format!(
        "{}\n  {}\n  {cause}: {}\n  {fix}: {}",
        e.title, e.meaning, e.cause, e.fix
    );
    if let Some(see) = see.filter(|s| !s.trim().is_empty()) {
        s.push_str(&format!(" ({read}: {see})"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_languages_have_every_key_and_every_field() {
        let en: Vec<_> = catalog(Lang::En).keys().collect();
        let ko: Vec<_> = catalog(Lang::Ko).keys().collect();
        assert_eq!(en, ko, "en.toml and ko.toml must have the same keys");
        for lang in Lang::ALL {
            for (k, e) in catalog(lang) {
                for (field, text) in [
                    ("title", &e.title),
                    ("meaning", &e.meaning),
                    ("cause", &e.cause),
                    ("fix", &e.fix),
                ] {
                    assert!(
                        !text.trim().is_empty(),
                        "{}: {k}.{field} is empty",
                        lang.code()
                    );
                }
                assert!(
                    !e.title.contains('\n'),
                    "{}: {k}.title is one line",
                    lang.code()
                );
            }
        }
    }

    #[test]
    fn korean_is_korean_and_uses_the_course_words() {
        for (k, e) in catalog(Lang::Ko) {
            if k == "unknown" {
                continue;
            }
            let all = format!("{}{}{}{}", e.title, e.meaning, e.cause, e.fix);
            assert!(
                all.chars().any(|c| ('\u{AC00}'..='\u{D7A3}').contains(&c)),
                "ko: {k} has no Hangul"
            );
        }
        // The course glossary's words where the concept is the subject.
        for (key, word) in [
            ("race-shared-raw", "동기화"),
            ("race-shared-raw", "배리어"),
            ("shared-uninit-read", "공유 메모리"),
            ("shared-uninit-read", "경계 처리"),
            ("shared-atomic-plain", "아토믹"),
            ("barrier-divergent", "배리어 발산"),
            ("intermittent", "간헐적 오답"),
            ("nondeterministic", "비결정적"),
            ("hang", "데드락"),
            ("global-lost-update", "privatization"),
            ("item-performance", "뱅크 충돌"),
            ("item-performance", "패딩"),
        ] {
            let e = explain(key, Lang::Ko);
            let all = format!("{}{}{}{}", e.title, e.meaning, e.cause, e.fix);
            assert!(all.contains(word), "ko: {key} should say {word}");
        }
    }

    #[test]
    fn code_names_stay_untranslated() {
        for key in keys() {
            let en = explain(key, Lang::En);
            let ko = explain(key, Lang::Ko);
            let ticks = |e: &Explanation| {
                let all = format!("{} {} {} {}", e.title, e.meaning, e.cause, e.fix);
                let mut v: Vec<String> = all
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_string)
                    .collect();
                v.sort();
                v.dedup();
                v
            };
            // Every code name the Korean text uses is one the English text uses too.
            for code in ticks(ko) {
                assert!(
                    ticks(en).contains(&code) || code.contains("TILE"),
                    "{key}: ko has `{code}` that en has not"
                );
            }
        }
    }

    #[test]
    fn every_key_the_classifier_gives_exists() {
        let detectors = [
            "racecheck",
            "synccheck",
            "memcheck",
            "initcheck",
            "globalcheck",
            "sharedcheck",
            "fencecheck",
            "stress",
            "stress-nojitter",
            "watchdog",
            "exit",
            "output",
            "golden",
            "checker",
            "regex",
            "something-new",
        ];
        let kinds = [
            "Analysis: Race condition",
            "Synccheck: Barrier error: Divergent thread(s) in warp",
            "Precise: Invalid __global__ write of size 4 bytes is out of bounds",
            "Initcheck: Uninitialized __global__ memory read of size 4 bytes",
            "Api: Program hit CUDA_ERROR_LAUNCH_FAILED",
            "Global: Lost update (plain read-modify-write) on global memory between blocks",
            "hang: a trial missed its deadline",
            "wrong results against the determinism oracle",
            "",
        ];
        for d in detectors {
            for k in kinds {
                for acc in ["", "Write -> Read", "Read -> Write", "Write -> Write"] {
                    let key = key_for(d, k, acc);
                    assert!(
                        catalog(Lang::En).contains_key(key),
                        "{d}/{k}/{acc} -> {key}"
                    );
                }
            }
        }
        for item in [
            "compiles",
            "correct",
            "racecheck",
            "synccheck",
            "memcheck",
            "initcheck",
            "globalcheck",
            "sharedcheck",
            "performance",
        ] {
            assert_ne!(key_for_item(item), "unknown", "{item}");
        }
    }

    #[test]
    fn the_classifier_tells_the_kinds_apart() {
        let cases = [
            ("racecheck", "Analysis: Race condition", "Write -> Read kernels/x.cu:3", "race-shared-raw"),
            ("racecheck", "Analysis: Race condition", "Read -> Write kernels/x.cu:3", "race-shared-war"),
            ("racecheck", "Analysis: Race condition", "Write -> Write kernels/x.cu:3", "race-shared-waw"),
            ("racecheck", "Analysis: Race condition", "Write -> Read a.cu:29; Write -> Write a.cu:29", "race-shared-waw"),
            ("racecheck", "Analysis: Race condition (Warp Level Programming)", "Write -> Read kernels/x.cu:3", "race-shared-warp"),
            ("synccheck", "Synccheck: Barrier error: Divergent thread(s) in warp", "", "barrier-divergent"),
            ("memcheck", "Precise: Invalid __global__ write of size 4 bytes is out of bounds", "", "oob"),
            ("memcheck", "Api: Program hit CUDA_ERROR_LAUNCH_FAILED (error 719)", "", "api-error"),
            ("initcheck", "Initcheck: Uninitialized __global__ memory read of size 4 bytes", "", "uninit-global"),
            ("initcheck", "Initcheck: Host API uninitialized memory access", "", "uninit-host-copy"),
            ("globalcheck", "Global: Write-read race on global memory between blocks, with no atomic handoff between them", "", "global-race-blocks"),
            ("globalcheck", "Global: Read-write race on global memory between warps of one block", "", "global-race-warps"),
            ("globalcheck", "Global: Write-read race on global memory between lanes of one warp", "", "global-race-lanes"),
            ("globalcheck", "Global: Lost update (plain read-modify-write) on global memory between blocks", "", "global-lost-update"),
            // The kinds sharedcheck really writes (`judge/sanitize/injected/shared/report.rs`).
            ("sharedcheck", "Shared: Reads shared memory no thread of the block wrote since it started", "Read", "shared-uninit-read"),
            ("sharedcheck", "Shared: An atomic updates shared memory no thread of the block wrote since it started", "Atomic", "shared-uninit-read"),
            ("sharedcheck", "Shared: Atomic and plain access to one shared word between warps of one block, with no __syncthreads between them", "Atomic -> Plain k.cu:3", "shared-atomic-plain"),
            // The kinds fencecheck really writes (`judge/sanitize/injected/fence/handoffs.rs`).
            ("fencecheck", "Fence: Global store published to other blocks by an atomic with no __threadfence() between them: the reading block may see the atomic before the store", "Write -> Release k.cu:3 -> Acquire k.cu:4 -> Read k.cu:9", "fence-missing"),
            ("fencecheck", "Fence: Fence of block scope where blocks hand off: __threadfence_block() between a global store and the atomic that publishes it to other blocks orders it for the block only; __threadfence() is needed", "", "fence-missing"),
            ("fencecheck", "Fence: Global read of another block's data after the atomic that acquired it, with no __threadfence() (or acquire load) between them", "Acquire k.cu:4 -> Read k.cu:9", "fence-acquire"),
            ("stress", "wrong results against the determinism oracle", "", "wrong-result"),
            ("stress", "hang: a trial missed its deadline", "", "hang"),
            ("stress", "device fault: CUDA_ERROR_ILLEGAL_ADDRESS", "", "crash"),
            ("stress", "reads memory it never wrote: rerun under the same schedule", "", "reads-never-written"),
            ("output", "output differs between identical runs", "", "output-variance"),
            ("exit", "exit code 1", "", "exit-code"),
            ("racecheck", "Unknown(Sanitizer): something new", "", "unknown"),
        ];
        for (d, k, acc, want) in cases {
            assert_eq!(key_for(d, k, acc), want, "{d}: {k} [{acc}]");
        }
    }

    #[test]
    fn the_language_comes_from_the_environment_in_posix_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(Lang::from_vars(env(&[])), Lang::En);
        assert_eq!(Lang::from_vars(env(&[("LANG", "ko_KR.UTF-8")])), Lang::Ko);
        assert_eq!(
            Lang::from_vars(env(&[("LANG", "ko_KR.UTF-8"), ("LC_ALL", "en_US.UTF-8")])),
            Lang::En
        );
        assert_eq!(
            Lang::from_vars(env(&[("LANG", "en_US.UTF-8"), ("LC_MESSAGES", "ko_KR")])),
            Lang::Ko
        );
        assert_eq!(
            Lang::from_vars(env(&[("LC_ALL", ""), ("LANG", "ko")])),
            Lang::Ko
        );
        assert_eq!(Lang::from_vars(env(&[("LANG", "C")])), Lang::En);
        assert_eq!(Lang::from_vars(env(&[("LANG", "fr_FR.UTF-8")])), Lang::En);
        for s in [
            "ko",
            "KO",
            "ko_KR",
            "ko-KR",
            "ko_KR.UTF-8",
            "ko_KR.utf8@euro",
        ] {
            assert_eq!(Lang::parse(s), Some(Lang::Ko), "{s}");
        }
        for s in ["", "k", "kr", "c", "de"] {
            assert_ne!(Lang::parse(s), Some(Lang::Ko), "{s}");
        }
    }

    #[test]
    fn rendering_names_the_section_to_read() {
        let s = render("race-shared-raw", Lang::Ko, Some("2.8 동기화 I"));
        assert!(
            s.contains("고치는 법") && s.contains("(참고: 2.8 동기화 I)"),
            "{s}"
        );
        let s = render("race-shared-raw", Lang::En, None);
        assert!(
            s.starts_with("Data race on shared memory") && !s.contains("Read:"),
            "{s}"
        );
        assert_eq!(
            render("no-such-key", Lang::En, None),
            render("unknown", Lang::En, None)
        );
    }
}
