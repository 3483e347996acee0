//! A child's output kept in bounded memory (the collecting side of [`super`]): its first
//! [`HEAD`] and last [`TAIL`] bytes, its length, and a digest of all of it, so a program that
//! prints 200 MB costs racegate about 2 MiB, and two outputs that differ only in the part not
//! kept still differ. A caller that needs the whole stream (a checker given the output, a golden
//! file written from it) asks for it up front: past the bound it is spilled to a temporary file,
//! never held in memory.

use std::hash::{BuildHasher, Hasher, RandomState};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::OnceLock;

/// The first bytes of a stream kept in memory.
pub const HEAD: usize = 1 << 20;
/// The last bytes of a stream kept in memory.
pub const TAIL: usize = 1 << 20;

/// A digest of a byte stream, the same however the bytes were split: SipHash with keys drawn
/// once per process, so a program cannot aim at a collision.
#[derive(Clone, Debug)]
pub struct Digest(std::hash::DefaultHasher);

impl Default for Digest {
    fn default() -> Self {
        static KEYS: OnceLock<RandomState> = OnceLock::new();
        Digest(KEYS.get_or_init(RandomState::new).build_hasher())
    }
}

impl Digest {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    pub fn value(&self) -> u64 {
        self.0.finish()
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> u64 {
        let mut d = Digest::default();
        d.update(bytes);
        d.value()
    }
}

/// Where the whole stream goes once it is over the memory bound.
#[derive(Debug)]
enum Spill {
    /// Not needed by the caller.
    Off,
    /// Needed, not started: everything so far is in memory.
    Wanted,
    Writing(std::io::BufWriter<tempfile::NamedTempFile>),
    Done(tempfile::NamedTempFile),
    Failed(String),
}

/// A stream collected in bounded memory. Feed it with [`Output::push`] (or
/// [`Output::push_line`]), then [`Output::finish`] it.
#[derive(Debug)]
pub struct Output {
    head: Vec<u8>,
    /// The bytes after the head, trimmed to the last `limits.1` (it may hold twice that while
    /// the stream is running, so trimming stays cheap).
    tail: Vec<u8>,
    total: u64,
    digest: Digest,
    limits: (usize, usize),
    spill: Spill,
}

impl Default for Output {
    fn default() -> Self {
        Output::with_limits(HEAD, TAIL, false)
    }
}

impl Output {
    /// Keeps [`HEAD`] and [`TAIL`] bytes; the middle of a longer stream is dropped.
    pub fn bounded() -> Output {
        Output::default()
    }

    /// Keeps [`HEAD`] and [`TAIL`] bytes in memory and, when the stream is longer, all of it in
    /// a temporary file ([`Output::spill_path`]).
    pub fn spilling() -> Output {
        Output::with_limits(HEAD, TAIL, true)
    }

    /// Keeps `head` and `tail` bytes in memory, the whole stream on disk past them if `spill`.
    pub fn with_limits(head: usize, tail: usize, spill: bool) -> Output {
        Output {
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
            digest: Digest::default(),
            limits: (head, tail),
            spill: if spill { Spill::Wanted } else { Spill::Off },
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.digest.update(bytes);
        let room = self.limits.0.saturating_sub(self.head.len());
        let n = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..n]);
        bytes = &bytes[n..];
        if bytes.is_empty() {
            return;
        }
        if let Spill::Writing(w) = &mut self.spill {
            if let Err(e) = w.write_all(bytes) {
                self.spill = Spill::Failed(e.to_string());
            }
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * self.limits.1.max(1 << 16) {
            // Bytes are about to be dropped: a caller that needs them gets them on disk first.
            if matches!(self.spill, Spill::Wanted) {
                self.start_spill();
            }
            let excess = self.tail.len() - self.limits.1;
            self.tail.drain(..excess);
        }
    }

    /// `line` and a newline.
    pub fn push_line(&mut self, line: &[u8]) {
        self.push(line);
        self.push(b"\n");
    }

    fn start_spill(&mut self) {
        let started = tempfile::Builder::new()
            .prefix("racegate-output-")
            .tempfile()
            .and_then(|f| {
                let mut w = std::io::BufWriter::new(f);
                w.write_all(&self.head)?;
                w.write_all(&self.tail)?;
                Ok(w)
            });
        self.spill = match started {
            Ok(w) => Spill::Writing(w),
            Err(e) => Spill::Failed(e.to_string()),
        };
    }

    /// Ends the stream: the tail is trimmed to its bound and the spilled file (if any) flushed.
    pub fn finish(&mut self) {
        if self.tail.len() > self.limits.1 {
            if matches!(self.spill, Spill::Wanted) {
                self.start_spill();
            }
            let excess = self.tail.len() - self.limits.1;
            self.tail.drain(..excess);
        }
        self.tail.shrink_to_fit();
        self.spill = match std::mem::replace(&mut self.spill, Spill::Off) {
            Spill::Writing(w) => match w.into_inner() {
                Ok(f) => Spill::Done(f),
                Err(e) => Spill::Failed(e.error().to_string()),
            },
            other => other,
        };
    }

    /// Bytes in the whole stream.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes of the stream kept neither in the head nor in the tail.
    pub fn dropped(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// Whether head and tail hold the whole stream.
    pub fn is_complete(&self) -> bool {
        self.dropped() == 0
    }

    pub fn head(&self) -> &[u8] {
        &self.head
    }

    pub fn tail(&self) -> &[u8] {
        &self.tail
    }

    /// The digest of the whole stream ([`Digest`]).
    pub fn digest(&self) -> u64 {
        self.digest.value()
    }

    /// The whole stream when it is kept, else the head, a line saying how much is not kept, and
    /// the tail.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = self.head.clone();
        if !self.is_complete() {
            if !out.is_empty() && !out.ends_with(b"\n") {
                out.push(b'\n');
            }
            out.extend_from_slice(
                format!("... {} bytes not kept ...\n", self.dropped()).as_bytes(),
            );
        }
        out.extend_from_slice(&self.tail);
        out
    }

    /// [`Output::bytes`] as text, bytes that are not UTF-8 replaced by U+FFFD.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }

    /// The file that holds the whole stream, for an incomplete stream that was collected with
    /// [`Output::spilling`] and finished; removed when the `Output` is dropped.
    pub fn spill_path(&self) -> Option<&Path> {
        match &self.spill {
            Spill::Done(f) => Some(f.path()),
            _ => None,
        }
    }

    /// Gives up the spilled file (it is removed): for a caller done with the whole stream.
    pub fn discard_spill(&mut self) {
        self.spill = Spill::Off;
    }

    /// Why the whole stream is not available where it was asked for.
    pub fn spill_error(&self) -> Option<&str> {
        match &self.spill {
            Spill::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// The whole stream from its start: from memory when it is all kept, else from the spilled
    /// file; `None` when it is neither.
    pub fn whole(&self) -> Option<Box<dyn Read + '_>> {
        if self.is_complete() {
            return Some(Box::new(self.head.as_slice().chain(self.tail.as_slice())));
        }
        let Spill::Done(f) = &self.spill else {
            return None;
        };
        Some(Box::new(std::io::BufReader::new(f.reopen().ok()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(lines: u32) -> Vec<u8> {
        (0..lines)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect()
    }

    #[test]
    fn head_and_tail_are_kept_and_the_middle_is_counted_and_digested() {
        let all = stream(1000);
        let mut o = Output::with_limits(100, 50, false);
        for piece in all.chunks(7) {
            o.push(piece);
        }
        o.finish();
        assert_eq!((o.head(), o.tail()), (&all[..100], &all[all.len() - 50..]));
        assert_eq!(o.total(), all.len() as u64);
        assert_eq!(o.dropped(), all.len() as u64 - 150);
        assert!(!o.is_complete() && o.spill_path().is_none() && o.whole().is_none());
        let text = o.text();
        assert!(text.contains(&format!("\n... {} bytes not kept ...\n", o.dropped())));
        // The digest is of every byte, however the stream was split.
        assert_eq!(o.digest(), Digest::of(&all));
        let mut other = all.clone();
        other[500] = b'X';
        assert_ne!(o.digest(), Digest::of(&other));
        // A short stream is all kept.
        let mut short = Output::with_limits(100, 50, false);
        short.push_line(b"one");
        short.finish();
        assert!(short.is_complete());
        assert_eq!(short.bytes(), b"one\n");
    }

    #[test]
    fn a_stream_past_the_bound_is_spilled_whole_when_asked() {
        // Long enough that the spill starts while the stream runs, not at its end.
        let all = stream(40_000);
        let mut o = Output::with_limits(100, 50, true);
        for piece in all.chunks(13) {
            o.push(piece);
        }
        o.finish();
        let path = o.spill_path().expect("spilled").to_path_buf();
        let mut back = Vec::new();
        o.whole().unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back, all);
        assert!(o.tail().len() <= 50);
        o.discard_spill();
        assert!(!path.exists() && o.whole().is_none());
        // Kept whole in memory: no file at all.
        let mut fits = Output::with_limits(1 << 20, 1 << 20, true);
        fits.push(&all);
        fits.finish();
        assert!(fits.is_complete() && fits.spill_path().is_none());
    }
}
