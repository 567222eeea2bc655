//! Lossless text spelling of `f64` as a hexadecimal float.
//!
//! Finite numbers are written exactly as glibc's `printf("%a")` writes them:
//! `[-]0x1.<hex fraction>p<signed decimal exponent>` for normal numbers, with
//! trailing zero digits (and a bare dot) dropped, e.g. `0x1p+0`, `-0x1.4p+1`;
//! subnormals as `0x0.<hex>p-1022`; zero as `0x0p+0` / `-0x0p+0`.
//! Infinities are `inf` / `-inf`. NaNs keep their sign and payload: `nan` is the
//! default quiet NaN, any other NaN is `nan:0x<52-bit mantissa field>`.
//!
//! Parsing accepts every hexadecimal literal C's `strtod` accepts (whole string
//! only) and rounds correctly (to nearest, ties to even), giving glibc's result
//! except where glibc itself misrounds (some long subnormal literals, see the
//! libc test); overflow is an error instead of infinity.

use std::fmt;

/// Appends the spelling of `value` to `out`.
pub(crate) fn write(value: f64, out: &mut Vec<u8>) {
    // The longest spelling is "-0x1.fffffffffffffp+1023" (24 bytes).
    let mut buf = [0u8; 32];
    let len = spell(value.to_bits(), &mut buf);
    // A copy of a known length is a few moves, where one of `len` bytes was a call.
    let end = out.len() + len;
    out.extend_from_slice(&buf);
    out.truncate(end);
}

/// The spelling as a String (convenience over `write`).
pub fn format(value: f64) -> String {
    let mut out = Vec::with_capacity(24);
    write(value, &mut out);
    // `spell` emits ASCII only.
    String::from_utf8(out).expect("hexfloat spelling is ASCII")
}

/// Parses a spelling (whole string must be consumed).
pub fn parse(text: &str) -> Result<f64, HexFloatError> {
    let bytes = text.as_bytes();
    if let Some(value) = parse_canonical(bytes) {
        return Ok(value);
    }
    parse_general(bytes)
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// Why a text is not a hexadecimal float savechain reads.
#[non_exhaustive]
pub enum HexFloatError {
    /// Not a hexadecimal float: `at` is the byte offset in the text where it
    /// went wrong, `expected` says what was expected there, e.g. "a hexadecimal
    /// digit", "'0x'", "an exponent digit after 'p'", "end of the number".
    ///
    /// Everything before `at` is ASCII, so `at` is also the (0-based) character
    /// index; `Display` shows it 1-based.
    Malformed {
        /// Where, in bytes from the start.
        at: usize,
        /// What was expected there.
        expected: &'static str,
    },
    /// A finite literal too large for a double (strtod would give infinity).
    /// Never turned into infinity.
    Overflow,
    /// A NaN payload that is zero or does not fit in 52 bits.
    BadNanPayload,
}

impl fmt::Display for HexFloatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HexFloatError::Malformed { at, expected } => write!(
                f,
                "malformed hexadecimal float at character {}: expected {} \
                 (a valid spelling looks like 0x1.8p+3, -0x1p-4, inf or nan)",
                at + 1,
                expected
            ),
            HexFloatError::Overflow => {
                f.write_str("hexadecimal float is too large for a double (it would be infinity)")
            }
            HexFloatError::BadNanPayload => f.write_str(
                "nan payload must be between 0x1 and 0xfffffffffffff \
                 (it is the 52-bit mantissa field of the double)",
            ),
        }
    }
}

impl std::error::Error for HexFloatError {}

impl From<HexFloatError> for crate::Error {
    /// So that `?` works in code that returns savechain's error.
    fn from(e: HexFloatError) -> crate::Error {
        crate::Error::new(crate::ErrorKind::Value, e.to_string())
    }
}

const SIGN_BIT: u64 = 1 << 63;
const FRACTION_MASK: u64 = (1 << 52) - 1;
const EXPONENT_FIELD_MAX: u64 = 0x7ff;
/// Mantissa field of the NaN that arithmetic produces; spelled plain `nan`.
const DEFAULT_NAN_FRACTION: u64 = 1 << 51;
const MIN_NORMAL_EXPONENT: i64 = -1022;
const MAX_EXPONENT: i64 = 1023;

const LOWER_HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes the spelling of the double with these bits into `buf`, returning its length.
fn spell(bits: u64, buf: &mut [u8; 32]) -> usize {
    let mut len = 0;
    if bits & SIGN_BIT != 0 {
        buf[0] = b'-';
        len = 1;
    }
    let exponent_field = (bits >> 52) & EXPONENT_FIELD_MAX;
    let fraction = bits & FRACTION_MASK;

    if exponent_field == EXPONENT_FIELD_MAX {
        if fraction == 0 {
            buf[len..len + 3].copy_from_slice(b"inf");
            return len + 3;
        }
        buf[len..len + 3].copy_from_slice(b"nan");
        len += 3;
        if fraction != DEFAULT_NAN_FRACTION {
            buf[len..len + 3].copy_from_slice(b":0x");
            len += 3;
            let digit_count = (64 - fraction.leading_zeros() as usize).div_ceil(4);
            for k in (0..digit_count).rev() {
                buf[len] = LOWER_HEX[((fraction >> (4 * k)) & 0xf) as usize];
                len += 1;
            }
        }
        return len;
    }

    let (leading_digit, exponent) = match (exponent_field, fraction) {
        (0, 0) => (b'0', 0),
        (0, _) => (b'0', MIN_NORMAL_EXPONENT),
        _ => (b'1', exponent_field as i64 - MAX_EXPONENT),
    };
    buf[len..len + 3].copy_from_slice(&[b'0', b'x', leading_digit]);
    len += 3;

    if fraction != 0 {
        buf[len] = b'.';
        len += 1;
        // 52 bits are 13 nibbles, all written (sixteen bytes, the last three overwritten
        // or dropped); the length then drops the all-zero nibbles at the end.
        let sixteen: &mut [u8; 16] = (&mut buf[len..len + 16]).try_into().expect("16 bytes");
        *sixteen = hex_digits(fraction << 12);
        len += 13 - (fraction.trailing_zeros() as usize) / 4;
    }

    buf[len] = b'p';
    buf[len + 1] = if exponent < 0 { b'-' } else { b'+' };
    len += 2;
    let mut magnitude = exponent.unsigned_abs();
    let mut digits = [0u8; 4];
    let mut digit_count = 0;
    loop {
        digits[digit_count] = b'0' + (magnitude % 10) as u8;
        digit_count += 1;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    for k in (0..digit_count).rev() {
        buf[len] = digits[k];
        len += 1;
    }
    len
}

/// The sixteen nibbles of `nibbles` as lowercase hexadecimal digits, the highest first.
#[inline]
fn hex_digits(nibbles: u64) -> [u8; 16] {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    return sse2::hex_digits(nibbles);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    hex_digits_one_at_a_time(nibbles)
}

/// [`hex_digits`] a digit at a time, for targets without SSE2.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline]
fn hex_digits_one_at_a_time(nibbles: u64) -> [u8; 16] {
    let mut digits = [0u8; 16];
    for (k, digit) in digits.iter_mut().enumerate() {
        *digit = LOWER_HEX[((nibbles >> (60 - 4 * k)) & 0xf) as usize];
    }
    digits
}

const NOT_HEX: u8 = 0xff;

/// Value of each byte as a hexadecimal digit, or `NOT_HEX`.
static HEX_VALUE: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// Decodes the spelling `write` produces for normal numbers, which needs no
/// rounding; returns `None` for anything else so the general parser decides.
#[inline]
fn parse_canonical(bytes: &[u8]) -> Option<f64> {
    match parse_canonical_prefix(bytes) {
        Some((value, len)) if len == bytes.len() => Some(value),
        _ => None,
    }
}

/// Like `parse_canonical`, for a spelling at the start of `bytes` that may be followed by
/// other text: the double and how many bytes it took. Lets the text reader decode a double
/// in the same pass that finds its end. Whatever follows must be checked by the caller: a
/// longer run of digits means the spelling was not canonical after all.
#[inline]
pub(crate) fn parse_canonical_prefix(bytes: &[u8]) -> Option<(f64, usize)> {
    let negative = bytes.first() == Some(&b'-');
    let rest = &bytes[usize::from(negative)..];
    if !rest.starts_with(b"0x1") {
        return None;
    }
    let (fraction, mut i) = match rest.get(3) {
        Some(b'.') => {
            let (fraction, count) = match rest.get(4..20) {
                Some(sixteen) => fraction_digits_at_once(sixteen)?,
                // Near the end of the text: the same, on the bytes left and zeros, which
                // are neither digits nor 'p'.
                None => {
                    let mut sixteen = [0u8; 16];
                    let tail = &rest[4..];
                    sixteen[..tail.len()].copy_from_slice(tail);
                    fraction_digits_at_once(&sixteen)?
                }
            };
            (fraction, 4 + count)
        }
        Some(b'p') => (0, 3),
        _ => return None,
    };
    // Always at the 'p' here: the digits end at one.
    let negative_exponent = match rest.get(i + 1)? {
        b'-' => true,
        b'+' => false,
        _ => return None,
    };
    i += 2;
    let digits_start = i;
    let mut exponent = 0i64;
    while let Some(&byte) = rest.get(i) {
        if !byte.is_ascii_digit() || i - digits_start == 4 {
            break;
        }
        exponent = exponent * 10 + (byte - b'0') as i64;
        i += 1;
    }
    if i == digits_start {
        return None;
    }
    if negative_exponent {
        exponent = -exponent;
    }
    if !(MIN_NORMAL_EXPONENT..=MAX_EXPONENT).contains(&exponent) {
        return None;
    }
    let sign = if negative { SIGN_BIT } else { 0 };
    let exponent_field = (exponent + MAX_EXPONENT) as u64;
    Some((
        f64::from_bits(sign | exponent_field << 52 | fraction),
        usize::from(negative) + i,
    ))
}

/// The hexadecimal digits (at most 13, either case) at the start of `sixteen`, up to the
/// `p` that must follow them, read sixteen bytes at a time: the 52-bit fraction field they
/// spell (the first digit its highest four bits, missing digits zeros) and how many there
/// are. `None` when `p` is not among the first 14 bytes or a byte before it is not a
/// hexadecimal digit. Canonical spellings drop trailing zeros, so the
/// count varies, and a digit at a time cost a branch each.
#[inline]
fn fraction_digits_at_once(sixteen: &[u8]) -> Option<(u64, usize)> {
    let sixteen: &[u8; 16] = sixteen.try_into().ok()?;
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    return sse2::fraction_digits(sixteen);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    fraction_digits_by_words(sixteen)
}

/// [`fraction_digits_at_once`] in one SSE2 register, which every x86_64 processor has: on
/// canada's doubles the two-word version below was a third of the whole load.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi8, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8,
        _mm_cvtsi128_si64, _mm_cvtsi64_si128, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_packus_epi16, _mm_set1_epi16, _mm_set1_epi8, _mm_setr_epi8, _mm_slli_epi16,
        _mm_srli_epi16, _mm_unpacklo_epi8,
    };

    /// [`super::hex_digits`]: each byte split into its two nibbles, interleaved in order,
    /// then each nibble to its digit.
    #[inline]
    pub(super) fn hex_digits(nibbles: u64) -> [u8; 16] {
        // SAFETY: these intrinsics need SSE2, which the build enables (the module is
        // compiled only with `target_feature = "sse2"`, part of every x86_64 target); they
        // compute on values only, no memory is read or written through a pointer.
        unsafe {
            let bytes = _mm_cvtsi64_si128(nibbles.swap_bytes() as i64);
            let low = _mm_and_si128(bytes, _mm_set1_epi8(0x0f));
            let high = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0f));
            let values = _mm_unpacklo_epi8(high, low);
            let letters = _mm_and_si128(
                _mm_cmpgt_epi8(values, _mm_set1_epi8(9)),
                _mm_set1_epi8((b'a' - b'0' - 10) as i8),
            );
            let digits = _mm_add_epi8(_mm_add_epi8(values, _mm_set1_epi8(b'0' as i8)), letters);
            bytemuck::cast(digits)
        }
    }

    #[inline]
    pub(super) fn fraction_digits(sixteen: &[u8; 16]) -> Option<(u64, usize)> {
        // SAFETY: these intrinsics need SSE2, which the build enables (the module is
        // compiled only with `target_feature = "sse2"`, part of every x86_64 target); the
        // one load reads the sixteen bytes `sixteen` borrows (unaligned loads allowed), the
        // rest compute on values only.
        unsafe {
            let x = _mm_loadu_si128(sixteen.as_ptr().cast::<__m128i>());
            let byte = |b: u8| _mm_set1_epi8(b as i8);
            let is_p = _mm_movemask_epi8(_mm_cmpeq_epi8(x, byte(b'p'))) as u32;
            let count = is_p.trailing_zeros();
            if count > 13 {
                return None;
            }
            // Signed compares: bytes from 0x80 up are negative, so in neither range. Letters
            // are compared folded to lower case, digits as they are (0x10 | 0x20 is '0').
            let digit = _mm_and_si128(
                _mm_cmpgt_epi8(x, byte(b'0' - 1)),
                _mm_cmplt_epi8(x, byte(b'9' + 1)),
            );
            let folded = _mm_or_si128(x, byte(0x20));
            let letter = _mm_and_si128(
                _mm_cmpgt_epi8(folded, byte(b'a' - 1)),
                _mm_cmplt_epi8(folded, byte(b'f' + 1)),
            );
            let valid = _mm_movemask_epi8(_mm_or_si128(digit, letter)) as u32;
            let wanted = (1u32 << count) - 1;
            if valid & wanted != wanted {
                return None;
            }
            // Each digit to its value ('a' and 'A' are 0x_1 plus 9), zero from the 'p' on.
            let index = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            let before_p = _mm_cmplt_epi8(index, byte(count as u8));
            let nibbles = _mm_and_si128(
                before_p,
                _mm_add_epi8(_mm_and_si128(x, byte(0x0f)), _mm_and_si128(letter, byte(9))),
            );
            // Two digits to a byte (the first the high nibble), then the eight bytes in order.
            let pairs = _mm_and_si128(
                _mm_or_si128(_mm_slli_epi16(nibbles, 4), _mm_srli_epi16(nibbles, 8)),
                _mm_set1_epi16(0x00ff),
            );
            let packed = _mm_cvtsi128_si64(_mm_packus_epi16(pairs, pairs)) as u64;
            // Sixteen digits, the first the highest; the field holds the first thirteen.
            Some((packed.swap_bytes() >> 12, count as usize))
        }
    }
}

/// [`fraction_digits_at_once`] in two 64-bit words, for targets without SSE2.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline]
fn fraction_digits_by_words(sixteen: &[u8; 16]) -> Option<(u64, usize)> {
    const ONES: u128 = u128::from_ne_bytes([0x01; 16]);
    const LOW7: u128 = ONES * 0x7f;
    const HIGH: u128 = ONES * 0x80;
    let x = u128::from_be_bytes(*sixteen);
    // Each byte equal to 'p' becomes 0x80, exactly (no carries between bytes).
    let diff = x ^ (ONES * u128::from(b'p'));
    let is_p = !(((diff & LOW7) + LOW7) | diff | LOW7);
    let count = (is_p.leading_zeros() / 8) as usize;
    if count > 13 {
        return None;
    }
    // The digits, with '0' in place of everything from the 'p' on.
    let keep = u128::MAX.checked_shl(8 * (16 - count) as u32).unwrap_or(0);
    let x = (x & keep) | ((ONES * u128::from(b'0')) & !keep);
    // Every byte must be 0-9, a-f or A-F: in range when adding (0x80 - low) sets the high
    // bit and adding (0x7f - high) does not; bytes from 0x80 up are refused first.
    let low7 = x & LOW7;
    let between = |low: u8, high: u8| {
        (low7 + ONES * u128::from(0x80 - low)) & !(low7 + ONES * u128::from(0x7f - high)) & HIGH
    };
    let folded = (x | (ONES * 0x20)) & LOW7;
    let letters = (folded + ONES * u128::from(0x80 - b'a'))
        & !(folded + ONES * u128::from(0x7f - b'f'))
        & HIGH;
    if x & HIGH != 0 || (between(b'0', b'9') | letters) != HIGH {
        return None;
    }
    // Each byte to its value ('a' and 'A' are 0x_1 plus 9), then sixteen nibbles into 64 bits.
    let mut v = (x & (ONES * 0x0f)) + ((x >> 6) & ONES) * 9;
    v = (v | (v >> 4))
        & u128::from_ne_bytes([
            0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0,
        ]);
    v = (v | (v >> 8)) & (u128::MAX / 0xffff_ffff * 0xffff);
    v = (v | (v >> 16)) & (u128::MAX / 0xffff_ffff_ffff_ffff * 0xffff_ffff);
    v = (v | (v >> 32)) & u128::from(u64::MAX);
    // Sixteen digits, the first the highest; the field holds the first thirteen.
    Some(((v as u64) >> 12, count))
}

fn malformed<T>(at: usize, expected: &'static str) -> Result<T, HexFloatError> {
    Err(HexFloatError::Malformed { at, expected })
}

/// Full strtod-compatible parser: any digit count, optional dot and exponent,
/// correct rounding, and the special spellings.
fn parse_general(bytes: &[u8]) -> Result<f64, HexFloatError> {
    let (sign, start) = match bytes.first() {
        Some(b'-') => (SIGN_BIT, 1),
        Some(b'+') => (0, 1),
        _ => (0, 0),
    };
    let rest = &bytes[start..];
    if rest.len() >= 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        parse_hex_literal(bytes, start + 2, sign)
    } else {
        parse_special(bytes, start, sign)
    }
}

/// Beyond this the exponent only saturates: it is far outside the range where
/// the digit count of any real string could bring the value back into range.
const EXPONENT_SATURATION: i64 = 1 << 50;

fn parse_hex_literal(bytes: &[u8], digits_start: usize, sign: u64) -> Result<f64, HexFloatError> {
    let mut digits = Digits::default();
    let mut i = digits.integer_part(bytes, digits_start);
    let has_dot = bytes.get(i) == Some(&b'.');
    if has_dot {
        i = digits.fraction_part(bytes, i + 1);
    }
    if digits.count == 0 {
        return malformed(i, "a hexadecimal digit");
    }
    let exponent = match bytes.get(i) {
        None => 0,
        Some(b'p' | b'P') => parse_exponent(bytes, i + 1)?,
        Some(_) if has_dot => {
            return malformed(i, "a hexadecimal digit, 'p' or the end of the number");
        }
        Some(_) => {
            return malformed(i, "a hexadecimal digit, '.', 'p' or the end of the number");
        }
    };
    if digits.mantissa == 0 {
        return Ok(f64::from_bits(sign));
    }
    round_to_double(
        sign,
        digits.mantissa,
        digits.sticky,
        exponent.saturating_add(digits.scale),
    )
}

/// The significant digits of a literal as they are read. The first 16 go into
/// `mantissa`; later ones only matter for rounding, so they fold into `sticky` (and scale
/// the value by 16 each when they are integer digits).
#[derive(Default)]
struct Digits {
    mantissa: u64,
    sticky: bool,
    /// The power of two the mantissa is scaled by.
    scale: i64,
    count: usize,
}

impl Digits {
    /// Reads integer digits from `i`; returns where they end.
    fn integer_part(&mut self, bytes: &[u8], mut i: usize) -> usize {
        while let Some(digit) = bytes.get(i).map(|&b| HEX_VALUE[b as usize]) {
            if digit == NOT_HEX {
                break;
            }
            if self.mantissa >> 60 == 0 {
                self.mantissa = self.mantissa << 4 | digit as u64;
            } else {
                self.sticky |= digit != 0;
                self.scale += 4;
            }
            self.count += 1;
            i += 1;
        }
        i
    }

    /// Reads fraction digits from `i` (after the dot); returns where they end.
    fn fraction_part(&mut self, bytes: &[u8], mut i: usize) -> usize {
        while let Some(digit) = bytes.get(i).map(|&b| HEX_VALUE[b as usize]) {
            if digit == NOT_HEX {
                break;
            }
            if self.mantissa >> 60 == 0 {
                self.mantissa = self.mantissa << 4 | digit as u64;
                self.scale -= 4;
            } else {
                self.sticky |= digit != 0;
            }
            self.count += 1;
            i += 1;
        }
        i
    }
}

/// The binary exponent after `p`, from `i` to the end of the literal; huge exponents
/// saturate (the result is then zero or an overflow either way).
fn parse_exponent(bytes: &[u8], mut i: usize) -> Result<i64, HexFloatError> {
    let negative = match bytes.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut exponent: i64 = 0;
    while let Some(&byte) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
        if exponent < EXPONENT_SATURATION {
            exponent = exponent * 10 + (byte - b'0') as i64;
        }
        i += 1;
    }
    if i == start {
        return malformed(i, "an exponent digit after 'p'");
    }
    if i != bytes.len() {
        return malformed(i, "end of the number");
    }
    Ok(if negative { -exponent } else { exponent })
}

fn round_to_double(
    sign: u64,
    mantissa: u64,
    sticky: bool,
    binary_exponent: i64,
) -> Result<f64, HexFloatError> {
    let leading_zeros = mantissa.leading_zeros();
    let normalized = mantissa << leading_zeros;
    // Exponent of the leading one bit. When `sticky` is set the mantissa has
    // 16 digits, so the shift is at most 3 bits and stays below the round bit.
    let mut top_exponent = binary_exponent - leading_zeros as i64 + 63;
    if top_exponent > MAX_EXPONENT {
        return Err(HexFloatError::Overflow);
    }

    if top_exponent >= MIN_NORMAL_EXPONENT {
        let mut significand = normalized >> 11;
        if rounds_up(normalized & 0x7ff, 0x400, sticky, significand) {
            significand += 1;
            if significand == 1 << 53 {
                significand >>= 1;
                top_exponent += 1;
                if top_exponent > MAX_EXPONENT {
                    return Err(HexFloatError::Overflow);
                }
            }
        }
        let exponent_field = (top_exponent + MAX_EXPONENT) as u64;
        return Ok(f64::from_bits(
            sign | exponent_field << 52 | (significand & FRACTION_MASK),
        ));
    }

    // Subnormal: count in units of 2^-1074. A leading bit at 2^-1023 is unit
    // 2^51, i.e. `normalized >> 12`.
    let shift = -1011 - top_exponent;
    if shift > 64 {
        // Less than half the smallest subnormal.
        return Ok(f64::from_bits(sign));
    }
    let (units, rest, half) = if shift == 64 {
        (0, normalized, 1 << 63)
    } else {
        (
            normalized >> shift,
            normalized & ((1 << shift) - 1),
            1 << (shift - 1),
        )
    };
    let units = units + rounds_up(rest, half, sticky, units) as u64;
    // Rounding up to 2^52 units gives the smallest normal's bits, as wanted.
    Ok(f64::from_bits(sign | units))
}

/// Round-to-nearest-even decision given the dropped bits `rest`, the value of
/// half a unit, and whether anything nonzero lies below `rest`.
#[inline]
fn rounds_up(rest: u64, half: u64, sticky: bool, kept: u64) -> bool {
    rest > half || (rest == half && (sticky || kept & 1 == 1))
}

/// `inf`, `infinity`, `nan` and `nan:0x<payload>`, case-insensitively.
fn parse_special(bytes: &[u8], start: usize, sign: u64) -> Result<f64, HexFloatError> {
    let rest = &bytes[start..];
    let starts_with =
        |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);

    if starts_with(b"inf") {
        let end = if starts_with(b"infinity") {
            start + 8
        } else {
            start + 3
        };
        if end != bytes.len() {
            return malformed(end, "end of the number");
        }
        return Ok(f64::from_bits(sign | EXPONENT_FIELD_MAX << 52));
    }
    if !starts_with(b"nan") {
        return malformed(start, "'0x'");
    }

    let mut i = start + 3;
    if i == bytes.len() {
        return Ok(f64::from_bits(
            sign | EXPONENT_FIELD_MAX << 52 | DEFAULT_NAN_FRACTION,
        ));
    }
    if bytes[i] != b':' {
        return malformed(i, "':0x' or the end of the number");
    }
    i += 1;
    if !(bytes.get(i) == Some(&b'0') && bytes.get(i + 1).is_some_and(|b| b | 0x20 == b'x')) {
        return malformed(i, "'0x'");
    }
    i += 2;
    let payload_start = i;
    let mut payload = 0u64;
    let mut too_big = false;
    while let Some(&byte) = bytes.get(i) {
        let digit = HEX_VALUE[byte as usize];
        if digit == NOT_HEX {
            break;
        }
        payload = payload << 4 | digit as u64;
        too_big |= payload > FRACTION_MASK;
        i += 1;
    }
    if i == payload_start {
        return malformed(i, "a hexadecimal digit");
    }
    if i != bytes.len() {
        return malformed(i, "a hexadecimal digit or the end of the number");
    }
    if too_big || payload == 0 {
        return Err(HexFloatError::BadNanPayload);
    }
    Ok(f64::from_bits(sign | EXPONENT_FIELD_MAX << 52 | payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(text: &str) -> u64 {
        match parse(text) {
            Ok(value) => value.to_bits(),
            Err(error) => panic!("{text:?} failed: {error}"),
        }
    }

    fn assert_malformed(text: &str, at: usize, expected: &str) {
        match parse(text) {
            Err(HexFloatError::Malformed {
                at: got_at,
                expected: got,
            }) => {
                assert_eq!((got_at, got), (at, expected), "for {text:?}");
            }
            other => panic!("{text:?} gave {other:?}, wanted Malformed"),
        }
    }

    #[test]
    fn writes_examples() {
        let cases: &[(f64, &str)] = &[
            (1.0, "0x1p+0"),
            (0.1, "0x1.999999999999ap-4"),
            (-2.5, "-0x1.4p+1"),
            (f64::MAX, "0x1.fffffffffffffp+1023"),
            (f64::MIN, "-0x1.fffffffffffffp+1023"),
            (f64::MIN_POSITIVE, "0x1p-1022"),
            (f64::from_bits(1), "0x0.0000000000001p-1022"),
            (f64::from_bits(FRACTION_MASK), "0x0.fffffffffffffp-1022"),
            (f64::from_bits(1 << 51), "0x0.8p-1022"),
            (0.0, "0x0p+0"),
            (-0.0, "-0x0p+0"),
            (12.0, "0x1.8p+3"),
            (0.0625, "0x1p-4"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-f64::NAN, "-nan"),
            (f64::from_bits(0x7ff0000000000001), "nan:0x1"),
            (f64::from_bits(0x7ff8000000000001), "nan:0x8000000000001"),
            (f64::from_bits(0xfff0000000000002), "-nan:0x2"),
            (f64::from_bits(0x7fffffffffffffff), "nan:0xfffffffffffff"),
        ];
        for &(value, spelling) in cases {
            assert_eq!(format(value), spelling);
            assert_eq!(bits(spelling), value.to_bits(), "{spelling}");
        }
    }

    #[test]
    fn write_appends() {
        let mut out = b"[".to_vec();
        write(1.0, &mut out);
        out.push(b',');
        write(-0.0, &mut out);
        assert_eq!(out, b"[0x1p+0,-0x0p+0");
    }

    #[test]
    fn parses_strtod_forms() {
        let cases: &[(&str, f64)] = &[
            ("0x1p3", 8.0),
            ("0x.8p1", 1.0),
            ("0x1.p0", 1.0),
            ("0X1P0", 1.0),
            ("+0x1p0", 1.0),
            ("0x0001.8p0", 1.5),
            ("0x1.8", 1.5),
            ("0x10", 16.0),
            ("0xA.bCp0", 10.734375),
            ("0x.1", 0.0625),
            ("0x1p+0", 1.0),
            ("0x1p-0", 1.0),
            ("0xc.ccccccccccccccdp-7", 0.1),
            ("0x3.3333333333334p-5", 0.1),
            ("0x0.000000000000000000000000000001p+120", 1.0),
            ("0x100000000000000000000000000000000p-128", 1.0),
            ("0x1p-1074", f64::from_bits(1)),
        ];
        for &(text, value) in cases {
            assert_eq!(bits(text), value.to_bits(), "{text}");
        }
    }

    #[test]
    fn zeros_keep_sign_with_any_exponent() {
        assert_eq!(bits("0x0p+0"), 0);
        assert_eq!(bits("-0x0p+0"), SIGN_BIT);
        assert_eq!(bits("-0x0.000p+99999999999999999999"), SIGN_BIT);
        assert_eq!(bits("0x000.p-99999999999999999999"), 0);
        assert_eq!(bits("-0x.0"), SIGN_BIT);
    }

    #[test]
    fn huge_exponents_saturate() {
        assert_eq!(
            parse("0x1p+99999999999999999999"),
            Err(HexFloatError::Overflow)
        );
        assert_eq!(bits("0x1p-99999999999999999999"), 0);
        assert_eq!(bits("-0x1p-99999999999999999999"), SIGN_BIT);
        let long_exponent = format!("0x1p-{}", "9".repeat(500));
        assert_eq!(bits(&long_exponent), 0);
    }

    #[test]
    fn rounds_ties_to_even_at_53_bits() {
        // 1 + 2^-53 is exactly half an ulp above 1: tie goes to the even 1.
        assert_eq!(bits("0x1.00000000000008p0"), 1.0f64.to_bits());
        // Just above the tie rounds up.
        assert_eq!(
            bits("0x1.00000000000008000000000000000001p0"),
            0x3ff0000000000001
        );
        assert_eq!(bits("0x1.00000000000009p0"), 0x3ff0000000000001);
        // Odd last bit: the tie rounds up to even.
        assert_eq!(bits("0x1.00000000000018p0"), 0x3ff0000000000002);
        assert_eq!(
            bits("0x1.00000000000017fffffffffffffffffffp0"),
            0x3ff0000000000001
        );
        // Rounding up carries into the exponent.
        assert_eq!(bits("0x1.fffffffffffff8p0"), 2.0f64.to_bits());
        // Many digits after a tie position: sticky must see the far one.
        let far = format!("0x1.00000000000008{}1p0", "0".repeat(300));
        assert_eq!(bits(&far), 0x3ff0000000000001);
        let zeros = format!("0x1.00000000000008{}p0", "0".repeat(300));
        assert_eq!(bits(&zeros), 0x3ff0000000000000);
        // Integer digits beyond 16 scale the value.
        let big = format!("0x1{}p0", "0".repeat(40));
        assert_eq!(bits(&big), (2.0f64).powi(160).to_bits());
    }

    #[test]
    fn overflow_boundary() {
        assert_eq!(bits("0x1.fffffffffffff7p+1023"), f64::MAX.to_bits());
        assert_eq!(
            bits("0x1.fffffffffffff7ffffffffffp+1023"),
            f64::MAX.to_bits()
        );
        assert_eq!(
            parse("0x1.fffffffffffff8p+1023"),
            Err(HexFloatError::Overflow)
        );
        assert_eq!(
            parse("-0x1.fffffffffffff8p+1023"),
            Err(HexFloatError::Overflow)
        );
        assert_eq!(parse("0x1p+1024"), Err(HexFloatError::Overflow));
        assert_eq!(parse("0x2p+1023"), Err(HexFloatError::Overflow));
        assert_eq!(bits("0x0.fffffffffffff8p+1024"), f64::MAX.to_bits());
        assert_eq!(bits("-0x1.fffffffffffffp+1023"), f64::MIN.to_bits());
    }

    #[test]
    fn underflow_into_subnormals() {
        assert_eq!(bits("0x1p-1022"), f64::MIN_POSITIVE.to_bits());
        assert_eq!(bits("0x1p-1023"), 1 << 51);
        assert_eq!(bits("0x1p-1074"), 1);
        // Half the smallest subnormal is a tie: to even, i.e. zero.
        assert_eq!(bits("0x1p-1075"), 0);
        assert_eq!(bits("-0x1p-1075"), SIGN_BIT);
        assert_eq!(bits("0x1.0000000000001p-1075"), 1);
        assert_eq!(bits(&format!("0x1.{}1p-1075", "0".repeat(200))), 1);
        assert_eq!(bits("0x1p-1076"), 0);
        assert_eq!(bits("0x1.fffffffffffffp-1076"), 0);
        // 1.5 units: tie between 1 and 2 goes to 2; 2.5 units goes to 2.
        assert_eq!(bits("0x1.8p-1074"), 2);
        assert_eq!(bits("0x1.4p-1073"), 2);
        assert_eq!(bits("0x1.4000000000001p-1073"), 3);
        // Largest subnormal and rounding up into the smallest normal.
        assert_eq!(bits("0x0.fffffffffffffp-1022"), FRACTION_MASK);
        assert_eq!(bits("0x0.fffffffffffff8p-1022"), 1 << 52);
        assert_eq!(bits("0x0.fffffffffffff7ffp-1022"), FRACTION_MASK);
        assert_eq!(bits("0x1.ffffffffffffep-1023"), FRACTION_MASK);
        // Ties in the middle of the subnormal range: at 2^-1023 the unit is
        // 2^-51 of the leading bit.
        assert_eq!(bits("0x1.0000000000001p-1023"), 1 << 51);
        assert_eq!(bits("0x1.0000000000003p-1023"), (1 << 51) + 2);
        // Just above a tie, with only the 54th significant bit past it: glibc
        // 2.36 strtod drops that bit for subnormal results and rounds down.
        assert_eq!(bits("0x1.00000000000018p-1023"), (1 << 51) + 1);
        assert_eq!(bits("0x1.00000000000008p-1075"), 1);
    }

    #[test]
    fn special_spellings() {
        let inf = f64::INFINITY.to_bits();
        for text in ["inf", "INF", "Infinity", "+inf", "iNfInItY"] {
            assert_eq!(bits(text), inf, "{text}");
        }
        assert_eq!(bits("-inf"), f64::NEG_INFINITY.to_bits());
        assert_eq!(bits("-INFINITY"), f64::NEG_INFINITY.to_bits());
        assert_eq!(bits("nan"), 0x7ff8000000000000);
        assert_eq!(bits("NaN"), 0x7ff8000000000000);
        assert_eq!(bits("+nan"), 0x7ff8000000000000);
        assert_eq!(bits("-nan"), 0xfff8000000000000);
        assert_eq!(bits("nan:0x1"), 0x7ff0000000000001);
        assert_eq!(bits("NAN:0XABC"), 0x7ff0000000000abc);
        assert_eq!(bits("-nan:0x000fffffffffffff"), 0xffffffffffffffff);
        assert_eq!(bits("nan:0x8000000000000"), 0x7ff8000000000000);
        assert_eq!(parse("nan:0x0"), Err(HexFloatError::BadNanPayload));
        assert_eq!(
            parse("nan:0x10000000000000"),
            Err(HexFloatError::BadNanPayload)
        );
        assert_eq!(
            parse("nan:0xffffffffffffffffffff"),
            Err(HexFloatError::BadNanPayload)
        );
    }

    #[test]
    fn malformed_inputs() {
        assert_malformed("", 0, "'0x'");
        assert_malformed("-", 1, "'0x'");
        assert_malformed("1.5", 0, "'0x'");
        assert_malformed(" 0x1p0", 0, "'0x'");
        assert_malformed("+-0x1p0", 1, "'0x'");
        assert_malformed("0x", 2, "a hexadecimal digit");
        assert_malformed("0x.", 3, "a hexadecimal digit");
        assert_malformed("0xp3", 2, "a hexadecimal digit");
        assert_malformed("-0x.p3", 4, "a hexadecimal digit");
        assert_malformed("0x1p", 4, "an exponent digit after 'p'");
        assert_malformed("0x1p+", 5, "an exponent digit after 'p'");
        assert_malformed("0x1p-x", 5, "an exponent digit after 'p'");
        assert_malformed(
            "0x1q",
            3,
            "a hexadecimal digit, '.', 'p' or the end of the number",
        );
        assert_malformed(
            "0x1.8.",
            5,
            "a hexadecimal digit, 'p' or the end of the number",
        );
        assert_malformed(
            "0x1 ",
            3,
            "a hexadecimal digit, '.', 'p' or the end of the number",
        );
        assert_malformed("0x1p0 ", 5, "end of the number");
        assert_malformed("0x1p1.5", 5, "end of the number");
        assert_malformed("0x1.8p+3é", 8, "end of the number");
        assert_malformed("infin", 3, "end of the number");
        assert_malformed("nan(1)", 3, "':0x' or the end of the number");
        assert_malformed("nan:", 4, "'0x'");
        assert_malformed("nan:1", 4, "'0x'");
        assert_malformed("nan:0x", 6, "a hexadecimal digit");
        assert_malformed(
            "nan:0x1g",
            7,
            "a hexadecimal digit or the end of the number",
        );
        assert_malformed("0x1.ffffffffffffffp+1023 ", 24, "end of the number");
    }

    #[test]
    fn error_messages() {
        let error = parse("0x1.g").unwrap_err();
        assert_eq!(
            error.to_string(),
            "malformed hexadecimal float at character 5: expected a hexadecimal digit, 'p' or \
             the end of the number (a valid spelling looks like 0x1.8p+3, -0x1p-4, inf or nan)"
        );
        assert_eq!(
            HexFloatError::Overflow.to_string(),
            "hexadecimal float is too large for a double (it would be infinity)"
        );
        assert!(HexFloatError::BadNanPayload
            .to_string()
            .starts_with("nan payload"));
        let _: &dyn std::error::Error = &error;
    }

    #[test]
    fn sixteen_digits_at_once_agree_with_one_at_a_time() {
        // The reference: a digit at a time, up to 'p', at most 13.
        let reference = |bytes: &[u8]| -> Option<(u64, usize)> {
            let count = bytes.iter().position(|&b| b == b'p')?;
            if count > 13 {
                return None;
            }
            let mut value = 0u64;
            for &b in &bytes[..count] {
                let digit = HEX_VALUE[b as usize];
                if digit == NOT_HEX {
                    return None;
                }
                value = value << 4 | u64::from(digit);
            }
            Some((value << (4 * (13 - count)), count))
        };
        let digits = b"0123456789abcdefABCDEF";
        for count in 0..=15 {
            for at in 0..count.max(1) {
                for byte in 0..=255u8 {
                    let mut sixteen = [b'7'; 16];
                    for (i, slot) in sixteen.iter_mut().enumerate().take(count) {
                        *slot = digits[(i * 7 + count) % digits.len()];
                    }
                    if count > 0 {
                        sixteen[at] = byte;
                    }
                    if count < 16 {
                        sixteen[count] = b'p';
                    }
                    let expected = reference(&sixteen);
                    let text = String::from_utf8_lossy(&sixteen);
                    assert_eq!(fraction_digits_at_once(&sixteen), expected, "{text}");
                    assert_eq!(fraction_digits_by_words(&sixteen), expected, "{text}");
                }
            }
        }
    }

    #[test]
    fn canonical_fast_path_agrees_with_general_parser() {
        let mut state = 0x1234_5678_9abc_def0u64;
        for _ in 0..20_000 {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let value = f64::from_bits(z ^ (z >> 31));
            let text = format(value);
            let general = parse_general(text.as_bytes()).map(f64::to_bits);
            assert_eq!(general, Ok(value.to_bits()), "{text}");
            if let Some(fast) = parse_canonical(text.as_bytes()) {
                assert_eq!(fast.to_bits(), value.to_bits(), "{text}");
            }
        }
        // A bad digit seen by the fast path's 13-digit loop is still reported.
        assert_malformed(
            "0x1.999999999999gp+0",
            16,
            "a hexadecimal digit, 'p' or the end of the number",
        );
        // Things the fast path must leave to the general parser.
        for text in [
            "0x1.00000000000008p0",
            "0x1p-1023",
            "0x1p+1024",
            "0x1p00000",
            "0x1p+",
            "0x1.999999999999gp+0",
            "0x1.g999999999999p+0",
        ] {
            assert_eq!(parse_canonical(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn hex_digits_agree_with_one_at_a_time() {
        let mut state = 0x0123_4567_89ab_cdefu64;
        let check = |nibbles: u64| {
            assert_eq!(
                hex_digits(nibbles),
                hex_digits_one_at_a_time(nibbles),
                "{nibbles:#x}"
            );
            assert_eq!(hex_digits(nibbles), *format!("{nibbles:016x}").as_bytes());
        };
        for place in 0..16 {
            for nibble in 0..16u64 {
                check(nibble << (4 * place));
                check(!(nibble << (4 * place)));
            }
        }
        for _ in 0..10_000 {
            state = state
                .wrapping_mul(0x5851_f42d_4c95_7f2d)
                .wrapping_add(0x1405_7b7e_f767_814f);
            check(state);
        }
    }

    /// Bytes that matter to the fast path's decisions.
    const MUTATIONS: &[u8] = b"0123456789abcdefABCDEFpPx.+-\"] g\0";

    proptest::proptest! {
        /// Whatever the fast path decodes, the general parser decodes to the same bits, on
        /// canonical spellings of any double changed at one byte, cut short or followed by
        /// more bytes; and it decodes every unchanged spelling of a normal number whole.
        #[test]
        fn canonical_prefix_agrees_with_general_parser(
            bits: u64,
            change in proptest::option::of((0usize..32, proptest::sample::select(MUTATIONS))),
            cut in proptest::option::of(0usize..32),
            suffix in proptest::collection::vec(proptest::sample::select(MUTATIONS), 0..4),
        ) {
            let value = f64::from_bits(bits);
            let mut text = format(value).into_bytes();
            let pristine = change.is_none() && cut.is_none() && suffix.is_empty();
            if let Some((at, byte)) = change {
                if let Some(slot) = text.get_mut(at) {
                    *slot = byte;
                }
            }
            if let Some(cut) = cut {
                text.truncate(cut);
            }
            text.extend_from_slice(&suffix);
            match parse_canonical_prefix(&text) {
                Some((fast, len)) => {
                    let general = parse_general(&text[..len]).map(f64::to_bits);
                    proptest::prop_assert_eq!(general, Ok(fast.to_bits()), "{:?}", String::from_utf8_lossy(&text));
                }
                None => proptest::prop_assert!(
                    !(pristine && value.is_normal()),
                    "{:?} left to the general parser", String::from_utf8_lossy(&text)
                ),
            }
        }
    }
}
