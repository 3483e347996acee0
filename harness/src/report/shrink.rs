//! A minimal repro ([`crate::run::shrink::Shrunk`]) for people: a few lines naming the size, the
//! seed, how often its reruns failed, the first wrong value and the command that shows it.

use crate::run::shrink::Shrunk;
use crate::run::trial::TrialResult;

/// The shrink for people, a few lines.
pub fn describe(s: &Shrunk) -> String {
    let budget = if s.out_of_time {
        " (the time budget ran out)"
    } else {
        ""
    };
    let mut out = if let (true, Some(seed)) = (s.original_repro, s.seed) {
        // A first-trial seed, but one that failed in at most half of its reruns.
        format!(
            "shrunk: size {} (range {}..{}), seed {seed} failed on its first trial but only in {} \
             of {} reruns{budget}\n",
            s.size, s.range.0, s.range.1, s.confirmed, s.confirm,
        )
    } else if s.original_repro {
        // The reruns were of a few-trial command at `size`, not of the line printed below.
        format!(
            "shrunk: size {} (range {}..{}) fails, but no seed found there fails on its first \
             trial (the {}-trial command at that size failed in {} of {} reruns){budget}\n",
            s.size, s.range.0, s.range.1, s.command_trials, s.confirmed, s.confirm,
        )
    } else {
        format!(
            "shrunk: size {} (range {}..{}){}; {} of {} reruns of the repro failed{budget}\n",
            s.size,
            s.range.0,
            s.range.1,
            match s.seed {
                Some(seed) => format!(", seed {seed} fails on its first trial"),
                None => ", no seed found that fails on the first trial".into(),
            },
            s.confirmed,
            s.confirm,
        )
    };
    let at = if s.original_repro {
        format!("at size {}: ", s.size)
    } else {
        String::new()
    };
    if let Some(f) = &s.failure {
        out.push_str(&format!("  {at}problem: {}\n", f.problem));
        match &f.result {
            TrialResult::Wrong(w) => {
                if let Some(m) = w.first.first() {
                    out.push_str(&format!(
                        "  {at}first wrong: `{}`[{}] expected {}, got {} ({} of {} wrong)\n",
                        w.buffer, m.index, m.expected, m.actual, w.wrong, w.total
                    ));
                }
            }
            TrialResult::Fault { error } => out.push_str(&format!("  {at}fault: {error}\n")),
            TrialResult::Pass => {}
        }
    }
    if s.original_repro {
        out.push_str(&format!(
            "  repro (the failing run's own line: the failing trial's input set again, up to that trial, at the size it drew): {}\n",
            s.repro
        ));
    } else {
        out.push_str(&format!("  repro: {}\n", s.repro));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_names_size_seed_rate_and_repro() {
        let s = Shrunk {
            size: 33,
            range: (1, 4096),
            seed: Some(42),
            repro: "racegate stress x --seed 42 --trials 1 --per-set 4 --size 33".into(),
            confirmed: 5,
            confirm: 5,
            failure: None,
            steps: vec![],
            out_of_time: false,
            seconds: 1.0,
            original_repro: false,
            command_trials: 1,
        };
        let d = describe(&s);
        assert!(d.contains("size 33 (range 1..4096)"), "{d}");
        assert!(d.contains("seed 42 fails on its first trial"), "{d}");
        assert!(d.contains("5 of 5 reruns"), "{d}");
        assert!(d.contains("--size 33"), "{d}");
        let fallback = Shrunk {
            seed: None,
            repro: "racegate stress x --seed 1 --trials 1 --per-set 4".into(),
            original_repro: true,
            ..s
        };
        let d = describe(&Shrunk {
            command_trials: 8,
            ..fallback
        });
        assert!(
            d.starts_with("shrunk: size 33 (range 1..4096) fails, but no seed found there fails on its first trial (the 8-trial command at that size failed in 5 of 5 reruns)"),
            "{d}"
        );
        assert!(
            d.contains("repro (the failing run's own line: the failing trial's input set again, up to that trial, at the size it drew): racegate stress x --seed 1 --trials 1"),
            "{d}"
        );
        let flaky = Shrunk {
            seed: Some(9),
            confirmed: 2,
            confirm: 5,
            original_repro: true,
            repro: "racegate stress x --seed 1 --trials 2 --per-set 4".into(),
            range: (1, 4096),
            size: 33,
            failure: None,
            steps: vec![],
            out_of_time: false,
            seconds: 1.0,
            command_trials: 1,
        };
        let d = describe(&flaky);
        assert!(
            d.starts_with("shrunk: size 33 (range 1..4096), seed 9 failed on its first trial but only in 2 of 5 reruns\n"),
            "{d}"
        );
        assert!(
            d.contains("): racegate stress x --seed 1 --trials 2"),
            "{d}"
        );
    }
}
