//! Printing errors for people: the message, then the offending line with a caret.

use savechain::Error;

use super::output::errln;

/// Prints `error` to standard error, with the line it points at when known: from `source`,
/// or else read again from the file the error names.
pub fn print_error(error: &Error, source: Option<&[u8]>) {
    errln!("error: {error}");
    let Some(location) = error.location() else {
        return;
    };
    let read;
    let source = match (source, error.file()) {
        (Some(source), _) => source,
        (None, Some(file)) => match std::fs::read(file) {
            Ok(bytes) => {
                read = bytes;
                &read
            }
            Err(_) => return,
        },
        (None, None) => return,
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
    errln!("{number} | {shown}");
    errln!(
        "{} | {}^",
        " ".repeat(number.len()),
        " ".repeat(location.column - 1 - start)
    );
}
