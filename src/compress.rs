//! Compressed saves: zstd and gzip recognised by their first bytes, decompressed within a
//! size limit, and compressed so that the same text and level always give the same bytes.
//!
//! A compressed save holds the same canonical text as a plain one. Every reader of saves
//! (a load, the cache, an upgrade, the command line, the C ABI, the Lua module) takes
//! either, whatever the file's name: neither codec's magic bytes can start a JSON text.
//!
//! ```
//! use savechain::compress::{self, Codec, Compression};
//! use savechain::Save;
//!
//! let text = Save::new(3, savechain::Value::Int(7)).to_vec()?;
//! let packed = compress::compress(&text, Compression::new(Codec::Zstd));
//! assert_eq!(Codec::of(&packed), Codec::Zstd);
//! assert_eq!(compress::compress(&text, Compression::new(Codec::Zstd)), packed); // reproducible
//! assert_eq!(Save::from_slice(&packed)?.meta.version, 3);
//!
//! // A damaged file is an error, never part of a save.
//! let err = compress::decompress(&packed[..packed.len() - 3], compress::DEFAULT_LIMIT).unwrap_err();
//! assert_eq!(err.kind(), savechain::ErrorKind::Compressed);
//! # Ok::<(), savechain::Error>(())
//! ```

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, Read};
use std::str::FromStr;

use crate::error::{Error, ErrorKind, Result};

/// The most text a compressed save may decompress to unless the caller says otherwise
/// ([`Options::max_text`](crate::Options::max_text)): 1 GiB, twenty times the largest
/// saves games write, and a stop to a decompression bomb before it takes the machine's
/// memory.
pub const DEFAULT_LIMIT: u64 = 1 << 30;

/// How a save's bytes are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// The text itself.
    Plain,
    /// A zstd frame (magic bytes `28 B5 2F FD`).
    Zstd,
    /// A gzip member (magic bytes `1F 8B`).
    Gzip,
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
const GZIP_MAGIC: [u8; 2] = [0x1F, 0x8B];

impl Codec {
    /// The codec of `bytes`, by their first bytes (never by a file's name). Anything that
    /// is neither zstd nor gzip is `Plain`, to be read as text.
    pub fn of(bytes: &[u8]) -> Codec {
        if bytes.starts_with(&ZSTD_MAGIC) {
            Codec::Zstd
        } else if bytes.starts_with(&GZIP_MAGIC) {
            Codec::Gzip
        } else {
            Codec::Plain
        }
    }

    /// The name the command line and the C ABI use: `none`, `zstd` or `gzip`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Plain => "none",
            Codec::Zstd => "zstd",
            Codec::Gzip => "gzip",
        }
    }

    /// What a file of this codec's name ends with after `.json`: `""`, `".zst"` or `".gz"`.
    pub fn extension(self) -> &'static str {
        match self {
            Codec::Plain => "",
            Codec::Zstd => ".zst",
            Codec::Gzip => ".gz",
        }
    }

    /// The levels this codec takes, lowest to highest (`0..=0` for plain text).
    pub fn levels(self) -> std::ops::RangeInclusive<i32> {
        match self {
            Codec::Plain => 0..=0,
            // Negative zstd levels trade size for speed; 22 is its highest.
            Codec::Zstd => 1..=22,
            Codec::Gzip => 1..=9,
        }
    }

    fn default_level(self) -> i32 {
        match self {
            Codec::Plain => 0,
            // The `zstd` and `gzip` programs' own defaults.
            Codec::Zstd => 3,
            Codec::Gzip => 6,
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Codec {
    type Err = Error;

    /// `none` (or `plain`), `zstd` or `gzip`.
    fn from_str(s: &str) -> Result<Codec> {
        match s {
            "none" | "plain" => Ok(Codec::Plain),
            "zstd" => Ok(Codec::Zstd),
            "gzip" => Ok(Codec::Gzip),
            _ => Err(Error::new(
                ErrorKind::Usage,
                format!("unknown compression {s:?}: expected none, zstd or gzip"),
            )),
        }
    }
}

/// How to write a save: a codec and its level.
///
/// ```
/// use savechain::compress::{Codec, Compression};
///
/// assert_eq!(Compression::new(Codec::Zstd).level(), 3);
/// assert_eq!(Compression::with_level(Codec::Gzip, 9)?.level(), 9);
/// assert!(Compression::with_level(Codec::Gzip, 12).is_err());
/// # Ok::<(), savechain::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Compression {
    codec: Codec,
    level: i32,
}

impl Default for Compression {
    fn default() -> Compression {
        Compression::NONE
    }
}

impl Compression {
    /// Plain text.
    pub const NONE: Compression = Compression {
        codec: Codec::Plain,
        level: 0,
    };

    /// `codec` at its default level: zstd 3 and gzip 6, as their programs have them.
    pub fn new(codec: Codec) -> Compression {
        Compression {
            codec,
            level: codec.default_level(),
        }
    }

    /// `codec` at `level`, which must be one of [`Codec::levels`].
    pub fn with_level(codec: Codec, level: i32) -> Result<Compression> {
        let levels = codec.levels();
        if !levels.contains(&level) {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "{codec} has no level {level}: its levels are {} to {}",
                    levels.start(),
                    levels.end()
                ),
            ));
        }
        Ok(Compression { codec, level })
    }

    /// The codec.
    pub fn codec(self) -> Codec {
        self.codec
    }

    /// The level.
    pub fn level(self) -> i32 {
        self.level
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.codec {
            Codec::Plain => f.write_str("none"),
            codec => write!(f, "{codec} level {}", self.level),
        }
    }
}

/// `text` stored as `how` says. The same text and compression give the same bytes (for a
/// given build of the codec libraries): zstd frames record the text's size and a checksum
/// and are made on one thread; gzip records no name and a time of 0. The first
/// [`HEAD_BLOCK`] bytes of text end a block of their own, so the head decompresses alone.
pub fn compress(text: &[u8], how: Compression) -> Vec<u8> {
    match how.codec {
        Codec::Plain => text.to_vec(),
        Codec::Zstd => compress_zstd(text, how.level),
        Codec::Gzip => compress_gzip(text, how.level),
    }
}

/// How much of the text goes in the first block of a compressed save: the head, where
/// `meta` is, decompressed on its own by a reader of the head ([`crate::head`]) without
/// the 128 KiB block that follows.
pub const HEAD_BLOCK: usize = 4096;

fn compress_zstd(text: &[u8], level: i32) -> Vec<u8> {
    use zstd::zstd_safe::{self, zstd_sys::ZSTD_EndDirective, CParameter, InBuffer, OutBuffer};
    let (head, rest) = text.split_at(text.len().min(HEAD_BLOCK));
    let mut cctx = zstd_safe::CCtx::create();
    for parameter in [
        CParameter::CompressionLevel(level),
        CParameter::ChecksumFlag(true),
        CParameter::ContentSizeFlag(true),
    ] {
        cctx.set_parameter(parameter)
            .expect("zstd takes its own parameters");
    }
    cctx.set_pledged_src_size(Some(text.len() as u64))
        .expect("before the first byte");
    // One frame (a cut file is never a whole shorter one), its head ended by a flush, the
    // rest given at once with the end, which compresses as a one-shot call does.
    let mut out = Vec::with_capacity(zstd_safe::compress_bound(text.len()) + 64);
    let mut output = OutBuffer::around(&mut out);
    for (part, end) in [
        (head, ZSTD_EndDirective::ZSTD_e_flush),
        (rest, ZSTD_EndDirective::ZSTD_e_end),
    ] {
        let mut input = InBuffer::around(part);
        while cctx
            .compress_stream2(&mut output, &mut input, end)
            .expect("the output has room for the bound")
            != 0
        {}
    }
    out
}

fn compress_gzip(text: &[u8], level: i32) -> Vec<u8> {
    use std::io::Write;
    let (head, rest) = text.split_at(text.len().min(HEAD_BLOCK));
    let out = Vec::with_capacity(text.len() / 4 + 64);
    // OS 255 is "unknown": the bytes do not depend on the machine that wrote them.
    let mut encoder = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(out, flate2::Compression::new(level as u32));
    // A sync flush after the head ends its deflate block, as for zstd.
    encoder
        .write_all(head)
        .and_then(|()| encoder.flush())
        .and_then(|()| encoder.write_all(rest))
        .expect("writing into memory cannot fail");
    encoder.finish().expect("writing into memory cannot fail")
}

/// The text `bytes` hold: `bytes` themselves when they are plain, or what they decompress
/// to, which must be at most `limit` bytes.
///
/// A truncated or corrupt stream, a failed checksum or bytes after the end of the stream
/// are errors of kind [`ErrorKind::Compressed`] naming the codec and the compressed byte
/// where decoding stopped; so is text longer than `limit`. Nothing is returned of a stream
/// that does not decode whole.
pub fn decompress(bytes: &[u8], limit: u64) -> Result<Cow<'_, [u8]>> {
    let codec = Codec::of(bytes);
    if codec == Codec::Plain {
        return Ok(Cow::Borrowed(bytes));
    }
    if codec == Codec::Zstd {
        if let Some(text) = zstd_in_one_pass(bytes, limit) {
            return Ok(Cow::Owned(text));
        }
    }
    // The streaming decoders, which also say where a damaged stream broke.
    let mut input = Counted::new(bytes);
    let mut text = Vec::with_capacity(capacity_hint(bytes, codec, limit));
    let result = match codec {
        Codec::Zstd => zstd::stream::read::Decoder::with_buffer(&mut input)
            .and_then(|decoder| read_limited(decoder, limit, &mut text)),
        Codec::Gzip => read_limited(
            flate2::bufread::MultiGzDecoder::new(&mut input),
            limit,
            &mut text,
        ),
        Codec::Plain => unreachable!("returned above"),
    };
    match result {
        Ok(()) => Ok(Cow::Owned(text)),
        Err(e) => Err(decode_error(codec, &e, &input, limit)),
    }
}

/// zstd frames that record their sizes (savechain's do) decode in one call into one
/// allocation of exactly their text's size, a third faster than streaming. `None` when the size
/// is not recorded, is past the limit, is more than any real text could be for so few
/// bytes (a lying header must not make a tiny file allocate the limit), or the frames do
/// not decode: the streaming decoder then decides, and says what broke.
fn zstd_in_one_pass(bytes: &[u8], limit: u64) -> Option<Vec<u8>> {
    // The sizes the frames record, summed (savechain writes two: the head and the rest).
    let mut size = 0u64;
    let mut frames = bytes;
    while !frames.is_empty() {
        let length = zstd::zstd_safe::find_frame_compressed_size(frames).ok()?;
        size = size.checked_add(
            zstd::zstd_safe::get_frame_content_size(frames)
                .ok()
                .flatten()?,
        )?;
        frames = frames.get(length..)?;
    }
    if size > limit || size > plausible_text(bytes.len()) {
        return None;
    }
    let mut text = Vec::with_capacity(usize::try_from(size).ok()?);
    match zstd::zstd_safe::decompress(&mut text, bytes) {
        Ok(n) if n as u64 == size => Some(text),
        _ => None,
    }
}

/// The most text `compressed` bytes are taken to hold before decoding shows more: real
/// saves compress 5 to 100 times, runs of one byte far more, and this only bounds what is
/// allocated up front.
fn plausible_text(compressed: usize) -> u64 {
    (compressed as u64).saturating_mul(1024).max(1 << 20)
}

/// A stream of the text `input` holds, plain or compressed, and its codec: for reading the
/// head of a save without decompressing the rest. Reads past `limit` bytes of text fail
/// with an error whose inner error is [`TooLong`]; damaged streams fail with the codec's
/// own error ([`describe`] turns either into a sentence).
pub fn reader<'r>(
    mut input: impl BufRead + 'r,
    limit: u64,
) -> io::Result<(Codec, Box<dyn Read + 'r>)> {
    // A first read may give fewer bytes than the magic (a pipe, a small buffer): gather
    // them, and hand the decoder those bytes again ahead of the rest.
    let mut magic = [0; ZSTD_MAGIC.len()];
    let mut have = 0;
    while have < magic.len() {
        let buffered = input.fill_buf()?;
        if buffered.is_empty() {
            break;
        }
        let n = buffered.len().min(magic.len() - have);
        magic[have..have + n].copy_from_slice(&buffered[..n]);
        input.consume(n);
        have += n;
    }
    let codec = Codec::of(&magic[..have]);
    let input = io::Cursor::new(magic).take(have as u64).chain(input);
    let stream: Box<dyn Read + 'r> = match codec {
        Codec::Plain => Box::new(input),
        Codec::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(input)?),
        Codec::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
    };
    Ok((codec, Box::new(Limited::new(stream, limit))))
}

/// The error a [`reader`] gives when the text goes past its limit.
#[derive(Debug)]
pub struct TooLong {
    /// The limit, in bytes of text.
    pub limit: u64,
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the text is longer than the limit of {} bytes",
            self.limit
        )
    }
}

impl std::error::Error for TooLong {}

/// An error of [`reader`] (or of a read through it) as an error of kind
/// [`ErrorKind::Compressed`] saying what went wrong with the `codec` stream; `read` is
/// how many compressed bytes the decoder had been given when it failed, when known (the
/// damage is at or before that byte).
pub fn describe(codec: Codec, e: &io::Error, read: Option<u64>) -> Error {
    let limit = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<TooLong>())
        .map(|too_long| too_long.limit);
    match limit {
        Some(limit) => too_long(codec, limit),
        None => {
            let at = read.map_or(String::new(), |n| {
                format!(" (found by compressed byte {n})")
            });
            Error::new(
                ErrorKind::Compressed,
                format!("the {codec} data is damaged{at}: {}", what_broke(e)),
            )
        }
    }
}

fn decode_error(codec: Codec, e: &io::Error, input: &Counted<'_>, limit: u64) -> Error {
    if e.get_ref().is_some_and(|inner| inner.is::<TooLong>()) {
        return too_long(codec, limit);
    }
    if let Some(after) = bytes_after_gzip(input.all) {
        return Error::new(
            ErrorKind::Compressed,
            format!(
                "the gzip data is damaged: {after} bytes follow its end (at compressed byte {}) \
                 that are no gzip member",
                input.all.len() - after
            ),
        );
    }
    describe(codec, e, Some(input.handed))
}

/// When `bytes` are gzip members that decode whole followed by bytes that are no member,
/// how many bytes follow: said as such rather than as the truncated member they read as.
fn bytes_after_gzip(bytes: &[u8]) -> Option<usize> {
    let mut rest = bytes;
    while Codec::of(rest) == Codec::Gzip {
        let mut member = flate2::bufread::GzDecoder::new(rest);
        io::copy(&mut member, &mut io::sink()).ok()?;
        rest = member.into_inner();
    }
    (rest.len() < bytes.len() && !rest.is_empty()).then_some(rest.len())
}

fn too_long(codec: Codec, limit: u64) -> Error {
    Error::new(
        ErrorKind::Compressed,
        format!(
            "the {codec} data decompresses to more than {limit} bytes, the limit \
             (a decompression bomb, or a save larger than this program accepts: save-upgrade \
             and fmt take --max-text BYTES, a program Options::max_text)"
        ),
    )
}

fn what_broke(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        return "it ends early (the file is truncated)".into();
    }
    let message = e.to_string();
    match message.as_str() {
        // zstd's words for a stream cut short.
        "incomplete frame" => "it ends early (the file is truncated)".into(),
        _ => message,
    }
}

/// The size of the text a stream says it holds, where it says so (zstd records it; gzip's
/// trailer holds it modulo 2^32), never more than `limit`: one allocation for the text.
fn capacity_hint(bytes: &[u8], codec: Codec, limit: u64) -> usize {
    let said = match codec {
        Codec::Zstd => zstd::zstd_safe::get_frame_content_size(bytes)
            .ok()
            .flatten(),
        Codec::Gzip => bytes
            .len()
            .checked_sub(4)
            .map(|at| u64::from(u32::from_le_bytes(bytes[at..].try_into().expect("4 bytes")))),
        Codec::Plain => None,
    };
    // A lying hint costs no more than a plausible text; a small one just grows.
    said.unwrap_or(bytes.len() as u64 * 4)
        .min(limit)
        .min(plausible_text(bytes.len())) as usize
}

fn read_limited(stream: impl Read, limit: u64, text: &mut Vec<u8>) -> io::Result<()> {
    Limited::new(stream, limit).read_to_end(text).map(drop)
}

/// A stream that fails, rather than end quietly, when it goes past its limit.
struct Limited<R> {
    inner: R,
    limit: u64,
    read: u64,
}

impl<R> Limited<R> {
    fn new(inner: R, limit: u64) -> Limited<R> {
        Limited {
            inner,
            limit,
            read: 0,
        }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // One byte past the limit is asked for, to tell "exactly the limit" from "more".
        let room = (self.limit - self.read).saturating_add(1);
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.read += n as u64;
        if self.read > self.limit {
            let limit = self.limit;
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                TooLong { limit },
            ));
        }
        Ok(n)
    }
}

/// A reader of a slice, handed to a decoder a chunk at a time, that counts what the
/// decoder has been given, to say where it failed.
struct Counted<'b> {
    all: &'b [u8],
    bytes: &'b [u8],
    consumed: u64,
    /// The end of the last chunk handed out: a decoder that fails has read no further.
    handed: u64,
}

/// What a decoder is given at a time: small enough to place a failure.
const CHUNK: usize = 16 * 1024;

impl<'b> Counted<'b> {
    fn new(bytes: &'b [u8]) -> Counted<'b> {
        Counted {
            all: bytes,
            bytes,
            consumed: 0,
            handed: 0,
        }
    }
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Counted<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let chunk = &self.bytes[..self.bytes.len().min(CHUNK)];
        self.handed = self.handed.max(self.consumed + chunk.len() as u64);
        Ok(chunk)
    }

    fn consume(&mut self, n: usize) {
        self.bytes = &self.bytes[n..];
        self.consumed += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text() -> Vec<u8> {
        let mut text = b"{\n  \"meta\": {\n    \"version\": 3\n  },\n  \"data\": [".to_vec();
        for i in 0..5000 {
            text.extend_from_slice(format!("{i}, ").as_bytes());
        }
        text.extend_from_slice(b"0]\n}\n");
        text
    }

    const CODECS: [Codec; 2] = [Codec::Zstd, Codec::Gzip];

    #[test]
    fn round_trips_and_is_reproducible() {
        let text = text();
        for codec in CODECS {
            for level in [
                *codec.levels().start(),
                codec.default_level(),
                *codec.levels().end(),
            ] {
                let how = Compression::with_level(codec, level).unwrap();
                let packed = compress(&text, how);
                assert_eq!(Codec::of(&packed), codec);
                assert!(packed.len() < text.len() / 2, "{how}: {}", packed.len());
                assert_eq!(compress(&text, how), packed, "{how}");
                assert_eq!(
                    decompress(&packed, DEFAULT_LIMIT).unwrap().as_ref(),
                    &text[..]
                );
            }
        }
        assert!(
            matches!(decompress(&text, 1).unwrap(), Cow::Borrowed(_)),
            "plain text is never limited"
        );
    }

    #[test]
    fn every_truncation_and_a_trailing_byte_are_refused() {
        let text = text();
        for codec in CODECS {
            let packed = compress(&text, Compression::new(codec));
            // Shorter than the magic bytes, a cut file is plain text (and not JSON).
            for cut in GZIP_MAGIC.len().max(if codec == Codec::Zstd {
                ZSTD_MAGIC.len()
            } else {
                0
            })..packed.len()
            {
                let err = decompress(&packed[..cut], DEFAULT_LIMIT)
                    .expect_err(&format!("{codec} cut at {cut}"));
                assert_eq!(err.kind(), ErrorKind::Compressed);
                assert!(
                    err.to_string()
                        .contains(&format!("the {codec} data is damaged")),
                    "{err}"
                );
            }
            let mut longer = packed.clone();
            longer.extend_from_slice(b"junk");
            let err = decompress(&longer, DEFAULT_LIMIT).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Compressed, "{codec}: {err}");
            if codec == Codec::Gzip {
                let says = format!(
                    "4 bytes follow its end (at compressed byte {})",
                    packed.len()
                );
                assert!(err.to_string().contains(&says), "{err}");
            }
        }
    }

    #[test]
    fn a_truncated_file_says_so() {
        let packed = compress(&text(), Compression::new(Codec::Zstd));
        let err = decompress(&packed[..packed.len() / 2], DEFAULT_LIMIT).unwrap_err();
        assert!(err.to_string().contains("ends early"), "{err}");
        assert!(
            err.to_string().contains("found by compressed byte"),
            "{err}"
        );
    }

    #[test]
    fn every_flipped_byte_is_refused_or_changes_nothing() {
        let text = text();
        for codec in CODECS {
            let packed = compress(&text, Compression::new(codec));
            for at in 0..packed.len() {
                let mut bad = packed.clone();
                bad[at] ^= 0x55;
                // A flip in a header field that decoding ignores (gzip's OS byte, say) still
                // reads the same text; every other flip is an error, never other text.
                match decompress(&bad, DEFAULT_LIMIT) {
                    Ok(read) => assert!(
                        read.as_ref() == &text[..] || Codec::of(&bad) == Codec::Plain,
                        "{codec} byte {at}"
                    ),
                    Err(e) => assert_eq!(e.kind(), ErrorKind::Compressed),
                }
            }
        }
    }

    #[test]
    fn a_bomb_stops_at_the_limit() {
        let zeros = vec![b' '; 50 << 20];
        for codec in CODECS {
            let bomb = compress(&zeros, Compression::new(codec));
            assert!(bomb.len() < 100_000, "{codec}: {}", bomb.len());
            let err = decompress(&bomb, 1 << 20).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Compressed);
            assert!(err.to_string().contains("more than 1048576 bytes"), "{err}");
            assert_eq!(
                decompress(&bomb, 50 << 20).unwrap().len(),
                50 << 20,
                "exactly the limit is read"
            );
        }
    }

    #[test]
    fn a_reader_decompresses_only_the_head() {
        // Several of zstd's 128 KiB blocks.
        let text: Vec<u8> = text().into_iter().cycle().take(1 << 20).collect();
        for codec in CODECS {
            let packed = compress(&text, Compression::new(codec));
            let mut input = Counted::new(&packed);
            let (found, mut stream) =
                reader(io::BufReader::with_capacity(256, &mut input), DEFAULT_LIMIT).unwrap();
            assert_eq!(found, codec);
            let mut head = [0; 40];
            stream.read_exact(&mut head).unwrap();
            assert_eq!(&head[..], &text[..40]);
            drop(stream);
            assert!(
                input.consumed < packed.len() as u64,
                "{codec} read {} of {}",
                input.consumed,
                packed.len()
            );
        }
        let (found, mut stream) = reader(&b"{\"meta\": 1}"[..], 4).unwrap();
        assert_eq!(found, Codec::Plain);
        let e = stream.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(
            describe(Codec::Plain, &e, None).to_string(),
            too_long(Codec::Plain, 4).to_string()
        );
    }

    #[test]
    fn a_reader_fed_a_byte_at_a_time_still_knows_the_codec() {
        let text = text();
        for codec in CODECS {
            let packed = compress(&text, Compression::new(codec));
            for buffer in 1..6 {
                let input = io::BufReader::with_capacity(buffer, &packed[..]);
                let (found, mut stream) = reader(input, DEFAULT_LIMIT).unwrap();
                assert_eq!(found, codec, "buffer of {buffer}");
                let mut read = Vec::new();
                stream.read_to_end(&mut read).unwrap();
                assert_eq!(read, text, "{codec}, buffer of {buffer}");
            }
        }
        let (found, mut stream) = reader(io::BufReader::with_capacity(1, &b"{}"[..]), 10).unwrap();
        assert_eq!(found, Codec::Plain);
        let mut read = Vec::new();
        stream.read_to_end(&mut read).unwrap();
        assert_eq!(read, b"{}");
    }

    #[test]
    fn the_head_decompresses_from_the_first_bytes_of_the_file() {
        let text: Vec<u8> = text().into_iter().cycle().take(1 << 20).collect();
        for codec in CODECS {
            let packed = compress(&text, Compression::new(codec));
            let mut input = Counted::new(&packed);
            let (_, mut stream) =
                reader(io::BufReader::with_capacity(64, &mut input), DEFAULT_LIMIT).unwrap();
            let mut head = vec![0; HEAD_BLOCK];
            stream.read_exact(&mut head).unwrap();
            assert_eq!(head, text[..HEAD_BLOCK]);
            drop(stream);
            assert!(
                input.consumed < 3000,
                "{codec} read {} of {}",
                input.consumed,
                packed.len()
            );
        }
    }

    #[test]
    fn a_tiny_file_claiming_a_huge_text_allocates_little() {
        let mut bomb = compress(b"{}", Compression::new(Codec::Gzip));
        let at = bomb.len() - 4;
        bomb[at..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(capacity_hint(&bomb, Codec::Gzip, DEFAULT_LIMIT) <= 1 << 20);
        assert_eq!(
            decompress(&bomb, DEFAULT_LIMIT).unwrap_err().kind(),
            ErrorKind::Compressed
        );
    }

    #[test]
    fn names_parse_and_levels_are_checked() {
        assert_eq!("zstd".parse::<Codec>().unwrap(), Codec::Zstd);
        assert_eq!("none".parse::<Codec>().unwrap(), Codec::Plain);
        assert!("lz4"
            .parse::<Codec>()
            .unwrap_err()
            .to_string()
            .contains("expected none, zstd or gzip"));
        assert!(Compression::with_level(Codec::Zstd, 23).is_err());
        assert_eq!(Compression::new(Codec::Gzip).to_string(), "gzip level 6");
    }
}
