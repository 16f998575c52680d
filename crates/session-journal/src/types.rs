//! Newtypes for the identities and quantities the format stores.

use std::fmt;
use std::sync::Arc;

use crate::format::FIRST_ENTRY_KIND;

/// A byte offset in a journal file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Offset(pub u64);

impl Offset {
    /// The offset as a plain integer.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A frame's sequence number: 0 for the header frame, then +1 per frame, no gaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Seq(pub u64);

impl Seq {
    /// The sequence number as a plain integer.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Milliseconds since the Unix epoch, as stamped into frames by the writer's [`Clock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct UnixMillis(pub u64);

/// A journal's 128-bit identity. Every frame check is keyed by it.
///
/// The journal does not generate ids (randomness is injected from the top): callers
/// pass one, typically a UUID's 16 bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JournalId(pub [u8; 16]);

impl JournalId {
    /// The id's raw bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Parses the hyphenated (UUID-style) or plain 32-digit hex form.
    pub fn parse(text: &str) -> Option<Self> {
        let digits: Vec<u8> = text.bytes().filter(|b| *b != b'-').collect();
        if digits.len() != 32 {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, pair) in digits.chunks_exact(2).enumerate() {
            let s = std::str::from_utf8(pair).ok()?;
            out[i] = u8::from_str_radix(s, 16).ok()?;
        }
        Some(Self(out))
    }
}

impl fmt::Display for JournalId {
    /// UUID-style lower-case hex: `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for JournalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JournalId({self})")
    }
}

/// The kind byte of an entry frame. Opaque to the journal.
///
/// Kinds `0x00..0x10` are reserved to the journal (0 is never valid, 1 is the header
/// frame, 2 the seal, [`FrameKind::SEAL`]); callers use `0x10..=0xff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameKind(u8);

impl FrameKind {
    /// The lowest kind of the caller range (`0x10`), for callers that need only one.
    /// The journal gives it no meaning; what a kind means is the caller's.
    pub const FIRST_CALLER: FrameKind = FrameKind(FIRST_ENTRY_KIND);

    /// The journal's own seal frame (`0x02`, written by a clean close). Never an entry:
    /// [`Reader::frames`](crate::Reader::frames) skips seals; only
    /// [`Frames::with_seals`](crate::Frames::with_seals) and the point reads of a frame
    /// at a seal's offset report one, with this kind. Callers cannot append it.
    pub const SEAL: FrameKind = FrameKind(crate::format::KIND_SEAL);

    /// Returns the kind if `byte` is in the caller range `0x10..=0xff`.
    pub const fn new(byte: u8) -> Option<Self> {
        if byte >= FIRST_ENTRY_KIND {
            Some(Self(byte))
        } else {
            None
        }
    }

    /// The kind byte.
    pub const fn get(self) -> u8 {
        self.0
    }

    /// Whether this is the journal's seal ([`FrameKind::SEAL`]), not an entry.
    pub const fn is_seal(self) -> bool {
        self.0 == crate::format::KIND_SEAL
    }
}

/// An optional 16-byte caller tag stored in each entry frame header (for example an
/// entry id's hash, so an index can be rebuilt without parsing payloads). Opaque to
/// the journal; all zeros when unused.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Tag(pub [u8; 16]);

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tag(")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// A frame's 8-byte body check (keyed BLAKE3 over header fields, payload and offset).
///
/// An index stores the body check of the last frame it covers and compares it in O(1)
/// to decide whether it still describes this journal.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BodyCheck(pub [u8; 8]);

impl fmt::Debug for BodyCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BodyCheck({self})")
    }
}

impl fmt::Display for BodyCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// How far an append travels before the call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Durability {
    /// Written and covered by a successful `fdatasync` before the call returns:
    /// survives power loss. The default.
    #[default]
    Durable,
    /// Handed to the operating system with `write`: survives a process crash
    /// (kill -9), not power loss, until the next [`Writer::sync`](crate::Writer::sync).
    Buffered,
}

/// The source of frame timestamps, injected so fixtures are byte-stable.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> UnixMillis + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self(Arc::new(|| {
            let ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0);
            UnixMillis(ms)
        }))
    }

    /// A clock that always reads `ms`.
    pub fn fixed(ms: u64) -> Self {
        Self(Arc::new(move || UnixMillis(ms)))
    }

    /// A clock backed by any function.
    pub fn from_fn(f: impl Fn() -> UnixMillis + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Reads the clock.
    pub fn now(&self) -> UnixMillis {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock")
    }
}
