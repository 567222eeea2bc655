//! Printing errors for people: the message, then the offending line with a caret.

use savechain::Error;

/// Prints `error` to standard error, with the line of `source` it points at when known.
pub fn print_error(error: &Error, source: Option<&[u8]>) {
    eprintln!("error: {error}");
    let (Some(source), Some(location)) = (source, error.location()) else {
        return;
    };
    let text = String::from_utf8_lossy(source);
    let Some(line) = text.lines().nth(location.line - 1) else {
        return;
    };
    // Long lines (a minified save) are cut around the column so the caret stays visible.
    let chars: Vec<char> = line.chars().collect();
    let start = if chars.len() <= 120 {
        0
    } else {
        location.column.saturating_sub(60)
    };
    let shown: String = chars.iter().skip(start).take(120).collect();
    let number = location.line.to_string();
    eprintln!("{number} | {shown}");
    eprintln!(
        "{} | {}^",
        " ".repeat(number.len()),
        " ".repeat(location.column - 1 - start)
    );
}
