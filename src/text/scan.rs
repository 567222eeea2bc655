//! Finding the bytes that matter in text eight at a time, for the reader and the writer.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Eight bytes as one little-endian word, so the first byte is the lowest.
#[inline]
fn word(chunk: &[u8]) -> u64 {
    u64::from_le_bytes(chunk.try_into().expect("an eight-byte chunk"))
}

/// Where the first byte that ends a plain run of string text stands (a quote, a backslash
/// or a control character), counted from `from`.
#[inline]
pub(crate) fn string_run(bytes: &[u8], from: usize) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        let mut pos = from;
        while let Some(chunk) = bytes.get(pos..pos + 16) {
            let found = sse2::string_ends(chunk.try_into().expect("a 16-byte chunk"));
            if found != 0 {
                return Some(pos - from + found.trailing_zeros() as usize);
            }
            pos += 16;
        }
        string_run_by_words(bytes, pos).map(|n| pos - from + n)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    string_run_by_words(bytes, from)
}

/// Sixteen bytes at a time with SSE2, which every x86_64 processor has.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };

    /// A bit for each byte of `chunk` (the first byte the lowest) that ends a plain run of
    /// string text.
    #[inline]
    pub(super) fn string_ends(chunk: [u8; 16]) -> u32 {
        let x: __m128i = bytemuck::cast(chunk);
        // SAFETY: these intrinsics need SSE2, which the build enables (the module is
        // compiled only with `target_feature = "sse2"`, part of every x86_64 target); they
        // compute on values only, no memory is read through a pointer.
        unsafe {
            let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
            // Below 0x20 exactly where the unsigned maximum with 0x1f is 0x1f.
            let low = _mm_set1_epi8(0x1f);
            let control = _mm_cmpeq_epi8(_mm_max_epu8(x, low), low);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
        }
    }
}

/// [`string_run`] eight bytes at a time.
#[inline]
fn string_run_by_words(bytes: &[u8], from: usize) -> Option<usize> {
    let mut pos = from;
    while let Some(chunk) = bytes.get(pos..pos + 8) {
        let found = string_ends_in(word(chunk));
        if found != 0 {
            return Some(pos - from + (found.trailing_zeros() / 8) as usize);
        }
        pos += 8;
    }
    bytes[pos..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|n| pos - from + n)
}

/// Not zero exactly when one of the eight bytes of `x` (the first the lowest) ends a plain
/// run of string text: the high bit of a byte is set where it is a quote, a backslash or
/// below 0x20. Bytes of 0x80 and above never match; a false match (a borrow's) can only
/// follow a true one, so the lowest bit set is always a true one.
#[inline]
pub(crate) fn string_ends_in(x: u64) -> u64 {
    let quote = x ^ (ONES * u64::from(b'"'));
    let backslash = x ^ (ONES * u64::from(b'\\'));
    ((quote.wrapping_sub(ONES) & !quote)
        | (backslash.wrapping_sub(ONES) & !backslash)
        | (x.wrapping_sub(ONES * 0x20) & !x))
        & HIGHS
}

/// Whether `test` is not zero for one of the eight-byte words that together hold every
/// byte of `bytes`, at most 16 of them: two words, which overlap below 16 bytes; under
/// eight, one word of the two overlapping halves, or under four of the first, middle and
/// last bytes and then a plain ASCII letter. For tests of each byte on its own, such as
/// [`string_ends_in`] or the bytes of ASCII.
#[inline]
pub(crate) fn any_short_word(bytes: &[u8], test: impl Fn(u64) -> u64) -> bool {
    debug_assert!(bytes.len() <= 16);
    let n = bytes.len();
    if n >= 8 {
        return test(word(&bytes[..8])) | test(word(&bytes[n - 8..])) != 0;
    }
    let word = if n >= 4 {
        let half = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        u64::from(half(0)) | u64::from(half(n - 4)) << 32
    } else if n > 0 {
        // The first, middle and last bytes are all of them.
        let [first, middle, last] = [bytes[0], bytes[n / 2], bytes[n - 1]];
        u64::from_le_bytes([first, middle, last, b'a', b'a', b'a', b'a', b'a'])
    } else {
        u64::from_le_bytes([b'a'; 8])
    };
    test(word) != 0
}

/// How many spaces stand at `from`.
#[inline]
pub(crate) fn spaces_at(bytes: &[u8], from: usize) -> usize {
    let mut pos = from;
    while let Some(chunk) = bytes.get(pos..pos + 8) {
        let other = word(chunk) ^ (ONES * u64::from(b' '));
        if other != 0 {
            return pos - from + (other.trailing_zeros() / 8) as usize;
        }
        pos += 8;
    }
    pos - from + bytes[pos..].iter().take_while(|&&b| b == b' ').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_run_agrees_with_a_plain_scan() {
        let special = |b: u8| b == b'"' || b == b'\\' || b < 0x20;
        let samples: [&[u8]; 6] = [
            b"plain text without anything",
            b"0123456\"",
            b"\xff\xfe\x80\x9f\xe2\x82\xac then \\ here",
            b"\x1f",
            b"",
            b"abcdefghij\x7fklmnop\x01",
        ];
        for sample in samples {
            for from in 0..=sample.len() {
                let expected = sample[from..].iter().position(|&b| special(b));
                assert_eq!(string_run(sample, from), expected, "{sample:?} from {from}");
            }
        }
        // Every byte at every place of a text longer than two 16-byte chunks, read from
        // each start: in a chunk, in the words after the chunks, in the bytes after those.
        for b in 0..=255u8 {
            for at in 0..40 {
                let mut text = vec![b'x'; 40];
                text[at] = b;
                for from in [0, 1, 7, 8, 15, 16, 17, 23, 30] {
                    let expected = text[from..].iter().position(|&b| special(b));
                    assert_eq!(
                        string_run(&text, from),
                        expected,
                        "byte {b:#x} at {at}, from {from}"
                    );
                    assert_eq!(string_run_by_words(&text, from), expected, "by words");
                }
            }
        }
    }

    #[test]
    fn spaces_are_counted() {
        for n in 0..40 {
            let mut text = vec![b' '; n];
            text.extend_from_slice(b"x   ");
            assert_eq!(spaces_at(&text, 0), n);
        }
        assert_eq!(spaces_at(b"   ", 0), 3);
    }
}
