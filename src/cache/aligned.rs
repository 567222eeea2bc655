//! Bytes in memory aligned for the cache's 8-byte fields, for caches built in memory (and
//! copies of untrusted bytes, in fuzzing).

/// Bytes aligned to 8.
pub struct Aligned {
    words: Vec<u64>,
    len: usize,
}

impl Aligned {
    /// A copy of `bytes`, aligned.
    pub fn copy_of(bytes: &[u8]) -> Aligned {
        let mut aligned = Aligned::zeroed(bytes.len());
        aligned.bytes_mut().copy_from_slice(bytes);
        aligned
    }

    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Aligned {
        Aligned {
            words: vec![0; len.div_ceil(8)],
            len,
        }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    /// The bytes, to change.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
}
