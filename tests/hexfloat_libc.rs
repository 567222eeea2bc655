//! Compares `hexfloat` with the C library: `snprintf("%a")` for writing and
//! `strtod` for parsing, on reproducible pseudo-random inputs.

use savechain::hexfloat::{self, HexFloatError};
use std::ffi::CString;

const RANDOM_BIT_PATTERNS: usize = 1_000_000;
const RANDOM_LITERALS: usize = 1_000_000;

/// splitmix64: tiny, good enough, and the same on every machine.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (the tiny modulo bias is irrelevant here).
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn range(&mut self, low: i64, high_inclusive: i64) -> i64 {
        low + self.below((high_inclusive - low + 1) as u64) as i64
    }

    fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        self.below(denominator) < numerator
    }
}

fn libc_hex(value: f64) -> String {
    let mut buf = [0u8; 64];
    // SAFETY: the buffer is writable for its length and the format takes one double.
    let written = unsafe {
        libc::snprintf(
            buf.as_mut_ptr().cast::<libc::c_char>(),
            buf.len(),
            c"%a".as_ptr(),
            value,
        )
    };
    assert!(written > 0 && (written as usize) < buf.len());
    String::from_utf8(buf[..written as usize].to_vec()).unwrap()
}

/// strtod's result and how many bytes it consumed.
fn libc_strtod(text: &str) -> (f64, usize) {
    let c_text = CString::new(text).unwrap();
    let start = c_text.as_ptr();
    let mut end = start.cast_mut();
    // SAFETY: `c_text` is NUL-terminated and outlives the call; `end` points into it.
    let value = unsafe { libc::strtod(start, &mut end) };
    // SAFETY: strtod sets `end` within the same allocation, at or after `start`.
    let consumed = unsafe { end.offset_from(start) } as usize;
    (value, consumed)
}

fn check_bit_pattern(bits: u64) {
    let value = f64::from_bits(bits);
    let ours = hexfloat::format(value);
    if value.is_finite() {
        assert_eq!(ours, libc_hex(value), "bits {bits:#018x}");
    }
    match hexfloat::parse(&ours) {
        Ok(back) => assert_eq!(back.to_bits(), bits, "{ours} did not round-trip"),
        Err(error) => panic!("{ours} (bits {bits:#018x}) did not parse: {error}"),
    }
}

#[test]
fn special_bit_patterns_match_printf_and_round_trip() {
    let exponent_fields = [0u64, 1, 2, 0x3fe, 0x3ff, 0x400, 0x7fd, 0x7fe, 0x7ff];
    let fractions = [
        0u64,
        1,
        2,
        0xf,
        0x10,
        1 << 51,
        (1 << 51) + 1,
        1 << 50,
        (1 << 52) - 1,
        (1 << 52) - 2,
        0x8_0000_0000_0000,
        0x0_0000_0000_0100,
        0x1_2345_6789_abcd,
    ];
    let mut checked = 0;
    for sign in [0u64, 1 << 63] {
        for &exponent_field in &exponent_fields {
            for &fraction in &fractions {
                check_bit_pattern(sign | exponent_field << 52 | fraction);
                checked += 1;
            }
        }
    }
    for value in [
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        f64::EPSILON,
        0.1,
        1.0 / 3.0,
    ] {
        check_bit_pattern(value.to_bits());
        checked += 1;
    }
    assert!(checked > 200);
}

#[test]
fn random_bit_patterns_match_printf_and_round_trip() {
    let mut rng = SplitMix64(0x5eed_0001);
    for _ in 0..RANDOM_BIT_PATTERNS {
        let mut bits = rng.next();
        // Uniform bits are almost all normal numbers with full fractions, so
        // steer some towards subnormals, NaNs and short fractions.
        match rng.below(16) {
            0 => bits &= !(0x7ffu64 << 52),
            1 => bits |= 0x7ffu64 << 52,
            2 => bits &= !((1u64 << rng.below(53)) - 1),
            _ => {}
        }
        check_bit_pattern(bits);
    }
}

/// A hexadecimal literal strtod accepts in full, built to stress rounding,
/// leading zeros, digit counts and the ends of the exponent range.
fn random_literal(rng: &mut SplitMix64, text: &mut String) {
    text.clear();
    text.push_str(["", "+", "-"][rng.below(3) as usize]);
    text.push_str(if rng.chance(1, 2) { "0x" } else { "0X" });
    let upper_case = rng.chance(1, 2);
    let mixed_case = rng.chance(1, 4);

    let mut digits: Vec<u8> = Vec::with_capacity(96);
    if rng.chance(1, 2) {
        // Structured: `kept` significant bits, then a round bit and a tail
        // chosen to hit exact ties, near-ties and sticky cases.
        let kept = if rng.chance(1, 2) {
            53
        } else {
            rng.range(0, 53)
        };
        let mut bit_string: Vec<bool> = Vec::with_capacity(160);
        if kept > 0 {
            bit_string.push(true);
            let all_ones = rng.chance(1, 8);
            for _ in 1..kept {
                bit_string.push(all_ones || rng.chance(1, 2));
            }
        }
        bit_string.push(rng.chance(3, 4));
        let tail_len = rng.range(0, 80);
        let tail_kind = rng.below(5);
        let lone_one = rng.range(0, tail_len);
        for k in 0..tail_len {
            bit_string.push(match tail_kind {
                0 => false,
                1 => true,
                2 => k == tail_len - 1,
                3 => k == lone_one,
                _ => rng.chance(1, 2),
            });
        }
        // Place the leading bit so that the round bit is exactly where a
        // double rounds: after 53 bits, or at the subnormal grid's half unit.
        let top = if kept == 53 {
            match rng.below(4) {
                0 => 1023,
                1 => -1022,
                2 => rng.range(-1030, -1015),
                _ => rng.range(-1022, 1023),
            }
        } else {
            -1075 + kept
        };
        let align = rng.below(4) as usize;
        let mut bits: Vec<bool> = vec![false; align];
        bits.extend_from_slice(&bit_string);
        bits.resize(bits.len().next_multiple_of(4), false);
        digits.resize(rng.below(4) as usize, 0);
        let first_bit_digit = digits.len();
        for nibble in bits.chunks(4) {
            digits.push(nibble.iter().fold(0, |acc, &bit| acc << 1 | bit as u8));
        }
        // Bit index (from the lowest bit of the last digit) of the first bit
        // of `bit_string`: the leading one, or the round bit when kept == 0.
        let leading_bit_index = (4 * (digits.len() - first_bit_digit) - align - 1) as i64;
        let integer_count = rng.below(digits.len() as u64 + 1) as usize;
        let fraction_count = digits.len() - integer_count;
        let exponent = top - leading_bit_index + 4 * fraction_count as i64;
        let trailing_dot = rng.chance(1, 2);
        push_digits(
            text,
            &digits,
            integer_count,
            trailing_dot,
            upper_case,
            mixed_case,
            rng,
        );
        push_exponent(text, Some(exponent), rng);
        return;
    }

    // Free form: 0..=40 integer and fraction digits, random content.
    let integer_count = rng.below(41) as usize;
    let mut fraction_count = rng.below(41) as usize;
    if integer_count + fraction_count == 0 {
        fraction_count = 1;
    }
    let leading_zeros = if rng.chance(1, 4) {
        rng.below((integer_count + fraction_count) as u64 + 1) as usize
    } else {
        0
    };
    let fill = match rng.below(4) {
        0 => Some(0u8),
        1 => Some(0xf),
        _ => None,
    };
    for k in 0..integer_count + fraction_count {
        let digit = if k < leading_zeros {
            0
        } else {
            match fill {
                Some(fill) if k > leading_zeros && !rng.chance(1, 10) => fill,
                _ => rng.below(16) as u8,
            }
        };
        digits.push(digit);
    }
    // Position of the leading one bit of the digits as written (dot included).
    let leading_bit = digits.iter().position(|&d| d != 0).map(|index| {
        let digit = digits[index];
        let bit_in_digit = 7 - digit.leading_zeros() as i64;
        4 * (integer_count as i64 - 1 - index as i64) + bit_in_digit
    });
    // Exponent of the leading one bit we aim for; `None` leaves it to the digits.
    let target_top = match rng.below(8) {
        0 => None,
        1 => Some(rng.range(-1080, -1070)),
        2 => Some(rng.range(-1026, -1018)),
        3 => Some(rng.range(1018, 1026)),
        4 => Some(rng.range(-200_000, 200_000)),
        _ => Some(rng.range(-1100, 1050)),
    };
    let exponent = match (target_top, leading_bit) {
        (Some(top), Some(leading)) => Some(top - leading),
        (Some(top), None) => Some(top),
        (None, _) => None,
    };
    let trailing_dot = rng.chance(1, 2);
    push_digits(
        text,
        &digits,
        integer_count,
        trailing_dot,
        upper_case,
        mixed_case,
        rng,
    );
    push_exponent(text, exponent, rng);
}

/// Writes the digits with a dot before the first fraction digit, or after
/// the last digit when there are none and `trailing_dot` asks for it.
fn push_digits(
    text: &mut String,
    digits: &[u8],
    integer_count: usize,
    trailing_dot: bool,
    upper_case: bool,
    mixed_case: bool,
    rng: &mut SplitMix64,
) {
    for (index, &digit) in digits.iter().enumerate() {
        if index == integer_count {
            text.push('.');
        }
        let upper = if mixed_case {
            rng.chance(1, 2)
        } else {
            upper_case
        };
        let table = if upper {
            b"0123456789ABCDEF"
        } else {
            b"0123456789abcdef"
        };
        text.push(table[digit as usize] as char);
    }
    if trailing_dot && integer_count == digits.len() {
        text.push('.');
    }
}

fn push_exponent(text: &mut String, exponent: Option<i64>, rng: &mut SplitMix64) {
    let Some(exponent) = exponent else {
        return;
    };
    if exponent == 0 && rng.chance(1, 4) {
        return;
    }
    text.push(if rng.chance(1, 2) { 'p' } else { 'P' });
    if exponent < 0 {
        text.push('-');
    } else if rng.chance(1, 2) {
        text.push('+');
    }
    for _ in 0..rng.below(8).saturating_sub(5) {
        text.push('0');
    }
    if rng.chance(1, 200) {
        // Far beyond any integer type: both sides must saturate.
        text.push_str("99999999999999999999");
    } else {
        text.push_str(&exponent.unsigned_abs().to_string());
    }
}

/// Exact round-to-nearest-even value of a valid literal, worked out bit by
/// bit: an oracle independent of the module's arithmetic. `infinity` for
/// overflow.
///
/// With `glibc_subnormal_quirk`, it models glibc's strtod instead: for a
/// subnormal result glibc drops the bit right after the first 53 significant
/// bits from its sticky information (round_and_return ORs in only the bits
/// *below* the old round bit), so a value just above a tie can round down.
fn exact_value(text: &str, glibc_subnormal_quirk: bool) -> f64 {
    let bytes = text.as_bytes();
    let (negative, rest) = match bytes[0] {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let rest = &rest[2..];
    let mut bits: Vec<bool> = Vec::new();
    let mut fraction_digits = 0i64;
    let mut seen_dot = false;
    let mut index = 0;
    while index < rest.len() && rest[index] != b'p' && rest[index] != b'P' {
        let byte = rest[index];
        if byte == b'.' {
            seen_dot = true;
        } else {
            let digit = (byte as char).to_digit(16).unwrap();
            bits.extend((0..4).rev().map(|k| digit >> k & 1 == 1));
            fraction_digits += seen_dot as i64;
        }
        index += 1;
    }
    let mut exponent = 0i64;
    if index < rest.len() {
        let exponent_text = std::str::from_utf8(&rest[index + 1..]).unwrap();
        let (exponent_negative, digits) = match exponent_text.as_bytes()[0] {
            b'-' => (true, &exponent_text[1..]),
            b'+' => (false, &exponent_text[1..]),
            _ => (false, exponent_text),
        };
        // Beyond a million the answer is 0 or infinity for these digit counts.
        exponent = digits.parse::<i64>().unwrap_or(i64::MAX).min(1_000_000);
        if exponent_negative {
            exponent = -exponent;
        }
    }
    let sign = if negative { 1u64 << 63 } else { 0 };
    let Some(first_one) = bits.iter().position(|&bit| bit) else {
        return f64::from_bits(sign);
    };
    // Exponent of the leading one bit.
    let top = (bits.len() - 1 - first_one) as i64 + exponent - 4 * fraction_digits;
    if top > 1023 {
        return if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    let kept = if top >= -1022 { 53 } else { top + 1075 };
    if kept < 0 {
        return f64::from_bits(sign);
    }
    let bit_at = |position: usize| bits.get(position).copied().unwrap_or(false);
    let round_position = first_one + kept as usize;
    let mut significand =
        (first_one..round_position).fold(0u64, |acc, p| acc << 1 | bit_at(p) as u64);
    let round = bit_at(round_position);
    let quirk_position = first_one + 53;
    let sticky = (round_position + 1..bits.len())
        .any(|p| bits[p] && !(glibc_subnormal_quirk && kept < 53 && p == quirk_position));
    if round && (sticky || significand & 1 == 1) {
        significand += 1;
    }
    if kept < 53 {
        // Subnormal; a carry into 2^52 is exactly the smallest normal.
        return f64::from_bits(sign | significand);
    }
    let mut top = top;
    if significand == 1 << 53 {
        significand >>= 1;
        top += 1;
        if top > 1023 {
            return if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            };
        }
    }
    f64::from_bits(sign | ((top + 1023) as u64) << 52 | (significand & ((1 << 52) - 1)))
}

#[test]
fn random_literals_parse_like_strtod() {
    let mut rng = SplitMix64(0x5eed_0002);
    let mut text = String::with_capacity(128);
    let (mut overflows, mut zeros, mut subnormals, mut glibc_misroundings) = (0, 0, 0, 0);
    for _ in 0..RANDOM_LITERALS {
        random_literal(&mut rng, &mut text);
        let (from_strtod, consumed) = libc_strtod(&text);
        assert_eq!(
            consumed,
            text.len(),
            "strtod did not consume all of {text:?}"
        );
        let exact = exact_value(&text, false);
        let glibc_model = exact_value(&text, true);
        // The glibc model must explain every strtod result, or the quirk is
        // not what we think it is.
        assert_eq!(
            from_strtod.to_bits(),
            glibc_model.to_bits(),
            "{text}: strtod {from_strtod:e} model {glibc_model:e}"
        );
        let ours = hexfloat::parse(&text);
        if from_strtod.is_infinite() {
            assert_eq!(ours, Err(HexFloatError::Overflow), "{text}");
            overflows += 1;
            continue;
        }
        let ours = match ours {
            Ok(value) => value,
            Err(error) => panic!("{text}: {error}, strtod gave {from_strtod:e}"),
        };
        assert_eq!(
            ours.to_bits(),
            exact.to_bits(),
            "{text}: ours {} exact {}",
            hexfloat::format(ours),
            hexfloat::format(exact)
        );
        if ours.to_bits() != from_strtod.to_bits() {
            // Only glibc's subnormal misrounding may separate us, by one unit.
            assert_eq!(ours.to_bits(), from_strtod.to_bits() + 1, "{text}");
            glibc_misroundings += 1;
        }
        if from_strtod == 0.0 {
            zeros += 1;
        } else if from_strtod.is_subnormal() {
            subnormals += 1;
        }
    }
    eprintln!(
        "{RANDOM_LITERALS} literals: {overflows} overflow, {zeros} zero, {subnormals} subnormal, \
         {glibc_misroundings} where glibc strtod misrounds a subnormal"
    );
    // The generator must actually reach the edges it is meant to stress.
    let at_least = RANDOM_LITERALS / 100;
    assert!(overflows > at_least, "only {overflows} overflows");
    assert!(zeros > at_least, "only {zeros} zeros");
    assert!(subnormals > at_least, "only {subnormals} subnormals");
}

#[test]
fn strtod_agrees_with_documented_edges() {
    // The cases the unit tests assert, checked against the C library too.
    let cases = [
        "0x1.fffffffffffff7p+1023",
        "0x1.fffffffffffff8p+1023",
        "0x1p-1075",
        "0x1.0000000000001p-1075",
        "0x1.8p-1074",
        "0x1.4p-1073",
        "0x0.fffffffffffff8p-1022",
        "0x1.00000000000008p0",
        "0x1.00000000000018p0",
        "0xc.ccccccccccccccdp-7",
        "0x1.8",
        "0x.8p1",
        "0x1.p0",
        "-0x0p+99999999999999999999",
        "0x1p+99999999999999999999",
        "0x1p-99999999999999999999",
    ];
    for text in cases {
        let (expected, consumed) = libc_strtod(text);
        assert_eq!(consumed, text.len(), "{text}");
        let ours = hexfloat::parse(text);
        if expected.is_infinite() {
            assert_eq!(ours, Err(HexFloatError::Overflow), "{text}");
        } else {
            assert_eq!(ours.map(f64::to_bits), Ok(expected.to_bits()), "{text}");
        }
    }
    // Values just above a tie in the subnormal range, where the only bit past
    // the tie is the 54th significant one: glibc 2.36 rounds these down (to
    // even), the exact value rounds up, and so do we.
    let glibc_misrounds = [
        ("0x1.00000000000008p-1075", 1u64),
        ("0x1.00000000000018p-1023", (1 << 51) + 1),
        ("0X003215f5a0.000001P-1080", 0xc857d7),
    ];
    for (text, exact_bits) in glibc_misrounds {
        assert_eq!(exact_value(text, false).to_bits(), exact_bits, "{text}");
        assert_eq!(
            hexfloat::parse(text).map(f64::to_bits),
            Ok(exact_bits),
            "{text}"
        );
        let (from_strtod, _) = libc_strtod(text);
        assert!(
            from_strtod.to_bits() == exact_bits || from_strtod.to_bits() == exact_bits - 1,
            "{text}: strtod gave {from_strtod:e}"
        );
    }
    // strtod's own spellings of the specials agree in value and sign.
    for text in ["inf", "-Infinity", "nan", "-NAN"] {
        let (expected, _) = libc_strtod(text);
        let ours = hexfloat::parse(text).unwrap();
        assert_eq!(ours.is_nan(), expected.is_nan(), "{text}");
        assert_eq!(
            ours.is_sign_negative(),
            expected.is_sign_negative(),
            "{text}"
        );
        if !expected.is_nan() {
            assert_eq!(ours, expected);
        }
    }
}
