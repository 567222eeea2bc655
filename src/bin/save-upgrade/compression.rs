//! `--compress` and `--level`: how the commands that write a save store it.

use savechain::compress::{Codec, Compression};

/// How the saves a command writes are stored.
// No argument group: the commands' own structs are named `Args` too, and clap refuses two
// groups of one name.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub(crate) struct Args {
    /// Store the saves written as zstd or gzip, or as plain text (none). Without it, each
    /// save keeps the compression it has (an output its source's), and a new one is plain.
    #[arg(long, value_name = "CODEC", value_parser = ["zstd", "gzip", "none"])]
    pub compress: Option<String>,
    /// The level of --compress: zstd 1-22 (default 3), gzip 1-9 (default 6).
    #[arg(
        long,
        value_name = "N",
        requires = "compress",
        allow_negative_numbers = true
    )]
    pub level: Option<i32>,
}

impl Args {
    /// The compression asked for, if any; a level out of the codec's range is an error to
    /// report as a usage error.
    pub(crate) fn compression(&self) -> savechain::Result<Option<Compression>> {
        let Some(name) = &self.compress else {
            return Ok(None);
        };
        let codec: Codec = name.parse()?;
        match (codec, self.level) {
            (codec, Some(level)) => Compression::with_level(codec, level).map(Some),
            (codec, None) => Ok(Some(Compression::new(codec))),
        }
    }
}
