//! Any UTF-8 text: the hexadecimal float parser must not panic, and whatever double it gives
//! must survive format and parse again bit for bit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use savechain::hexfloat;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(d) = hexfloat::parse(s) else {
        return;
    };
    let spelled = hexfloat::format(d);
    match hexfloat::parse(&spelled) {
        Ok(back) => assert!(
            back.to_bits() == d.to_bits(),
            "{s:?} parsed to {:#018x}, spelled {spelled:?}, which parses to {:#018x}",
            d.to_bits(),
            back.to_bits()
        ),
        Err(e) => panic!(
            "{s:?} parsed to {:#018x}, but its spelling {spelled:?} does not parse: {e}",
            d.to_bits()
        ),
    }
});
