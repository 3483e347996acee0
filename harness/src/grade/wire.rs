//! The files between the grading parent and its `__grade-worker` child: the request the parent
//! writes (each problem's launches and the initial contents of its buffers) and the response the
//! child appends to (each problem's buffers read back, or the fault that ended it).
//!
//! Both ends are this binary, so the contract is private and changes in lockstep; it is
//! serde-derived JSON so that neither side counts bytes by hand. Three choices matter:
//!
//! * Expected outputs have no field here: they never leave the parent, so a submission that
//!   reads its own process's memory or files finds nothing to copy.
//! * The response is one JSON line per problem, written and flushed as each one ends: a worker
//!   that hangs or dies on problem `k` still leaves the records of the problems before it, and a
//!   half-written last line reads as "not reached".
//! * Buffers travel as hex strings ([`Bytes`]): as JSON arrays of numbers a multi-megabyte input
//!   would take about 3.6 characters per byte and parse far more slowly.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::source::exercises::{Arg, Bits, Buffer, Dim3, Elem, Init, LaunchStep, Problem};

/// The request file.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    /// Whether the worker launches with schedule jitter and poisoned outputs and shared memory.
    jitter: bool,
    problems: Vec<WireProblem>,
    #[serde(default)]
    place: Place,
}

/// Where a request's problems sit among their item's: the first one's index, and the label
/// whose hash is the poison's base (the item's first problem's; `None`: the request's first).
/// A problem's jitter seed and poison come from its place in the item, not in the request, so
/// a problem run again in a request of its own (alone on the GPU after a missed deadline, or
/// after a fresh worker took the rest) gets the schedule and poison it had.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Place {
    pub first: u32,
    pub base: Option<String>,
}

/// A problem as the worker sees it: what to allocate and what to launch, never what must come
/// out.
#[derive(Debug, Serialize, Deserialize)]
struct WireProblem {
    label: String,
    buffers: Vec<WireInit>,
    launches: Vec<WireLaunch>,
}

/// How one buffer starts out ([`Init`]).
#[derive(Debug, Serialize, Deserialize)]
enum WireInit {
    Data(Bytes),
    Poison(usize),
    Zero(usize),
}

/// One launch ([`LaunchStep`]).
#[derive(Debug, Serialize, Deserialize)]
struct WireLaunch {
    kernel: String,
    grid: [u32; 3],
    block: [u32; 3],
    args: Vec<WireArg>,
}

/// A kernel argument ([`Arg`]).
#[derive(Debug, Serialize, Deserialize)]
enum WireArg {
    Buf(usize),
    Int(i32),
    /// A scalar of another width: its bytes, little-endian.
    Scalar(Vec<u8>),
}

/// One line of the response file: what became of one problem.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) enum Record {
    /// The problem ran; every buffer's bytes afterwards, in the problem's order.
    Ran(Vec<Bytes>),
    /// The launch failed (the CUDA context is gone; the worker stops after this record).
    Fault(String),
}

/// Bytes written as one lowercase hex string.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = String::with_capacity(self.0.len() * 2);
        for b in &self.0 {
            text.push(DIGITS[usize::from(b >> 4)] as char);
            text.push(DIGITS[usize::from(b & 0xf)] as char);
        }
        s.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        fn nibble(c: u8) -> Option<u8> {
            match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                _ => None,
            }
        }
        let text = String::deserialize(d)?;
        if text.len() % 2 != 0 {
            return Err(D::Error::custom("hex bytes of odd length"));
        }
        text.as_bytes()
            .chunks_exact(2)
            .map(|p| Some((nibble(p[0])? << 4) | nibble(p[1])?))
            .collect::<Option<Vec<u8>>>()
            .map(Bytes)
            .ok_or_else(|| D::Error::custom("not lowercase hex"))
    }
}

/// The request file for `problems`, without their expected outputs.
pub(super) fn encode_request(problems: &[Problem], jitter: bool, place: &Place) -> Vec<u8> {
    let request = Request {
        jitter,
        problems: problems.iter().map(WireProblem::from).collect(),
        place: place.clone(),
    };
    serde_json::to_vec(&request).expect("a request serializes")
}

/// The problems of a request file and whether to jitter. Buffers come back as untyped bytes
/// with no expected contents: the worker only uploads, launches and reads back.
pub(super) fn decode_request(
    bytes: &[u8],
) -> Result<(bool, Vec<Problem>, Place), serde_json::Error> {
    let request: Request = serde_json::from_slice(bytes)?;
    let problems = request.problems.into_iter().map(Problem::from).collect();
    Ok((request.jitter, problems, request.place))
}

/// One response line, newline included, to be written in one piece.
pub(super) fn encode_record(record: &Record) -> Vec<u8> {
    let mut line = serde_json::to_vec(record).expect("a record serializes");
    line.push(b'\n');
    line
}

/// The records of a response file, up to the first that is missing or cut short.
pub(super) fn decode_response(bytes: &[u8]) -> Vec<Record> {
    serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Record>()
        .map_while(Result::ok)
        .collect()
}

impl From<&Problem> for WireProblem {
    fn from(p: &Problem) -> Self {
        WireProblem {
            label: p.label.clone(),
            buffers: p
                .buffers
                .iter()
                .map(|b| match &b.init {
                    Init::Data(d) => WireInit::Data(Bytes(d.clone())),
                    Init::Poison(n) => WireInit::Poison(*n),
                    Init::Zero(n) => WireInit::Zero(*n),
                })
                .collect(),
            launches: p
                .launches
                .iter()
                .map(|s| WireLaunch {
                    kernel: s.kernel.clone(),
                    grid: [s.grid.0, s.grid.1, s.grid.2],
                    block: [s.block.0, s.block.1, s.block.2],
                    args: s
                        .args
                        .iter()
                        .map(|a| match *a {
                            Arg::Buf(i) => WireArg::Buf(i),
                            Arg::Int(v) => WireArg::Int(v),
                            Arg::Scalar(b) => WireArg::Scalar(match b {
                                Bits::B8(v) => vec![v],
                                Bits::B16(v) => v.to_le_bytes().to_vec(),
                                Bits::B32(v) => v.to_le_bytes().to_vec(),
                                Bits::B64(v) => v.to_le_bytes().to_vec(),
                            }),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

impl From<WireProblem> for Problem {
    fn from(p: WireProblem) -> Self {
        Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: p.label,
            buffers: p
                .buffers
                .into_iter()
                .map(|init| Buffer {
                    compare: Default::default(),
                    may_stay_unwritten: false,
                    name: "buffer".into(),
                    elem: Elem::U8,
                    init: match init {
                        WireInit::Data(d) => Init::Data(d.0),
                        WireInit::Poison(n) => Init::Poison(n),
                        WireInit::Zero(n) => Init::Zero(n),
                    },
                    expected: None,
                    judge_fills: false,
                })
                .collect(),
            launches: p
                .launches
                .into_iter()
                .map(|s| LaunchStep {
                    kernel: s.kernel,
                    grid: Dim3(s.grid[0], s.grid[1], s.grid[2]),
                    block: Dim3(s.block[0], s.block[1], s.block[2]),
                    args: s
                        .args
                        .into_iter()
                        .map(|a| match a {
                            WireArg::Buf(i) => Arg::Buf(i),
                            WireArg::Int(v) => Arg::Int(v),
                            WireArg::Scalar(b) => Arg::Scalar(match b.len() {
                                1 => Bits::B8(b[0]),
                                2 => Bits::B16(u16::from_le_bytes([b[0], b[1]])),
                                4 => Bits::B32(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                                _ => Bits::B64(u64::from_le_bytes(
                                    b.get(..8).and_then(|x| x.try_into().ok()).unwrap_or([0; 8]),
                                )),
                            }),
                        })
                        .collect(),
                    shared: 0,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::source::exercises::{self, SizeChoice};

    fn matmul_problem() -> Problem {
        let entry = crate::source::catalog::Entry {
            name: "k".into(),
            params: [("tile".to_string(), 16)].into(),
        };
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(3);
        exercises::by_name("matmul")
            .unwrap()
            .problem(&entry, SizeChoice::Fixed(20), &mut rng)
    }

    /// The bytes of `b` in the hex the wire uses, to look for them in an encoded request.
    fn hex(b: &[u8]) -> String {
        let json = serde_json::to_string(&Bytes(b.to_vec())).unwrap();
        json.trim_matches('"').to_string()
    }

    #[test]
    fn requests_round_trip_without_expected_results() {
        let p = matmul_problem();
        let place = Place {
            first: 3,
            base: Some("the item's first".into()),
        };
        let bytes = encode_request(std::slice::from_ref(&p), true, &place);
        let expected = p.buffers[2].expected.clone().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            !text.contains(&hex(&expected)),
            "expected results must not be in the request"
        );
        let (jitter, back, at) = decode_request(&bytes).unwrap();
        assert!(jitter);
        assert_eq!(at, place);
        assert_eq!(back.len(), 1);
        let q = &back[0];
        assert_eq!(q.label, p.label);
        assert_eq!(q.buffers.len(), p.buffers.len());
        for (a, b) in q.buffers.iter().zip(&p.buffers) {
            assert!(
                a.expected.is_none(),
                "no expected contents on the worker's side"
            );
            match (&a.init, &b.init) {
                (Init::Data(x), Init::Data(y)) => assert_eq!(x, y),
                (Init::Poison(x), Init::Poison(y)) | (Init::Zero(x), Init::Zero(y)) => {
                    assert_eq!(x, y)
                }
                (x, y) => panic!("{x:?} came back as {y:?}"),
            }
        }
        assert_eq!(q.launches.len(), p.launches.len());
        for (a, b) in q.launches.iter().zip(&p.launches) {
            assert_eq!((&a.kernel, a.grid, a.block), (&b.kernel, b.grid, b.block));
            assert_eq!(format!("{:?}", a.args), format!("{:?}", b.args));
        }
    }

    #[test]
    fn responses_round_trip_line_by_line() {
        let records = vec![
            Record::Ran(vec![Bytes(vec![0, 1, 0x7f, 0x80, 0xff]), Bytes(vec![])]),
            Record::Fault("CUDA error 719: unspecified launch failure".into()),
        ];
        let file: Vec<u8> = records.iter().flat_map(encode_record).collect();
        assert_eq!(
            file.iter().filter(|&&b| b == b'\n').count(),
            2,
            "one line each"
        );
        assert_eq!(decode_response(&file), records);
    }

    #[test]
    fn a_cut_short_record_is_not_read() {
        let whole = encode_record(&Record::Ran(vec![Bytes(vec![1, 2, 3])]));
        let mut file = whole.clone();
        file.extend_from_slice(&whole[..whole.len() / 2]);
        assert_eq!(decode_response(&file).len(), 1);
        assert!(decode_response(b"").is_empty());
    }

    #[test]
    fn bytes_that_are_not_hex_are_refused() {
        for bad in [r#""abc""#, r#""zz""#, r#""AB""#, "[1,2]"] {
            assert!(serde_json::from_str::<Bytes>(bad).is_err(), "{bad}");
        }
    }
}
