//! A save file's head to its `meta`: the file streamed (decompressed as it is read), its
//! text parsed up to the end of its first member, and only as much read as that takes.

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;
use std::time::SystemTime;

use crate::compress::{self, Codec};
use crate::error::{Error, Result};
use crate::fsio;
use crate::options::Options;
use crate::save::{head_meta, meta_of_text, Meta};
use crate::text::reader::Reader;
use crate::text::Tree;
use crate::value::Value;

/// How much text a head read takes first; more is read, doubling, while `meta` goes on.
pub const FIRST_READ: usize = crate::compress::HEAD_BLOCK;

/// What the head of a save file says: its `meta`, and what reading it cost.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Head {
    /// The save's `meta`, checked as a whole load checks it.
    pub meta: Meta,
    /// How the file is stored.
    pub codec: Codec,
    /// The bytes read from the file (compressed bytes, for a compressed save).
    pub bytes_read: u64,
    /// The bytes of text read (decompressed, for a compressed save).
    pub text_read: u64,
    /// Whether the whole text was read: the save's first member is not `meta` (a save
    /// written before format revision 3, with `data` first).
    pub whole: bool,
    /// The file's size, in bytes as stored.
    pub size: u64,
    /// The file's modification time, where the system gives one.
    pub modified: Option<SystemTime>,
}

impl Head {
    /// The game the save names (`meta.game`), when that is a string.
    pub fn game(&self) -> Option<&str> {
        self.meta.extra.get("game").and_then(Value::as_str)
    }

    /// The mods the save records (`meta.mods`), each with its data version when the entry
    /// has one, by name. Empty when `meta.mods` is missing or not an object.
    pub fn mods(&self) -> Vec<(&str, Option<u64>)> {
        let Some(Value::Object(entries)) = self.meta.extra.get("mods") else {
            return Vec::new();
        };
        entries
            .iter()
            .map(|(name, entry)| (name, entry.get("version").and_then(Value::as_u64)))
            .collect()
    }
}

/// Reads the `meta` of the save in the file at `path` from the head of the file: for a
/// load menu or a listing, which want each save's version without reading its data.
///
/// The file must be a regular file (a FIFO or a device is refused, never waited on). Its
/// bytes are streamed, a compressed save decompressed only as far as it is read: up to
/// [`FIRST_READ`] bytes of text first, more while `meta` goes on. A save in revision 3's
/// canonical order has `meta` first, so its head is all that is read. A save whose first
/// member is not `meta` (one written before revision 3, with `data` first) is read whole,
/// as [`Meta::from_slice`] reads it, and [`Head::whole`] says so.
///
/// What follows `meta` is not read (but for the `,` or `}` after it): a save whose head
/// reads may still fail to load. Errors name the file, and the line and column where the
/// text is wrong: a damaged head (a syntax error, `meta` that is not a save's), damaged
/// compressed data ([`ErrorKind::Compressed`](crate::ErrorKind::Compressed)), JSON that
/// is not a save ([`ErrorKind::NotASave`](crate::ErrorKind::NotASave)).
///
/// ```
/// use savechain::compress::{self, Codec, Compression};
/// use savechain::{head, Value};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("slot1.json.zst");
/// // A save of 1.6 MB of text, `meta` first.
/// let data = savechain::text::to_string(&Value::Array(vec![Value::from("a long voyage"); 100_000]))?;
/// let text = format!("{{\"meta\": {{\"version\": 7, \"game\": \"Starlane\"}}, \"data\": {data}}}");
/// std::fs::write(&path, compress::compress(text.as_bytes(), Compression::new(Codec::Zstd)))?;
///
/// let head = head::read(&path)?;
/// assert_eq!((head.meta.version, head.game(), head.codec), (7, Some("Starlane"), Codec::Zstd));
/// assert!(!head.whole);
/// assert!(head.text_read <= head::FIRST_READ as u64, "only the head of {} bytes of text", text.len());
///
/// // A damaged head is an error naming the file, line and column.
/// std::fs::write(&path, "{\"meta\": {\"version\": 7,}, \"data\": 1}")?;
/// let err = head::read(&path).unwrap_err();
/// assert_eq!(err.file(), Some(path.as_path()));
/// assert_eq!((err.line(), err.column()), (Some(1), Some(24)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read(path: impl AsRef<Path>) -> Result<Head> {
    read_with(path, &Options::default())
}

/// [`read`], with the text of a compressed save limited to [`Options::max_text`].
pub fn read_with(path: impl AsRef<Path>, options: &Options) -> Result<Head> {
    let path = path.as_ref();
    read_file(path, options.max_text).map_err(|e| e.with_file(path))
}

fn read_file(path: &Path, limit: u64) -> Result<Head> {
    let cannot = |e| Error::io(e, "cannot read the file");
    let file = fsio::open_regular(path).map_err(cannot)?;
    let metadata = file.metadata().map_err(cannot)?;
    let from_file = Rc::new(Cell::new(0));
    let counted = Counted {
        inner: file,
        count: Rc::clone(&from_file),
    };
    // Small buffers: a decoder takes what it needs, and a plain head is read as asked.
    let mut buffered = BufReader::with_capacity(crate::compress::HEAD_BLOCK, counted);
    let codec = Codec::of(buffered.fill_buf().map_err(cannot)?);
    let decoded = Rc::new(Cell::new(0));
    let consumed = Consumed {
        inner: buffered,
        count: Rc::clone(&decoded),
    };
    // Plain text has no limit, as for every reader of saves: the limit stops a bomb.
    let limit = if codec == Codec::Plain {
        u64::MAX
    } else {
        limit
    };
    let (_, mut stream) = compress::reader(consumed, limit).map_err(cannot)?;
    let failed = |e: io::Error| match codec {
        Codec::Plain => Error::io(e, "cannot read the file"),
        _ => compress::describe(codec, &e, Some(decoded.get())),
    };
    let mut text = Vec::new();
    let mut want = FIRST_READ;
    let (meta, whole) = loop {
        let ended = fill(&mut stream, &mut text, want).map_err(failed)?;
        match parse(&text, ended)? {
            Parsed::Meta(meta) => break (meta, false),
            Parsed::More => want = text.len().saturating_mul(2),
            Parsed::NotFirst => {
                stream.read_to_end(&mut text).map_err(failed)?;
                break (meta_of_text(&text)?, true);
            }
        }
    };
    Ok(Head {
        meta,
        codec,
        bytes_read: from_file.get(),
        text_read: text.len() as u64,
        whole,
        size: metadata.len(),
        modified: metadata.modified().ok(),
    })
}

/// Reads from `stream` into `text` until it holds `want` bytes; whether the text ended.
fn fill(stream: &mut dyn Read, text: &mut Vec<u8>, want: usize) -> io::Result<bool> {
    let more = want.saturating_sub(text.len()) as u64;
    let got = stream.take(more).read_to_end(text)? as u64;
    Ok(got < more)
}

/// How far before the end of the text read a syntax error must be to be final: more than
/// the longest token a cut can leave unfinished and misread (`false` cut to `fals`).
const SYNTAX_MARGIN: usize = 64;

/// What the text read so far says.
enum Parsed {
    /// The save's `meta`, its first member.
    Meta(Meta),
    /// `meta` is not complete yet.
    More,
    /// The first member is not `meta`, or the text is no object: the whole text decides.
    NotFirst,
}

/// Reads `bytes`, the start of a save's text (all of it when `ended`), up to the end of
/// its first member when that is `meta`.
fn parse(bytes: &[u8], ended: bool) -> Result<Parsed> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // The text up to its first byte that is not UTF-8, or a character cut by the read.
    let (text, bad_byte) = match std::str::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(e) => {
            let valid = std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("checked");
            (valid, e.error_len().is_some() || ended)
        }
    };
    let cut = text.len() < bytes.len();
    let mut reader = Reader::new(text, Tree);
    match first_member(&mut reader) {
        Ok(Some((root, at, meta, members))) => {
            head_meta(text, root, at, meta, members).map(Parsed::Meta)
        }
        Ok(None) => Ok(Parsed::NotFirst),
        Err(failure) => {
            if bad_byte {
                // The text is not UTF-8 there: say so, as a whole read would.
                return crate::text::reader::utf8(bytes).map(|_| Parsed::More);
            }
            // The end of what was read may be what failed, whatever the failure says (an
            // array that looks like a tag is told from its escape by the bracket after it):
            // only the whole text's failure is the save's. But a syntax error well before
            // the end is the save's whatever follows (a file of junk is not read whole).
            match (ended && !cut) || failure.is_syntax_before(text.len(), SYNTAX_MARGIN) {
                true => Err(reader.error(failure)),
                false => Ok(Parsed::More),
            }
        }
    }
}

/// The first member of the object the text holds, when it is `meta`: where the object
/// starts, where `meta`'s value starts, the value, and where its members start. `None`
/// when the first member is another or the text is no object.
#[allow(clippy::type_complexity)]
fn first_member(
    reader: &mut Reader<'_, Tree>,
) -> crate::text::reader::Parsed<Option<(usize, usize, Value, Vec<(String, usize)>)>> {
    reader.skip_whitespace();
    let root = reader.pos();
    match reader.peek() {
        Some(b'{') => reader.seek(root + 1),
        // Some other JSON value: a whole read says what it is.
        Some(b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => return Ok(None),
        None => {
            return reader.syntax("a value (object, array, string, number, true, false or null)")
        }
        Some(_) => {
            return reader.syntax("a value (object, array, string, number, true, false or null)")
        }
    }
    reader.skip_whitespace();
    if reader.peek() == Some(b'}') {
        return Ok(None);
    }
    let (_, key) = reader.member_key(false)?;
    if key != "meta" {
        return Ok(None);
    }
    reader.skip_whitespace();
    let at = reader.pos();
    let inside =
        |f: Box<crate::text::reader::Failure>| f.inside(crate::path::Segment::Key("meta".into()));
    let (meta, members) = match reader.peek() {
        Some(b'{') => reader
            .object_with(|reader, _| reader.value())
            .map_err(inside)?,
        _ => (reader.value().map_err(inside)?, Vec::new()),
    };
    // What a whole read finds next: the text goes on with another member or ends the
    // envelope.
    reader.skip_whitespace();
    if !matches!(reader.peek(), Some(b',' | b'}')) {
        return reader.syntax("',' or '}' after the member \"meta\"");
    }
    Ok(Some((root, at, meta, members)))
}

/// A reader that counts the bytes it gives: what was read from the file.
struct Counted<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// A buffered reader that counts the bytes taken from it: where a decoder stands in the
/// compressed bytes, for its errors.
struct Consumed<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: BufRead> Read for Consumed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Consumed<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
        self.count.set(self.count.get() + n as u64);
    }
}
