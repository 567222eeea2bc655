//! The length and hash ([`format::hash`]) of a save's file, its chunks read by offset and
//! hashed on all cores, each core through one reused buffer.
//!
//! Why not the whole file into one buffer: a fresh buffer as large as the save is faulted
//! in page by page as the kernel copies into it, which cost more than the read and the
//! hash together (docs/PERFORMANCE.md, "The binary cache"). Why not a mapping of the
//! save: another program truncating it while it is mapped would kill the process with
//! SIGBUS, and a save is the player's file, not ours. A read sees a truncated or rewritten
//! file as other bytes, which hash to another value: the cache is then refused.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::format::{self, HASH_CHUNK};

/// A file read by offset, from several threads at once.
pub(super) trait ReadAt: Sync {
    /// Its length now.
    fn len_now(&self) -> io::Result<u64>;
    /// Reads into `buf` from offset `at`: the number of bytes read, 0 at the end.
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize>;
}

impl ReadAt for std::fs::File {
    fn len_now(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    #[cfg(unix)]
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, at)
    }

    // Moves the file's cursor, which nothing here uses.
    #[cfg(windows)]
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        std::os::windows::fs::FileExt::seek_read(self, buf, at)
    }
}

/// The number of bytes the file holds, read to its end, and their hash, equal to
/// [`format::hash`] of those bytes read whole.
pub(super) fn hash_file(file: &impl ReadAt) -> io::Result<(u64, [u8; 16])> {
    let len = file.len_now()?;
    match hash_side_by_side(file, len)? {
        Some(hash) => Ok((len, hash)),
        // The file changed size while it was read: read again, in order, to its end.
        None => hash_in_order(file),
    }
}

/// Chunks a core read, by number, and their hashes (`None` for one that ended early).
type Hashed = Vec<(usize, Option<[u8; 16]>)>;

/// The hash of the file's `len` bytes, its chunks shared out among the cores as each is
/// free (one buffer a core, however many chunks); `None` when a chunk ends early or bytes
/// follow the last: the file is no longer `len` bytes long.
fn hash_side_by_side(file: &impl ReadAt, len: u64) -> io::Result<Option<[u8; 16]>> {
    let chunk = HASH_CHUNK as u64;
    let chunks = usize::try_from(len.div_ceil(chunk)).map_err(io::Error::other)?;
    let next = AtomicUsize::new(0);
    let workers = rayon::current_num_threads().min(chunks);
    let found: io::Result<Vec<Hashed>> = (0..workers)
        .into_par_iter()
        .map(|_| {
            let mut buf = vec![0u8; HASH_CHUNK];
            let mut hashes = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= chunks {
                    return Ok(hashes);
                }
                let at = i as u64 * chunk;
                let want = (len - at).min(chunk) as usize;
                let whole = fill_at(file, &mut buf[..want], at)? == want;
                hashes.push((i, whole.then(|| format::chunk_hash(&buf[..want]))));
            }
        })
        .collect();
    let mut hashes: Vec<_> = found?.into_iter().flatten().collect();
    hashes.sort_unstable_by_key(|&(i, _)| i);
    let hashes: Option<Vec<[u8; 16]>> = hashes.into_iter().map(|(_, hash)| hash).collect();
    let ended = fill_at(file, &mut [0], len)? == 0;
    Ok(hashes
        .filter(|_| ended)
        .map(|hashes| format::hash_of_chunks(&hashes)))
}

/// The length and hash of the file read chunk after chunk to its end, on this thread.
fn hash_in_order(file: &impl ReadAt) -> io::Result<(u64, [u8; 16])> {
    let mut buf = vec![0u8; HASH_CHUNK];
    let mut hashes = Vec::new();
    let mut len = 0u64;
    loop {
        let got = fill_at(file, &mut buf, len)?;
        if got > 0 {
            hashes.push(format::chunk_hash(&buf[..got]));
            len += got as u64;
        }
        if got < HASH_CHUNK {
            return Ok((len, format::hash_of_chunks(&hashes)));
        }
    }
}

/// Reads into `buf` from offset `at` until it is full or the file ends; the number of
/// bytes read. Reads that give less than asked only take more reads.
fn fill_at(file: &impl ReadAt, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], at + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes read a few at a time, as a signal or a network file system may give them,
    /// with a length that may not be theirs (the file grew or shrank since it was
    /// measured).
    struct Trickle {
        bytes: Vec<u8>,
        says_len: u64,
        /// Every `interrupt`-th read is interrupted; the others give at most `most` bytes.
        most: usize,
        interrupt: usize,
        reads: AtomicUsize,
    }

    impl Trickle {
        fn new(bytes: Vec<u8>) -> Trickle {
            Trickle {
                says_len: bytes.len() as u64,
                bytes,
                most: 300_007,
                interrupt: 3,
                reads: AtomicUsize::new(0),
            }
        }
    }

    impl ReadAt for Trickle {
        fn len_now(&self) -> io::Result<u64> {
            Ok(self.says_len)
        }

        fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
            if self
                .reads
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(self.interrupt)
            {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let at = (at as usize).min(self.bytes.len());
            let n = buf.len().min(self.most).min(self.bytes.len() - at);
            buf[..n].copy_from_slice(&self.bytes[at..at + n]);
            Ok(n)
        }
    }

    /// Bytes that differ from chunk to chunk, so that a chunk hashed twice or out of
    /// place changes the hash.
    fn bytes(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 + i / 4099) as u8).collect()
    }

    const LENGTHS: [usize; 8] = [
        0,
        1,
        HASH_CHUNK - 1,
        HASH_CHUNK,
        HASH_CHUNK + 1,
        2 * HASH_CHUNK,
        3 * HASH_CHUNK + 5,
        9 * HASH_CHUNK + 17,
    ];

    #[test]
    fn the_hash_of_a_file_is_the_hash_of_its_bytes_at_every_chunk_boundary() {
        for len in LENGTHS {
            let bytes = bytes(len);
            let whole = (len as u64, format::hash(&bytes));
            let file = Trickle::new(bytes);
            assert_eq!(hash_file(&file).unwrap(), whole, "{len} bytes");
            assert_eq!(hash_in_order(&file).unwrap(), whole, "{len} bytes");
        }
    }

    #[test]
    fn a_real_file_hashes_as_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        for len in LENGTHS {
            let path = dir.path().join(format!("{len}.json"));
            let bytes = bytes(len);
            std::fs::write(&path, &bytes).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            let whole = (len as u64, format::hash(&bytes));
            assert_eq!(hash_file(&file).unwrap(), whole, "{len} bytes");
        }
    }

    #[test]
    fn a_file_that_grew_or_shrank_while_read_is_hashed_to_its_end() {
        for len in LENGTHS {
            let bytes = bytes(len);
            let whole = (len as u64, format::hash(&bytes));
            for says_len in [
                0,
                (len as u64).saturating_sub(1),
                len as u64 + 1,
                len as u64 + HASH_CHUNK as u64,
            ] {
                let mut file = Trickle::new(bytes.clone());
                file.says_len = says_len;
                assert_eq!(
                    hash_file(&file).unwrap(),
                    whole,
                    "{len} bytes, {says_len} said"
                );
            }
        }
    }

    #[test]
    fn a_flipped_byte_or_one_more_or_less_changes_the_hash() {
        let bytes = bytes(2 * HASH_CHUNK + 17);
        let (_, hash) = hash_file(&Trickle::new(bytes.clone())).unwrap();
        for at in [0, HASH_CHUNK - 1, HASH_CHUNK, 2 * HASH_CHUNK + 16] {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1;
            assert_ne!(
                hash_file(&Trickle::new(flipped)).unwrap().1,
                hash,
                "at {at}"
            );
        }
        let shorter = bytes[..bytes.len() - 1].to_vec();
        assert_ne!(hash_file(&Trickle::new(shorter)).unwrap().1, hash);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_ne!(hash_file(&Trickle::new(longer)).unwrap().1, hash);
    }

    #[test]
    fn a_failing_read_fails_the_hash() {
        struct Failing;
        impl ReadAt for Failing {
            fn len_now(&self) -> io::Result<u64> {
                Ok(3 * HASH_CHUNK as u64)
            }
            fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
                match at < 2 * HASH_CHUNK as u64 {
                    true => Ok(buf.len()),
                    false => Err(io::Error::other("the disk is gone")),
                }
            }
        }
        let err = hash_file(&Failing).unwrap_err();
        assert_eq!(err.to_string(), "the disk is gone");
    }
}
