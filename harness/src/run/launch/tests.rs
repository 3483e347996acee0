//! Tests of what `launch` decides on the host (no device needed).
use super::*;
use crate::source::exercises::{Buffer, Elem, Init};

fn out(prefix: Option<&str>, unwritten: bool) -> Buffer {
    let mut b = Buffer::input("o", Elem::U32, vec![]);
    b.init = Init::Poison(16);
    b.may_stay_unwritten = unwritten;
    b.compare.prefix = prefix.map(String::from);
    b
}

#[test]
fn a_prefix_output_is_filled_for_sanitizer_runs_like_an_unwritten_one() {
    let sanitizer = RunOptions::default();
    let stress = RunOptions {
        poison_outputs: true,
        poison: 0,
        ..RunOptions::default()
    };
    assert_eq!(output_fill(&out(None, false), &sanitizer), None);
    assert_eq!(
        output_fill(&out(Some("count[0]"), false), &sanitizer),
        Some(FIXED_POISON)
    );
    assert_eq!(
        output_fill(&out(None, true), &sanitizer),
        Some(FIXED_POISON)
    );
    // Stress: the rotating poison, but the fixed one where the oracle expects it.
    assert_eq!(output_fill(&out(Some("count[0]"), false), &stress), Some(0));
    assert_eq!(output_fill(&out(None, false), &stress), Some(0));
    assert_eq!(output_fill(&out(None, true), &stress), Some(FIXED_POISON));
}
