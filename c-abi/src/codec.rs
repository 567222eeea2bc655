//! Compression across the boundary: the codec constants, a codec and level from C made
//! the library's `Compression`, and compressed bytes given to a text call made text.

use std::borrow::Cow;

use savechain::compress::{self, Codec, Compression};

use crate::error::Failure;

/// Codec: plain text.
pub const SAVECHAIN_CODEC_NONE: u32 = 0;
/// Codec: a zstd frame (magic bytes 28 B5 2F FD), with its content size and checksum.
pub const SAVECHAIN_CODEC_ZSTD: u32 = 1;
/// Codec: a gzip member (magic bytes 1F 8B), with no name and a time of 0.
pub const SAVECHAIN_CODEC_GZIP: u32 = 2;

/// The constant of `codec`.
pub(crate) fn constant(codec: Codec) -> u32 {
    match codec {
        Codec::Zstd => SAVECHAIN_CODEC_ZSTD,
        Codec::Gzip => SAVECHAIN_CODEC_GZIP,
        _ => SAVECHAIN_CODEC_NONE,
    }
}

/// The compression of the constant `codec` at `level` (0: the codec's default, zstd 3 and
/// gzip 6; otherwise zstd 1 to 22, gzip 1 to 9).
pub(crate) fn compression(codec: u32, level: i32) -> Result<Compression, Failure> {
    let codec = match codec {
        SAVECHAIN_CODEC_NONE => Codec::Plain,
        SAVECHAIN_CODEC_ZSTD => Codec::Zstd,
        SAVECHAIN_CODEC_GZIP => Codec::Gzip,
        other => {
            return Err(Failure::Argument(format!(
            "codec is {other}: SAVECHAIN_CODEC_NONE, SAVECHAIN_CODEC_ZSTD or SAVECHAIN_CODEC_GZIP"
        )))
        }
    };
    match (codec, level) {
        (_, 0) => Ok(Compression::new(codec)),
        (Codec::Plain, level) => Err(Failure::Argument(format!(
            "level is {level} for SAVECHAIN_CODEC_NONE, which takes none: pass 0"
        ))),
        (codec, level) => Compression::with_level(codec, level)
            .map_err(|e| Failure::Argument(format!("level: {}", e.message()))),
    }
}

/// The text `bytes` hold: themselves when plain, decompressed (to at most
/// `compress::DEFAULT_LIMIT` bytes) when zstd or gzip.
pub(crate) fn text(bytes: &[u8]) -> Result<Cow<'_, [u8]>, Failure> {
    Ok(compress::decompress(bytes, compress::DEFAULT_LIMIT)?)
}
