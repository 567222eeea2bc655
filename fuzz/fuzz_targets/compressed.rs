//! Any bytes, read as a possibly compressed save, and used as a text to compress.
//!
//! Read: `compress::decompress` (with a limit of 1 MiB, so a bomb stops there),
//! `compress::reader` read to the end and read for its head only (through a buffer of a
//! size the input chooses), `Save::from_slice` and `Meta::from_slice` never panic. Nothing
//! gives more text than the limit. A failure is an error of kind `Compressed`, and only of
//! bytes that start like a zstd or gzip stream; plain bytes are their own text. The reader
//! and `decompress` agree: the same text, or both refuse (except where zstd's streaming
//! decoder does not check a frame's declared size, below); the head is the text's start. A
//! save read from compressed bytes is the save read from the text they hold, or the same
//! error.
//!
//! Compressed: all but the last 5 bytes are a text `x`; the last 5 choose a codec, a level
//! and one byte to damage (position and xor mask). `compress(x)` has that codec, is the
//! same bytes when made again, and `decompress` and the reader give `x` back. With one
//! byte changed it must be refused as `Compressed` or give `x` exactly (a header field
//! the decoders ignore, such as gzip's time or OS byte): never other text, since the zstd
//! frame's checksum (32 bits of XXH64) and gzip's CRC-32 and size cover the text, and one
//! changed byte cannot also fix them. That holds only up to a checksum collision (one in
//! 2^32 per damaged frame), which is why only one byte is damaged: with several, the
//! fuzzer could write a matching checksum (it sees the comparisons), and a stream that
//! carries its own good checksum for other text is simply another valid stream. If the
//! change makes the first bytes no magic, the bytes are plain: their own text.
#![no_main]

use std::borrow::Cow;
use std::io::{BufReader, Read};

use libfuzzer_sys::fuzz_target;
use savechain::compress::{self, Codec, Compression, TooLong};
use savechain::{ErrorKind, Meta, Save};

/// The most text a read here may give: small, so that a bomb stops quickly.
const LIMIT: u64 = 1 << 20;
/// What a head read asks for.
const HEAD: usize = 64;

/// The text size the first zstd frame of `data` declares, if it declares one.
fn declared_size(data: &[u8]) -> Option<u64> {
    zstd::zstd_safe::get_frame_content_size(data).ok().flatten()
}

/// What `decompress` gives, checked against the reader and the save loaders.
fn check_reading(data: &[u8]) {
    let codec = Codec::of(data);
    let whole = compress::decompress(data, LIMIT);
    match &whole {
        Ok(Cow::Borrowed(text)) => {
            assert_eq!(codec, Codec::Plain, "compressed bytes borrowed");
            assert!(*text == data, "plain bytes are not their own text");
        }
        Ok(Cow::Owned(text)) => {
            assert_ne!(codec, Codec::Plain, "plain bytes copied");
            assert!(
                text.len() as u64 <= LIMIT,
                "{} bytes past the limit",
                text.len()
            );
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Compressed, "{e}");
            assert_ne!(codec, Codec::Plain, "plain bytes refused: {e}");
        }
    }

    // The reader, through a small buffer of the input's choosing, agrees.
    let capacity = 1 + data.len() % 61;
    let (found, mut stream) = compress::reader(BufReader::with_capacity(capacity, data), LIMIT)
        .unwrap_or_else(|e| panic!("reader of bytes in memory: {e}"));
    assert_eq!(found, codec);
    let mut text = Vec::new();
    let streamed = stream.read_to_end(&mut text);
    assert!(text.len() as u64 <= LIMIT, "the reader went past the limit");
    let too_long = match (&whole, &streamed) {
        (Ok(whole), Ok(_)) => {
            assert!(whole[..] == text[..], "the reader gives other text");
            false
        }
        (Err(whole), Err(e)) => {
            let described = compress::describe(codec, e, None);
            assert_eq!(described.kind(), ErrorKind::Compressed, "{described}");
            // A stream both too long and damaged may be stopped by either first: how much
            // text a decoder hands out before it finds the damage depends on its buffers.
            e.get_ref().is_some_and(|inner| inner.is::<TooLong>())
                || whole.to_string().contains("decompresses to more than")
        }
        (Err(e), Ok(_)) if codec == Codec::Zstd && e.kind() == ErrorKind::Compressed => {
            // libzstd's streaming decoder, given its input in other pieces (the reader's
            // small buffer against `decompress`'s chunks), may pass a damaged header field
            // the other refuses. Neither hands out other text than the frame holds:
            // `check_compressing` checks both against the text compressed.
            false
        }
        (Err(_), Ok(_))
            if codec == Codec::Zstd && declared_size(data) != Some(text.len() as u64) =>
        {
            // zstd's streaming decoder does not compare a frame's declared size with its
            // text when the last block is empty; its one-pass decoding, which `decompress`
            // uses when the whole frame fits, does. The text is still what the blocks and
            // the checksum say: only the size field lies.
            false
        }
        (Ok(_), Err(e)) if codec == Codec::Plain => {
            // Only plain text is unlimited in `decompress`; the reader limits it too.
            assert!(
                e.get_ref().is_some_and(|inner| inner.is::<TooLong>()),
                "{e}"
            );
            assert!(data.len() as u64 > LIMIT);
            true
        }
        (whole, streamed) => panic!(
            "decompress and the reader disagree: {:?} / {:?}",
            whole.as_ref().err(),
            streamed.as_ref().err()
        ),
    };

    // A head read gives the start of the text.
    let (_, mut stream) =
        compress::reader(BufReader::with_capacity(capacity, data), LIMIT).unwrap();
    let mut head = Vec::new();
    let read = stream.by_ref().take(HEAD as u64).read_to_end(&mut head);
    if let Ok(whole) = &whole {
        read.unwrap_or_else(|e| panic!("a head read of a text that decompresses: {e}"));
        assert!(
            head[..] == whole[..whole.len().min(HEAD)],
            "the head is not the start of the text"
        );
    }

    // Past the limit here, the loaders (whose limit is 1 GiB) could take long: skipped.
    if too_long {
        return;
    }
    let save = Save::from_slice(data);
    let meta = Meta::from_slice(data);
    match &whole {
        Ok(Cow::Owned(text)) if Codec::of(text) == Codec::Plain => {
            // The loaders read the text the bytes hold, and fail the same way.
            let direct = Save::from_slice(text);
            match (&save, &direct) {
                (Ok(a), Ok(b)) => assert_eq!(a, b),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                _ => panic!("a compressed save reads otherwise than its text"),
            }
            let direct = Meta::from_slice(text);
            match (&meta, &direct) {
                (Ok(a), Ok(b)) => assert_eq!(a, b),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                _ => panic!("a compressed save's meta reads otherwise than its text's"),
            }
        }
        Ok(_) => {}
        Err(_) => {
            let e = save
                .as_ref()
                .expect_err("a save from a stream that does not decompress");
            assert_eq!(e.kind(), ErrorKind::Compressed, "{e}");
            let e = meta
                .as_ref()
                .expect_err("a meta from a stream that does not decompress");
            assert_eq!(e.kind(), ErrorKind::Compressed, "{e}");
        }
    }
    if let Ok(save) = &save {
        assert_eq!(meta.as_ref().ok(), Some(&save.meta), "the meta of a save");
    }
}

/// The round trip of `text` through `how`, and the same stream with one byte damaged.
fn check_compressing(text: &[u8], how: Compression, at: usize, mask: u8) {
    let packed = compress::compress(text, how);
    assert_eq!(Codec::of(&packed), how.codec(), "{how}");
    assert!(
        compress::compress(text, how) == packed,
        "{how}: not reproducible"
    );
    match compress::decompress(&packed, LIMIT) {
        Ok(back) => assert!(back[..] == text[..], "{how}: other text back"),
        Err(e) => panic!("{how}: its own stream refused: {e}"),
    }
    let mut back = Vec::new();
    let (_, mut stream) = compress::reader(&packed[..], LIMIT).unwrap();
    stream
        .read_to_end(&mut back)
        .unwrap_or_else(|e| panic!("{how}: the reader refused its own stream: {e}"));
    drop(stream);
    assert!(back[..] == text[..], "{how}: other text from the reader");

    if mask == 0 {
        return;
    }
    let mut damaged = packed;
    let at = at % damaged.len();
    damaged[at] ^= mask;
    match compress::decompress(&damaged, LIMIT) {
        Ok(read) if Codec::of(&damaged) == Codec::Plain => assert!(read[..] == damaged[..]),
        Ok(read) => assert!(
            read[..] == text[..],
            "{how}: byte {at} ^ {mask:#04x} reads as other text"
        ),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Compressed, "{e}"),
    }
    // The reader, through a small buffer, never gives other text either.
    let capacity = 1 + at % 61;
    if let Ok((_, mut stream)) =
        compress::reader(BufReader::with_capacity(capacity, &damaged[..]), LIMIT)
    {
        let mut read = Vec::new();
        if stream.read_to_end(&mut read).is_ok() && Codec::of(&damaged) != Codec::Plain {
            assert!(
                read[..] == text[..],
                "{how}: byte {at} ^ {mask:#04x} streams as other text"
            );
        }
    }
    check_reading(&damaged);
}

fuzz_target!(|data: &[u8]| {
    check_reading(data);
    let Some(split) = data.len().checked_sub(5) else {
        return;
    };
    let (text, choice) = data.split_at(split);
    let codec = if choice[0] & 1 == 0 {
        Codec::Zstd
    } else {
        Codec::Gzip
    };
    let levels = codec.levels();
    let level = levels.start() + i32::from(choice[1]) % (levels.end() - levels.start() + 1);
    let how = Compression::with_level(codec, level).expect("a level in range");
    let at = usize::from(u16::from_le_bytes([choice[2], choice[3]]));
    check_compressing(text, how, at, choice[4]);
});
