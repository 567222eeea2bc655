//! The save envelope: `{"meta": {"version": N, "writer": "x.y.z", ...}, "data": ...}`, loaded
//! from and written to bytes, strings, readers and files.

use std::io::{Read, Write};
use std::path::{Path as FsPath, PathBuf};

use crate::compress::{self, Codec, Compression};
use crate::error::{Error, ErrorKind, Location, Result};
use crate::fsio;
use crate::path::{Path, Segment};
use crate::text::build::Build;
use crate::text::reader::{utf8, Parsed, Reader};
use crate::text::write::{stream_members, write_members, Sink};
use crate::text::{Document, Style};
use crate::text::{Sparse, Tree};
use crate::value::{Map, Value};

/// The `meta` section of a save.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Meta {
    /// The save's schema version: which layout `data` has.
    pub version: u64,
    /// The version of the program that wrote the save, when it says.
    pub writer: Option<semver::Version>,
    /// Every other `meta` member, kept as it is. Members named `version` or `writer` here
    /// are ignored when writing: the two fields above are what is written.
    pub extra: Map,
}

impl Meta {
    /// The `meta` object as a save holds it.
    pub fn to_value(&self) -> Value {
        let mut meta = self.extra.clone();
        meta.insert("version", Value::from(self.version));
        match &self.writer {
            Some(w) => meta.insert("writer", Value::String(w.to_string())),
            None => meta.remove("writer"),
        };
        Value::Object(meta)
    }

    /// Reads the `meta` of the save whose text is `bytes`, building nothing of its data:
    /// for a program that wants a save's version (to list saves, or to tell whether one
    /// needs an upgrade) at the cost of a syntax check of the text, without the memory of
    /// loading it.
    ///
    /// The text must be strict JSON with the format's tags throughout, and a save's
    /// envelope, or the error is the one [`Save::from_slice`] gives. What only a loaded
    /// document shows, such as a duplicate key inside `data`, is not checked: a save this
    /// reads may still fail to load.
    ///
    /// ```
    /// use savechain::Meta;
    ///
    /// let meta = Meta::from_slice(br#"{"data": {"hp": 3}, "meta": {"version": 4, "writer": "2.1.0", "slot": 2}}"#)?;
    /// assert_eq!(meta.version, 4);
    /// assert_eq!(meta.writer, Some(savechain::semver::Version::new(2, 1, 0)));
    /// assert_eq!(meta.extra["slot"].as_u64(), Some(2));
    ///
    /// let err = Meta::from_slice(b"{\"meta\": {\"version\": 4}, \"data\": [1,]}").unwrap_err();
    /// assert_eq!((err.line(), err.column()), (Some(1), Some(37)));
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn from_slice(bytes: &[u8]) -> Result<Meta> {
        let text = compress::decompress(bytes, compress::DEFAULT_LIMIT)?;
        meta_of_text(&text)
    }
}

/// A save: its metadata and the game's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Save {
    /// The save's metadata.
    pub meta: Meta,
    /// The game's data.
    pub data: Value,
}

impl Save {
    /// A save of `data` at schema version `version`, with no writer recorded (set one with
    /// [`Save::with_writer`]).
    pub fn new(version: u64, data: Value) -> Save {
        Save {
            meta: Meta {
                version,
                writer: None,
                extra: Map::new(),
            },
            data,
        }
    }

    /// Records the version of the program writing the save.
    pub fn with_writer(mut self, writer: semver::Version) -> Save {
        self.meta.writer = Some(writer);
        self
    }

    /// Loads a save from its text, or from that text compressed ([`crate::compress`]: zstd
    /// or gzip, known by their first bytes, decompressed to at most
    /// [`compress::DEFAULT_LIMIT`] bytes).
    ///
    /// JSON that is not a save (`docs/FORMAT.md`, section 1: its top level is not an
    /// object whose `meta` is an object holding an integer `version`) is an error of kind
    /// [`ErrorKind::NotASave`], whatever else is wrong with it; what is wrong with a save
    /// (an envelope, a tag, a key twice) is an error of its own kind.
    pub fn from_slice(bytes: &[u8]) -> Result<Save> {
        Save::from_slice_within(bytes, compress::DEFAULT_LIMIT)
    }

    /// [`Save::from_slice`] decompressing at most `limit` bytes of text
    /// ([`Options::max_text`](crate::Options::max_text)), for the library's own readers: one
    /// that decompressed a file first passes its limit on, so text that is itself
    /// compressed again is held to it too.
    pub(crate) fn from_slice_within(bytes: &[u8], limit: u64) -> Result<Save> {
        let text = compress::decompress(bytes, limit)?;
        let text = utf8(&text)?;
        let (document, offsets) = read_document(text).map_err(|e| unless_a_save(text, e))?;
        checked_envelope(text, document, &offsets)
    }

    /// A save from a document that is already parsed (`{"meta": ..., "data": ...}`).
    pub fn from_value(document: Value) -> Result<Save> {
        let kind = envelope_error_kind(&document);
        envelope(document).map_err(|(path, message)| Error::new(kind, message).in_path(path))
    }

    #[allow(clippy::should_implement_trait)] // `FromStr` could not borrow; this mirrors serde_json.
    /// Loads a save from its text.
    pub fn from_str(text: &str) -> Result<Save> {
        Save::from_slice(text.as_bytes())
    }

    /// Loads a save from everything `reader` gives.
    pub fn from_reader(mut reader: impl Read) -> Result<Save> {
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(e, "cannot read the save"))?;
        Save::from_slice(&bytes)
    }

    /// Loads the save in the file at `path`; errors name the file. Something that is not a
    /// regular file (a FIFO, a device) is refused, never waited on.
    ///
    /// The save does not remember its file: errors of a later [`Save::data_as`] name none.
    /// For typed state, [`Save::load_as`] reads the file straight into it, with errors that
    /// name the file.
    pub fn load(path: impl AsRef<FsPath>) -> Result<Save> {
        let path = path.as_ref();
        let bytes = read_file(path)?;
        Save::from_slice(&bytes).map_err(|e| e.with_file(path))
    }

    /// The data of the save in the file at `path` as a game's own type, read straight from
    /// the text ([`Save::data_from_slice`]); errors name the file, the line and column, and
    /// the path from `data`, as those of [`cache::Loaded::data_as`](crate::cache::Loaded::data_as)
    /// do.
    ///
    /// ```
    /// #[derive(serde::Deserialize)]
    /// struct Ship { hull: u32 }
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("world.json");
    /// std::fs::write(&path, r#"{"meta": {"version": 1}, "data": {"hull": "full"}}"#)?;
    /// let err = savechain::Save::load_as::<Ship>(&path).err().unwrap();
    /// assert_eq!(err.file(), Some(path.as_path()));
    /// assert!(err.to_string().contains(":1:43: at data.hull: invalid type"), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_as<T: serde::de::DeserializeOwned>(path: impl AsRef<FsPath>) -> Result<T> {
        let path = path.as_ref();
        let bytes = read_file(path)?;
        let text =
            compress::decompress(&bytes, compress::DEFAULT_LIMIT).map_err(|e| e.with_file(path))?;
        Save::data_from_slice(&text).map_err(|e| e.with_file(path))
    }

    /// Appends the save's text to `out` in the given style; a game that saves often can
    /// clear and reuse one buffer.
    pub fn write(&self, out: &mut Vec<u8>, style: Style) -> Result<()> {
        let meta = self.meta.to_value();
        write_members(out, &[("meta", &meta), ("data", &self.data)], style)
    }

    /// Hands the save's text in `style` to `sink` in pieces, as [`Save::write`] writes it
    /// whole: a large save's text is never all in memory. A value nested too deeply, or
    /// the sink's error, stops it midway.
    pub(crate) fn stream(&self, style: Style, sink: &mut Sink<'_>) -> Result<()> {
        let meta = self.meta.to_value();
        stream_members(&[("meta", &meta), ("data", &self.data)], style, sink)
    }

    /// Whether `text` is the save's canonical pretty text ([`Save::to_vec`]'s), compared
    /// piece by piece as it is written, never whole.
    pub(crate) fn is_text(&self, text: &[u8]) -> Result<bool> {
        same_text(text, |sink| self.stream(Style::Pretty, sink))
    }

    /// The canonical pretty text of the save that `bytes` hold (plain or compressed): what
    /// [`Save::from_slice`] and then [`Save::to_vec`] give, with the same errors, but a plain
    /// save is read into a borrowed [`Document`] rather than a tree, faster and in less
    /// memory. [`Save::write_canonical_text`] writes it out as it is made.
    ///
    /// ```
    /// use savechain::Save;
    ///
    /// let messy = br#"{"data": {"b": 1, "a": 2.5}, "meta": {"version": 3}}"#;
    /// let canonical = Save::canonical_text(messy)?;
    /// assert_eq!(canonical, Save::from_slice(messy)?.to_vec()?);
    /// assert!(Save::canonical_text(br#"{"meta": {}}"#).is_err());
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn canonical_text(bytes: &[u8]) -> Result<Vec<u8>> {
        Canonical::of(bytes, compress::DEFAULT_LIMIT)?.into_vec()
    }

    /// [`Save::canonical_text`] written to `out` as it is made, in pieces: a plain save's
    /// canonical text is never whole in memory. It is what `save-upgrade fmt -` prints.
    ///
    /// The save is read and checked whole first: bytes that are no save, or a broken one,
    /// are the error [`Save::canonical_text`] gives, and nothing is written to `out`. An
    /// error of `out` ([`ErrorKind::Io`]) stops the writing where it is.
    ///
    /// ```
    /// use savechain::Save;
    ///
    /// let messy = br#"{"data": {"b": 1, "a": 2.5}, "meta": {"version": 3}}"#;
    /// let mut out = Vec::new();
    /// Save::write_canonical_text(messy, &mut out)?;
    /// assert_eq!(out, Save::canonical_text(messy)?);
    ///
    /// let mut out = Vec::new();
    /// assert!(Save::write_canonical_text(br#"{"meta": {"version": 3}, "data": [1,]}"#, &mut out).is_err());
    /// assert!(out.is_empty());
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn write_canonical_text(bytes: &[u8], mut out: impl Write) -> Result<()> {
        let canonical = Canonical::of(bytes, compress::DEFAULT_LIMIT)?;
        let write_error = |e| Error::io(e, "cannot write the text");
        match canonical {
            Canonical::Document(doc) => doc.stream(Style::Pretty, &mut |piece: &[u8]| {
                out.write_all(piece).map_err(write_error)
            })?,
            Canonical::Text(text) => out.write_all(&text).map_err(write_error)?,
        }
        out.flush().map_err(write_error)
    }

    /// Whether `text` is the canonical text of the save it holds (`Save::canonical_text(text)?
    /// == text`), compared piece by piece as the canonical text is made, never whole; the
    /// errors of [`Save::canonical_text`]. Compressed bytes are not their own text: decompress
    /// them first ([`compress::decompress`]).
    ///
    /// ```
    /// use savechain::Save;
    ///
    /// let messy = br#"{"data": {"b": 1, "a": 2.5}, "meta": {"version": 3}}"#;
    /// assert!(!Save::is_canonical_text(messy)?);
    /// assert!(Save::is_canonical_text(&Save::canonical_text(messy)?)?);
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn is_canonical_text(text: &[u8]) -> Result<bool> {
        Canonical::of(text, compress::DEFAULT_LIMIT)?.is(text)
    }

    /// The canonical pretty text of the save.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write(&mut out, Style::Pretty)?;
        Ok(out)
    }

    /// The canonical pretty text of the save, stored as `how` says: the bytes of a file of
    /// the save ([`compress::compress`]).
    ///
    /// ```
    /// use savechain::compress::{Codec, Compression};
    /// use savechain::{Save, Value};
    ///
    /// let save = Save::new(2, Value::from("hello"));
    /// let bytes = save.to_vec_with(Compression::new(Codec::Gzip))?;
    /// assert_eq!(Codec::of(&bytes), Codec::Gzip);
    /// assert_eq!(Save::from_slice(&bytes)?, save);
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn to_vec_with(&self, how: Compression) -> Result<Vec<u8>> {
        let text = self.to_vec()?;
        Ok(match how.codec() {
            Codec::Plain => text,
            _ => compress::compress(&text, how),
        })
    }

    /// The canonical compact text of the save.
    pub fn to_vec_compact(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write(&mut out, Style::Compact)?;
        Ok(out)
    }

    /// The canonical pretty text of the save.
    pub fn to_string(&self) -> Result<String> {
        self.to_vec()
            .map(|v| String::from_utf8(v).expect("the writer emits UTF-8"))
    }

    /// Writes the save's text in the given style to `writer`.
    pub fn to_writer(&self, mut writer: impl Write, style: Style) -> Result<()> {
        let mut out = Vec::new();
        self.write(&mut out, style)?;
        writer
            .write_all(&out)
            .map_err(|e| Error::io(e, "cannot write the save"))
    }

    /// Writes the save to `path` in canonical pretty form, atomically: the file is either
    /// left as it was or holds the whole new save, whatever happens during the write.
    ///
    /// It takes the save's lock ([`write_atomic`](crate::write_atomic)): when the save is
    /// being upgraded (by `save-upgrade`, a batch or
    /// [`upgrade_file`](crate::upgrade::upgrade_file)), it waits for the upgrade to finish
    /// and then replaces the upgraded save, so the game's newest save is never lost to an
    /// upgrade of its older content.
    pub fn store(&self, path: impl AsRef<FsPath>) -> Result<()> {
        self.store_with(path, Compression::NONE)
    }

    /// [`Save::store`], the text stored as `how` says (zstd or gzip, [`crate::compress`]);
    /// every reader of saves reads it back, whatever the file is named.
    pub fn store_with(&self, path: impl AsRef<FsPath>, how: Compression) -> Result<()> {
        let path = path.as_ref();
        if how.codec() == Codec::Plain {
            // Streamed to the file: the text is never whole in memory.
            let write_error = |e| Error::io(e, "cannot write the file");
            return fsio::write_atomic_streamed(path, write_error, |sink| {
                self.stream(Style::Pretty, sink)
            })
            .map_err(|e| e.with_file(path));
        }
        let bytes = self.to_vec_with(how).map_err(|e| e.with_file(path))?;
        fsio::write_atomic(path, &bytes)
            .map_err(|e| Error::io(e, "cannot write the file").with_file(path))
    }

    /// The data section of a save's text as a game's own type, read straight from the text
    /// (no tree is built; strings may be borrowed from `bytes`), with the envelope checked;
    /// errors name the line, column and path (from `data`).
    ///
    /// The text must be plain: its strings are borrowed from it. Compressed bytes are
    /// refused ([`ErrorKind::Usage`]); decompress them first ([`compress::decompress`]) or
    /// load the file with [`Save::load_as`].
    pub fn data_from_slice<'de, T: serde::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T> {
        if let codec @ (Codec::Zstd | Codec::Gzip) = Codec::of(bytes) {
            return Err(Error::new(
                ErrorKind::Usage,
                format!("the text is {codec}-compressed: decompress it first (savechain::compress::decompress)"),
            ));
        }
        let text = utf8(bytes)?;
        let mut reader = Reader::new(text, Tree);
        match read_data(&mut reader) {
            Ok(Some(data)) => Ok(data),
            // The envelope is not right: the error a whole load gives, where it stands.
            Ok(None) => Err(Save::from_slice(bytes)
                .err()
                .unwrap_or_else(|| Error::new(ErrorKind::Envelope, "the save has no data"))),
            Err(failure) => Err(reader.error(failure)),
        }
    }

    /// Deserializes the data section into a game's own type. Errors name the path from
    /// `data` but no file, which a `Save` does not know: load typed state from a file with
    /// [`Save::load_as`], or add the file with `.map_err(|e| e.with_file(&path))`.
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        crate::serde::from_value_ref(&self.data)
            .map_err(|e| e.at(Segment::Key("data".into())).into())
    }
}

/// Puts the save at `path` in canonical form (`meta` first, keys sorted, two-space
/// indentation, doubles as hexfloats): returns whether it was not canonical (a save
/// written before format revision 3, `data` first, is not). With `check`, writes nothing;
/// otherwise rewrites the file atomically, refusing a read-only one. A file that does not
/// load is an error naming it, and is left as it is. A compressed save is canonical when
/// its text is, and is rewritten in its own codec ([`format_file_with`]).
///
/// A save rewritten is kept first as it was, beside it, as a change by hand's is
/// ([`edit::store_edited`](crate::edit::store_edited)): `<name>.bak`, or `<name>.<k>.bak`
/// when that holds other bytes, so no backup is ever overwritten
/// ([`format_file_kept`] says which). A backup that cannot be written is an error, and the
/// save is left as it is. A canonical save gets no backup, since nothing is written.
///
/// Rewriting, it holds the save's lock from reading it to replacing it, as an upgrade
/// does, and fails with [`ErrorKind::Changed`] rather than replace a save that another
/// program wrote meanwhile (its backup, written already, holds the bytes read).
pub fn format_file(path: impl AsRef<FsPath>, check: bool) -> Result<bool> {
    let formatted = format_file_with(path, check, &crate::Options::default())?;
    Ok(formatted != Formatted::Canonical)
}

/// What [`format_file_with`] did (or, checking, would do) to a save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Formatted {
    /// Its text was canonical and it is stored as asked: left as it is, with no backup.
    Canonical,
    /// Its text was not canonical: rewritten canonically (in the compression asked), the
    /// bytes it had kept first as its backup (`<name>.bak`).
    Rewritten,
    /// Its text was canonical, but it was stored in another codec than
    /// [`Options::compression`](crate::Options::compression) asks: that text, rewritten in
    /// that codec, the bytes it had kept first as its backup (`<name>.bak`).
    Recompressed,
}

/// [`format_file`], storing what it writes as `options` say: in
/// [`Options::compression`](crate::Options::compression), or (`None`) in the save's own
/// codec at that codec's default level; a compressed save's text may be at most
/// [`Options::max_text`](crate::Options::max_text) bytes. A save whose text is canonical
/// and whose codec is the one asked is left as it is: the level alone never rewrites a
/// file (it is not recorded in the file to compare). This is how a folder of saves is
/// converted from plain to compressed and back, the same text inside.
///
/// A save rewritten (or recompressed) is kept first as [`format_file`] says, its backup
/// the bytes it had, compressed as they were; [`format_file_kept`] also returns the
/// backup's path.
///
/// ```
/// use savechain::compress::{Codec, Compression};
/// use savechain::{format_file_with, Formatted, Options, Save};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("world.json");
/// let plain = Save::new(1, savechain::Value::Int(7)).to_vec()?;
/// std::fs::write(&path, &plain)?;
/// let mut options = Options::default();
/// options.compression = Some(Compression::new(Codec::Zstd));
/// assert_eq!(format_file_with(&path, false, &options)?, Formatted::Recompressed);
/// assert_eq!(Codec::of(&std::fs::read(&path)?), Codec::Zstd);
/// assert_eq!(std::fs::read(dir.path().join("world.json.bak"))?, plain); // kept first
/// assert_eq!(format_file_with(&path, false, &options)?, Formatted::Canonical);
/// // Without a compression asked, it stays zstd.
/// assert_eq!(format_file_with(&path, true, &Options::default())?, Formatted::Canonical);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn format_file_with(
    path: impl AsRef<FsPath>,
    check: bool,
    options: &crate::Options,
) -> Result<Formatted> {
    format_file_kept(path, check, options).map(|kept| kept.formatted)
}

/// What [`format_file_kept`] did (or, checking, would do) to a save, and where it kept the
/// save as it was.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FormatReport {
    /// What was done: left as it was, rewritten or recompressed.
    pub formatted: Formatted,
    /// The backup of the save as it was (`<name>.bak`, or `<name>.<k>.bak`), when it was
    /// replaced; `None` when it was canonical already or `check` was asked (nothing was
    /// written).
    pub backup: Option<PathBuf>,
}

/// [`format_file_with`], saying where the save's backup is: for a tool that tells its user
/// where to find the save as it was.
///
/// ```
/// use savechain::{format_file_kept, Formatted, Options};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("world.json");
/// let typed = r#"{"data": 7, "meta": {"version": 1}}"#;
/// std::fs::write(&path, typed)?;
/// let report = format_file_kept(&path, false, &Options::default())?;
/// assert_eq!(report.formatted, Formatted::Rewritten);
/// assert_eq!(report.backup, Some(dir.path().join("world.json.bak")));
/// assert_eq!(std::fs::read_to_string(dir.path().join("world.json.bak"))?, typed);
/// // Canonical now: nothing written, no backup.
/// assert_eq!(format_file_kept(&path, false, &Options::default())?.backup, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn format_file_kept(
    path: impl AsRef<FsPath>,
    check: bool,
    options: &crate::Options,
) -> Result<FormatReport> {
    let path = path.as_ref();
    format_at(path, check, options).map_err(|e| e.with_file(path))
}

fn format_at(path: &FsPath, check: bool, options: &crate::Options) -> Result<FormatReport> {
    let held = if check { None } else { fsio::hold_save(path)? };
    let bytes = fsio::read_save(path, held.as_ref())?;
    let codec = Codec::of(&bytes);
    let text = compress::decompress(&bytes, options.max_text)?;
    let canonical = Canonical::of(&text, options.max_text)?;
    let how = options
        .compression
        .unwrap_or_else(|| Compression::new(codec));
    let formatted = match (canonical.is(&text)?, how.codec() == codec) {
        (true, true) => Formatted::Canonical,
        (true, false) => Formatted::Recompressed,
        (false, _) => Formatted::Rewritten,
    };
    if check || formatted == Formatted::Canonical {
        return Ok(FormatReport {
            formatted,
            backup: None,
        });
    }
    fsio::refuse_read_only(path)?;
    let read = fsio::Fingerprint::of(&bytes);
    // The bytes read, as an edit keeps them: they are in memory already, so the new text
    // can still be streamed to the save after.
    let backup = fsio::backup_path(path, None, &bytes);
    fsio::write_atomic_like(&backup, &bytes, Some(path))
        .map_err(|e| Error::io(e, format!("cannot write the backup {}", backup.display())))?;
    match canonical {
        // Streamed to the file: the new text is never whole in memory.
        Canonical::Document(doc) if how.codec() == Codec::Plain => {
            let fill = |sink: &mut dyn FnMut(&[u8]) -> Result<()>| doc.stream(Style::Pretty, sink);
            fsio::replace_held_streamed(path, held.as_ref(), &read, fsio::Work::Format, fill)?
        }
        canonical => {
            let written = compress::compress(&canonical.into_vec()?, how);
            fsio::replace_held(path, &written, held.as_ref(), &read, fsio::Work::Format)?
        }
    }
    Ok(FormatReport {
        formatted,
        backup: Some(backup),
    })
}

/// The canonical text of a save: as a borrowed document, written on demand, for a plain
/// save, which is nearly every one; written out by a loaded [`Save`] for the rest (texts
/// that are no save, or a broken one, whose errors the whole load gives, and the few a
/// load normalizes).
enum Canonical<'t> {
    Document(Document<'t>),
    Text(Vec<u8>),
}

impl<'t> Canonical<'t> {
    /// The canonical text of the save whose decompressed text is `text`, or the error
    /// [`Save::from_slice_within`] gives.
    fn of(text: &'t [u8], limit: u64) -> Result<Canonical<'t>> {
        // Text that is itself compressed again is the whole load's to decompress.
        if Codec::of(text) == Codec::Plain {
            if let Ok(doc) = Document::parse(text) {
                if doc.is_plain_save() {
                    return Ok(Canonical::Document(doc));
                }
            }
        }
        Save::from_slice_within(text, limit)
            .and_then(|save| save.to_vec())
            .map(Canonical::Text)
    }

    /// Whether `text` is this canonical text: compared piece by piece as it is written,
    /// never whole.
    fn is(&self, text: &[u8]) -> Result<bool> {
        match self {
            Canonical::Text(canonical) => Ok(canonical == text),
            Canonical::Document(doc) => same_text(text, |sink| doc.stream(Style::Pretty, sink)),
        }
    }

    fn into_vec(self) -> Result<Vec<u8>> {
        match self {
            Canonical::Document(doc) => doc.to_vec(Style::Pretty),
            Canonical::Text(text) => Ok(text),
        }
    }
}

/// Whether `text` is the text that `stream` hands its sink, compared piece by piece; the
/// walk stops at the first difference.
fn same_text(text: &[u8], stream: impl FnOnce(&mut Sink<'_>) -> Result<()>) -> Result<bool> {
    let mut rest = text;
    let mut same = true;
    let mut compare = |piece: &[u8]| match rest.strip_prefix(piece) {
        Some(after) => {
            rest = after;
            Ok(())
        }
        None => {
            same = false;
            // Stops the walk: the answer is known.
            Err(Error::new(ErrorKind::Usage, "differs"))
        }
    };
    match stream(&mut compare) {
        Ok(()) => Ok(rest.is_empty()),
        Err(_) if !same => Ok(false),
        Err(e) => Err(e),
    }
}

fn read_file(path: &FsPath) -> Result<Vec<u8>> {
    fsio::read_regular(path).map_err(|e| Error::io(e, "cannot read the file").with_file(path))
}

type EnvelopeError = (Path, String);

fn path_of(keys: &[&str]) -> Path {
    Path::from(
        keys.iter()
            .map(|k| Segment::Key(k.to_string()))
            .collect::<Vec<_>>(),
    )
}

/// How a JSON document stands to the definition of a save (`docs/FORMAT.md`, section 1):
/// a save is a JSON object whose only members are `meta` and `data`, both there, `meta`
/// an object holding an integer `version`. Anything else is not a save, whatever else it
/// holds (a settings file, a sprite sheet whose `meta` has a string `version`, settings
/// with a `meta.version` beside their own members); a save may still be a broken one.
enum Shape {
    Save,
    /// Not an object: what it is.
    NotAnObject(&'static str),
    NoMeta,
    /// `meta` is not an object: what it is.
    MetaIs(&'static str),
    NoVersion,
    /// `meta.version` is not an integer: what it is.
    VersionIs(&'static str),
    /// A top-level member other than `meta` and `data`: the first.
    OtherMember(String),
    NoData,
}

impl Shape {
    fn of(document: &Value) -> Shape {
        let Value::Object(top) = document else {
            return Shape::NotAnObject(document.kind());
        };
        let Some(meta) = top.get("meta") else {
            return Shape::NoMeta;
        };
        let Value::Object(meta) = meta else {
            return Shape::MetaIs(meta.kind());
        };
        match meta.get("version") {
            None => return Shape::NoVersion,
            Some(Value::Int(_) | Value::UInt(_)) => {}
            Some(other) => return Shape::VersionIs(other.kind()),
        }
        Shape::of_members(top.keys())
    }

    /// The shape of an object whose `meta` holds an integer `version`, by its members.
    fn of_members<'k>(mut keys: impl Iterator<Item = &'k str>) -> Shape {
        let mut data = false;
        for key in keys.by_ref() {
            match key {
                "meta" => {}
                "data" => data = true,
                other => return Shape::OtherMember(other.to_string()),
            }
        }
        match data {
            true => Shape::Save,
            false => Shape::NoData,
        }
    }

    /// Why it is not a save, for a person; `None` for a save.
    fn why_not(&self) -> Option<String> {
        let why = match self {
            Shape::Save => return None,
            Shape::NotAnObject(kind) => format!("it is {kind}, not an object; {SHAPE}"),
            Shape::NoMeta => format!(r#"no "meta" member; {SHAPE}"#),
            Shape::MetaIs(kind) => format!(r#""meta" is {kind}, not an object; {SHAPE}"#),
            Shape::NoVersion => format!(r#""meta" has no "version"; {SHAPE}"#),
            Shape::VersionIs(kind) => format!("meta.version is {kind}, not an integer; {SHAPE}"),
            Shape::OtherMember(key) => {
                format!("it has a top-level member {key:?}; {SHAPE} and nothing else")
            }
            Shape::NoData => format!(r#"no "data" member; {SHAPE}"#),
        };
        Some(format!("not a save: {why}"))
    }
}

/// What a document that fails [`envelope`] is: no save at all (a settings file beside the
/// saves, say), or a save whose envelope is broken.
fn envelope_error_kind(document: &Value) -> ErrorKind {
    match Shape::of(document) {
        Shape::Save => ErrorKind::Envelope,
        _ => ErrorKind::NotASave,
    }
}

/// `error`, savechain's reader's refusal of `text`, or, when the text is JSON that is not a
/// save by [`Shape`], the error that says so: a file beside the saves need not follow the
/// format's rules (its arrays may look like tags, a key may come twice). Text that is not
/// JSON at all keeps its error: it may be a damaged save.
fn unless_a_save(text: &str, error: Error) -> Error {
    if error.kind() == ErrorKind::Syntax {
        return error;
    }
    match serde_json::from_str::<Probe>(text) {
        Ok(Probe(shape)) => match shape.why_not() {
            Some(why) => Error::new(ErrorKind::NotASave, why),
            None => error,
        },
        Err(_) => error,
    }
}

/// The [`Shape`] of a JSON text, read by serde_json with nothing built but `meta`.
struct Probe(Shape);

impl<'de> serde::Deserialize<'de> for Probe {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Probe, D::Error> {
        deserializer.deserialize_any(ProbeVisitor).map(Probe)
    }
}

struct ProbeVisitor;

impl<'de> serde::de::Visitor<'de> for ProbeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Shape, A::Error> {
        let mut meta = None;
        let mut keys = Vec::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "meta" {
                meta = Some(map.next_value::<serde_json::Value>()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
            keys.push(key.into_owned());
        }
        let json_kind = |v: &serde_json::Value| match v {
            serde_json::Value::Null => "null",
            serde_json::Value::Bool(_) => "a boolean",
            serde_json::Value::Number(n) if n.is_f64() => "a number with a fraction or exponent",
            serde_json::Value::Number(_) => "an integer",
            serde_json::Value::String(_) => "a string",
            serde_json::Value::Array(_) => "an array",
            serde_json::Value::Object(_) => "an object",
        };
        Ok(match meta {
            None => Shape::NoMeta,
            Some(serde_json::Value::Object(meta)) => match meta.get("version") {
                None => Shape::NoVersion,
                Some(v) if v.is_i64() || v.is_u64() => {
                    Shape::of_members(keys.iter().map(String::as_str))
                }
                Some(v) => Shape::VersionIs(json_kind(v)),
            },
            Some(other) => Shape::MetaIs(json_kind(&other)),
        })
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Shape, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Shape::NotAnObject("an array"))
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Shape, E> {
        Ok(Shape::NotAnObject("a boolean"))
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<Shape, E> {
        Ok(Shape::NotAnObject("an integer"))
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<Shape, E> {
        Ok(Shape::NotAnObject("an integer"))
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<Shape, E> {
        Ok(Shape::NotAnObject("a number"))
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<Shape, E> {
        Ok(Shape::NotAnObject("a string"))
    }

    fn visit_unit<E>(self) -> std::result::Result<Shape, E> {
        Ok(Shape::NotAnObject("null"))
    }
}

/// The save `document` holds, read from `text`; an envelope error points at the member
/// it is about.
fn checked_envelope(text: &str, document: Value, offsets: &Offsets) -> Result<Save> {
    let kind = envelope_error_kind(&document);
    envelope(document).map_err(|(path, message)| {
        Error::new(kind, message)
            .at(Location::of_offset(text.as_bytes(), offsets.of(&path)))
            .in_path(path)
    })
}

/// The `meta` of the save whose plain text is `text`, read as [`Meta::from_slice`] reads it.
pub(crate) fn meta_of_text(text: &[u8]) -> Result<Meta> {
    let text = utf8(text)?;
    let (document, offsets) = read_meta_document(text).map_err(|e| unless_a_save(text, e))?;
    Ok(checked_envelope(text, document, &offsets)?.meta)
}

/// The `meta` read from the head of a save's `text` (its first member, whose value starts at
/// `at`, its members at `members`), checked as a whole load checks the envelope's `meta`;
/// errors point into `text`, a prefix of the save's text.
pub(crate) fn head_meta(
    text: &str,
    root: usize,
    at: usize,
    meta: Value,
    members: Vec<(String, usize)>,
) -> Result<Meta> {
    let offsets = Offsets {
        root,
        top: vec![("meta".to_string(), at)],
        meta: members,
    };
    // The rest of the document is not read: `data` stands for it.
    let document: Map = [("meta", meta), ("data", Value::Null)]
        .into_iter()
        .collect();
    Ok(checked_envelope(text, Value::Object(document), &offsets)?.meta)
}

/// Splits a parsed document into meta and data, checking it is a save.
fn envelope(document: Value) -> std::result::Result<Save, EnvelopeError> {
    if let Some(why) = Shape::of(&document).why_not() {
        let path = match Shape::of(&document) {
            Shape::MetaIs(_) | Shape::NoVersion => path_of(&["meta"]),
            Shape::VersionIs(_) => path_of(&["meta", "version"]),
            Shape::OtherMember(key) => path_of(&[key.as_str()]),
            _ => Path::new(),
        };
        return Err((path, why));
    }
    let (meta, data) = split_top(document)?;
    let Value::Object(mut extra) = meta else {
        return Err((
            path_of(&["meta"]),
            format!("meta must be an object, found {}", meta.kind()),
        ));
    };
    let version = meta_version(extra.remove("version"))?;
    let writer = meta_writer(extra.remove("writer"))?;
    Ok(Save {
        meta: Meta {
            version,
            writer,
            extra,
        },
        data,
    })
}

const SHAPE: &str = r#"a save is an object {"meta": {"version": N, ...}, "data": ...}"#;

/// The `meta` and `data` members of a document, which may have no others.
fn split_top(document: Value) -> std::result::Result<(Value, Value), EnvelopeError> {
    let Value::Object(top) = document else {
        return Err((
            Path::new(),
            format!("not a save: {SHAPE}, found {}", document.kind()),
        ));
    };
    let mut meta = None;
    let mut data = None;
    for (key, value) in top {
        match key.as_str() {
            "meta" => meta = Some(value),
            "data" => data = Some(value),
            _ => {
                return Err((
                    path_of(&[&key]),
                    format!(r#"unknown top-level member {key:?}; {SHAPE} and nothing else"#),
                ))
            }
        }
    }
    let missing = |member: &str| {
        (
            Path::new(),
            format!(r#"not a save: the "{member}" member is missing; {SHAPE}"#),
        )
    };
    Ok((
        meta.ok_or_else(|| missing("meta"))?,
        data.ok_or_else(|| missing("data"))?,
    ))
}

fn meta_version(version: Option<Value>) -> std::result::Result<u64, EnvelopeError> {
    const WHAT: &str = "a non-negative integer (the save's schema version)";
    let Some(v) = version else {
        return Err((
            path_of(&["meta"]),
            format!("meta.version is missing; it must be {WHAT}"),
        ));
    };
    v.as_u64().ok_or_else(|| {
        let found = if v.as_i64().is_some() {
            "a negative integer"
        } else {
            v.kind()
        };
        (
            path_of(&["meta", "version"]),
            format!("meta.version must be {WHAT}, found {found}"),
        )
    })
}

fn meta_writer(
    writer: Option<Value>,
) -> std::result::Result<Option<semver::Version>, EnvelopeError> {
    let path = || path_of(&["meta", "writer"]);
    match writer {
        None => Ok(None),
        Some(Value::String(s)) => semver::Version::parse(&s).map(Some).map_err(|e| {
            (
                path(),
                format!(
                    r#"meta.writer must be a semantic version such as "1.2.3", found {s:?}: {e}"#
                ),
            )
        }),
        Some(other) => Err((
            path(),
            format!(
                r#"meta.writer must be a string with a semantic version such as "1.2.3", found {}"#,
                other.kind()
            ),
        )),
    }
}

/// Where the values an envelope error can point at start in the text: the document, the
/// top-level members and the members of `meta`.
struct Offsets {
    root: usize,
    top: Vec<(String, usize)>,
    meta: Vec<(String, usize)>,
}

impl Offsets {
    /// The offset of the value at `path`, or of the nearest enclosing one known.
    fn of(&self, path: &Path) -> usize {
        let find = |members: &[(String, usize)], wanted: &str| {
            members.iter().find(|(k, _)| k == wanted).map(|&(_, at)| at)
        };
        match path.segments() {
            [Segment::Key(top), rest @ ..] => match (find(&self.top, top), rest) {
                (Some(at), []) => at,
                (Some(at), [Segment::Key(member), ..]) => find(&self.meta, member).unwrap_or(at),
                (Some(at), _) => at,
                (None, _) => self.root,
            },
            _ => self.root,
        }
    }
}

/// A save's data as `T`, streamed from the text; `None` when the envelope is not what a
/// save's must be (then a whole load says why).
fn read_data<'de, T: serde::Deserialize<'de>>(reader: &mut Reader<'de, Tree>) -> Parsed<Option<T>> {
    reader.skip_whitespace();
    if reader.peek() != Some(b'{') {
        return Ok(None);
    }
    reader.seek(reader.pos() + 1);
    let (mut data, mut meta) = (None, None);
    let mut keys = Vec::new();
    loop {
        reader.skip_whitespace();
        if reader.peek() != Some(b'"') {
            return Ok(None);
        }
        let key = reader.string_text()?;
        reader.expect(b':', "':' after the key")?;
        match key.as_ref() {
            "data" if data.is_none() => {
                let mut de = crate::serde::from_text::TextDeserializer::new(reader, &mut keys);
                let value = T::deserialize(&mut de)
                    .map_err(|e| e.inside(Segment::Key("data".to_string())))?;
                data = Some(value);
            }
            "meta" if meta.is_none() => meta = Some(reader.value()?),
            _ => return Ok(None),
        }
        reader.skip_whitespace();
        match reader.peek() {
            Some(b',') => reader.seek(reader.pos() + 1),
            Some(b'}') => {
                reader.seek(reader.pos() + 1);
                break;
            }
            _ => return Ok(None),
        }
    }
    reader.end()?;
    let (Some(data), Some(meta)) = (data, meta) else {
        return Ok(None);
    };
    let envelope: Map = [("data", Value::Null), ("meta", meta)]
        .into_iter()
        .collect();
    Ok(Save::from_value(Value::Object(envelope)).ok().map(|_| data))
}

/// Reads a whole document, noting where its top-level members and the members of
/// `meta` start, so that envelope errors point at them without a second reading.
fn read_document(text: &str) -> Result<(Value, Offsets)> {
    let mut reader = Reader::new(text, Tree);
    let document = read_top(&mut reader, |_, _| {}).map_err(|e| reader.error(e))?;
    reader.end().map_err(|e| reader.error(e))?;
    Ok(document)
}

/// Reads a whole document as [`read_document`] does, building only `meta` (the other
/// top-level members read as `null`).
fn read_meta_document(text: &str) -> Result<(Value, Offsets)> {
    let mut reader = Reader::new(text, Sparse::default());
    let skip = |reader: &mut Reader<'_, Sparse>, on| reader.builder.skipping = on;
    let document = read_top(&mut reader, skip).map_err(|e| reader.error(e))?;
    reader.end().map_err(|e| reader.error(e))?;
    Ok(document)
}

/// Reads the top-level value, with the offsets of the envelope's members; `skip(reader,
/// true)` is called before each top-level member other than `meta` is read, and
/// `skip(reader, false)` after.
fn read_top<'a, B: Build<'a, Value = Value>>(
    reader: &mut Reader<'a, B>,
    skip: impl Fn(&mut Reader<'a, B>, bool),
) -> Parsed<(Value, Offsets)> {
    reader.skip_whitespace();
    let mut offsets = Offsets {
        root: reader.pos(),
        top: Vec::new(),
        meta: Vec::new(),
    };
    if reader.peek() != Some(b'{') {
        return Ok((reader.value()?, offsets));
    }
    let (top, top_offsets) = reader.object_with(|reader, key| {
        reader.skip_whitespace();
        if key != "meta" {
            skip(reader, true);
            let value = reader.value();
            skip(reader, false);
            return value;
        }
        if reader.peek() != Some(b'{') {
            return reader.value();
        }
        let (meta, meta_offsets) = reader.object_with(|reader, _| reader.value())?;
        offsets.meta = meta_offsets;
        Ok(meta)
    })?;
    offsets.top = top_offsets;
    Ok((top, offsets))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::names;

    /// A save many pieces of text long.
    fn large() -> Save {
        let items = (0..20_000).map(|i| Value::String(format!("item {i}")));
        Save::new(3, Value::Array(items.collect()))
    }

    /// A save is stored by streaming its text to the file: the bytes of [`Save::to_vec`];
    /// one that cannot be written, for a disk that fills midway or a value nested too
    /// deeply, leaves the file as it was and no temporary beside it.
    #[test]
    fn a_streamed_store_writes_the_text_whole_or_leaves_the_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, b"old").unwrap();
        let save = large();
        save.store(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), save.to_vec().unwrap());

        let mut deep = Value::Null;
        for _ in 0..crate::text::MAX_DEPTH + 1 {
            deep = Value::Array(vec![deep]);
        }
        let deep = Save::new(3, Value::Array(vec![large().data, deep]));
        let full = tempfile::tempdir().unwrap();
        fsio::full_disk::fill(full.path());
        for (dir, save, error) in [
            (dir.path(), &deep, "nested more than"),
            (full.path(), &save, "no space left on the device"),
        ] {
            let path = dir.join("a.json");
            std::fs::write(&path, b"old").unwrap();
            let err = save.store(&path).unwrap_err();
            assert!(err.to_string().contains(error), "{err}");
            assert_eq!(err.file(), Some(path.as_path()));
            assert_eq!(std::fs::read(&path).unwrap(), b"old");
            assert_eq!(std::fs::read_dir(dir).unwrap().count(), 1, "no temporary");
        }
    }

    /// A hand edit, not canonical, of a small save.
    const TYPED: &str = r#"{"data": {"hp": 12.0}, "meta": {"version": 1}}"#;

    /// `fmt` keeps the bytes it replaces as `<name>.bak`, on disk before the save is
    /// renamed over; another hand edit formatted later takes `<name>.1.bak`, and the first
    /// backup stays as it was.
    #[test]
    fn fmt_keeps_what_it_replaces_and_never_overwrites_a_backup() {
        use crate::fsio::watch;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        std::fs::write(&path, TYPED).unwrap();
        watch::watch(dir.path(), None);
        let report = format_file_kept(&path, false, &crate::Options::default()).unwrap();
        let backup = dir.path().join("world.json.bak");
        assert_eq!(report.formatted, Formatted::Rewritten);
        assert_eq!(report.backup.as_deref(), Some(backup.as_path()));
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), TYPED);
        let canonical = Save::from_slice(TYPED.as_bytes())
            .unwrap()
            .to_vec()
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), canonical);
        let renames: Vec<_> = watch::log(dir.path())
            .into_iter()
            .filter(|op| op.starts_with("rename"))
            .collect();
        assert_eq!(renames, ["rename world.json.bak", "rename world.json"]);

        let again = r#"{"meta": {"version": 1}, "data": {"hp": 13.0}}"#;
        std::fs::write(&path, again).unwrap();
        assert!(format_file(&path, false).unwrap());
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), TYPED);
        let second = dir.path().join("world.json.1.bak");
        assert_eq!(std::fs::read_to_string(&second).unwrap(), again);
        assert_eq!(
            names(dir.path()),
            ["world.json", "world.json.1.bak", "world.json.bak"]
        );
    }

    /// Nothing written, nothing kept: a canonical save, and any save checked.
    #[test]
    fn a_canonical_save_or_a_check_makes_no_backup() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        std::fs::write(&path, TYPED).unwrap();
        let report = format_file_kept(&path, true, &crate::Options::default()).unwrap();
        assert_eq!(
            (report.formatted, report.backup),
            (Formatted::Rewritten, None)
        );
        let zstd = crate::Options {
            compression: Some(Compression::new(Codec::Zstd)),
            ..crate::Options::default()
        };
        assert_eq!(format_file_kept(&path, true, &zstd).unwrap().backup, None);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), TYPED);
        assert_eq!(names(dir.path()), ["world.json"]);

        let canonical = Save::from_slice(TYPED.as_bytes())
            .unwrap()
            .to_vec()
            .unwrap();
        std::fs::write(&path, &canonical).unwrap();
        let report = format_file_kept(&path, false, &crate::Options::default()).unwrap();
        assert_eq!(
            (report.formatted, report.backup),
            (Formatted::Canonical, None)
        );
        assert!(!format_file(&path, false).unwrap());
        assert_eq!(names(dir.path()), ["world.json"]);
    }

    /// A compressed save's backup is its bytes as they were, compressed; a plain save
    /// recompressed keeps its plain text.
    #[test]
    fn a_compressed_save_is_kept_compressed_and_a_recompressed_one_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json.zst");
        let packed = compress::compress(TYPED.as_bytes(), Compression::new(Codec::Zstd));
        std::fs::write(&path, &packed).unwrap();
        let report = format_file_kept(&path, false, &crate::Options::default()).unwrap();
        assert_eq!(report.formatted, Formatted::Rewritten);
        let backup = report.backup.unwrap();
        assert_eq!(backup, dir.path().join("world.json.zst.bak"));
        assert_eq!(std::fs::read(&backup).unwrap(), packed);
        let written = std::fs::read(&path).unwrap();
        assert_eq!(Codec::of(&written), Codec::Zstd);

        let plain = crate::Options {
            compression: Some(Compression::NONE),
            ..crate::Options::default()
        };
        let report = format_file_kept(&path, false, &plain).unwrap();
        assert_eq!(report.formatted, Formatted::Recompressed);
        let second = report.backup.unwrap();
        assert_eq!(second, dir.path().join("world.json.zst.1.bak"));
        assert_eq!(std::fs::read(&second).unwrap(), written);
        assert_eq!(std::fs::read(&backup).unwrap(), packed);
    }

    /// A backup that cannot be written (a folder has its name; its rename fails, as on a
    /// full disk) is an error naming it, and the save, plain (streamed) or compressed, is
    /// left as it was, with no temporary beside it.
    #[test]
    fn a_save_whose_backup_cannot_be_written_is_left_as_it_was() {
        use crate::fsio::watch;
        for (name, codec) in [("world.json", Codec::Plain), ("world.json.gz", Codec::Gzip)] {
            let before = compress::compress(TYPED.as_bytes(), Compression::new(codec));
            let in_the_way = tempfile::tempdir().unwrap();
            std::fs::create_dir(in_the_way.path().join(format!("{name}.bak"))).unwrap();
            let failing = tempfile::tempdir().unwrap();
            watch::watch(failing.path(), Some("rename"));
            for dir in [in_the_way.path(), failing.path()] {
                let path = dir.join(name);
                std::fs::write(&path, &before).unwrap();
                let left = names(dir);
                let err = format_file_with(&path, false, &crate::Options::default()).unwrap_err();
                assert!(
                    err.to_string().contains(&format!(
                        "cannot write the backup {}",
                        dir.join(format!("{name}.bak")).display()
                    )),
                    "{err}"
                );
                assert_eq!(err.file(), Some(path.as_path()));
                assert_eq!(std::fs::read(&path).unwrap(), before, "{name}");
                assert_eq!(names(dir), left, "{name}: no temporary");
            }
        }
    }

    /// A save that another program rewrites after its backup is written is not replaced;
    /// the backup holds the save as it was read.
    #[test]
    fn a_save_rewritten_while_it_is_formatted_is_not_replaced() {
        use crate::fsio::watch;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        std::fs::write(&path, TYPED).unwrap();
        let newer = r#"{"meta": {"version": 1}, "data": {"newer": true}}"#;
        let at = path.clone();
        watch::act(dir.path(), "check", move |_| {
            std::fs::write(&at, newer).unwrap()
        });
        let err = format_file(&path, false).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Changed, "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), newer);
        let backup = dir.path().join("world.json.bak");
        assert_eq!(std::fs::read_to_string(backup).unwrap(), TYPED);
        assert_eq!(names(dir.path()), ["world.json", "world.json.bak"]);
    }
}
