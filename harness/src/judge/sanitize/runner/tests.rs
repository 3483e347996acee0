//! Tests of `runner/mod.rs`: the buffers digest and the XML file name.
use super::*;

#[test]
fn the_xml_file_name_fits_the_file_system_for_any_label() {
    // Every length up to a matrix-sized batch label, ASCII and multi-byte, every tool.
    let pieces = ["reduce_sequential::no_loop_sync", "é", "行列", "a/b", "x"];
    let mut seen = std::collections::BTreeSet::new();
    for n in 0..400 {
        let label: String = (0..n)
            .map(|i| pieces[(i * 7 + n) % pieces.len()])
            .collect::<Vec<_>>()
            .join("+");
        for tool in Tool::ALL {
            let name = xml_name(&label, tool);
            assert!(name.len() <= 255, "{} bytes: {name}", name.len());
            assert!(!name.contains('/'), "{name}");
            assert!(name.ends_with(&format!("-{tool}.xml")), "{name}");
        }
        assert!(
            seen.insert(xml_name(&label, Tool::Racecheck)),
            "two labels, one name: {label}"
        );
    }
    // A short label keeps its readable name.
    assert_eq!(
        xml_name("stencil3::inplace_neighbour", Tool::Memcheck),
        "stencil3__inplace_neighbour-memcheck.xml"
    );
}

#[test]
fn the_digest_sees_every_byte_and_where_buffers_split() {
    let base = vec![vec![1u8, 2, 3], vec![4u8]];
    let d = digest(&base);
    for i in 0..2 {
        for j in 0..base[i].len() {
            let mut other = base.clone();
            other[i][j] ^= 0x80;
            assert_ne!(digest(&other), d, "byte {j} of buffer {i}");
        }
    }
    assert_ne!(digest(&[vec![1u8, 2], vec![3u8, 4]]), d);
    assert_eq!(digest(&base.clone()), d);
}

#[test]
fn a_hang_keeps_what_racecheck_said_about_the_deadlock() {
    let log = "========= COMPUTE-SANITIZER\n========= Deadlock detected in Barrier called by threads starting at (0,0,0) in block (2,0,0), (active mask: 0xffffffff) at handoff+0x300 in barrier_before_flag.cu:28\n";
    match decide(
        &Exit::TimedOut,
        false,
        Path::new("/nonexistent.xml"),
        log,
        Path::new("/"),
    ) {
        Outcome::Hang {
            left_behind: false,
            said: Some(s),
        } => assert!(
            s.starts_with("Deadlock detected") && s.ends_with("barrier_before_flag.cu:28"),
            "{s}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn exit_255_and_missing_xml_are_inconclusive_never_clean() {
    let none = Path::new("/nonexistent.xml");
    assert!(matches!(
        decide(&Exit::Code(255), false, none, "bad option", Path::new("/")),
        Outcome::Inconclusive(_)
    ));
    assert!(
        matches!(decide(&Exit::Code(0), false, none, "", Path::new("/")), Outcome::Inconclusive(m) if m.contains("no XML"))
    );
    assert!(matches!(
        decide(&Exit::Signal(9), false, none, "", Path::new("/")),
        Outcome::Inconclusive(_)
    ));
}
