//! Text that comes from outside — a file, a file name, a flag — checked
//! where it enters by one rule ([`check`]), and escaped for the format it is
//! written in ([`for_terminal`], [`for_markdown_cell`]). XML (JUnit) is
//! escaped by its writer; what [`check`] refuses cannot be written in XML.
//!
//! Uses: nothing of this crate.

/// Why a text was refused: one sentence, to follow where it is.
pub type Refusal = &'static str;

/// The one rule for text from outside: printable (no control characters:
/// no newline, tab or escape), no bidirectional controls (U+200E, U+200F,
/// U+061C, U+202A–U+202E, U+2066–U+2069: they reorder what a terminal
/// shows), no line or paragraph separator (U+2028, U+2029: a line break
/// to a reader of Unicode text, JSON's and JavaScript's included), no
/// byte-order mark inside text (U+FEFF, invisible: two names that look
/// alike would differ), and no noncharacters (U+FDD0–U+FDEF, U+xFFFE, U+xFFFF: not
/// allowed in XML, so a JUnit report would be refused by its reader).
/// Source of the ranges: Unicode's bidirectional algorithm (UAX #9, the
/// explicit formatting characters), the Unicode Standard § 5.8 (line and
/// paragraph separators) and § 23.8 (U+FEFF only as a byte-order mark, at
/// the start of a stream), its noncharacter FAQ; XML 1.0 § 2.2.
///
/// # Errors
/// The sentence naming the kind of character refused, and its code point.
pub fn check(text: &str) -> Result<(), String> {
    for c in text.chars() {
        let why: Option<Refusal> = if c.is_control() {
            Some("a control character (a newline, a tab, an escape)")
        } else if is_bidi_control(c) {
            Some("a bidirectional control, which reorders what a terminal shows")
        } else if matches!(c, '\u{2028}' | '\u{2029}') {
            Some("a line or paragraph separator, which breaks the line it is in")
        } else if c == '\u{FEFF}' {
            Some("a byte-order mark inside text, which is invisible")
        } else if is_noncharacter(c) {
            Some("a Unicode noncharacter, which XML cannot hold")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(format!("holds {why} (U+{:04X})", u32::from(c)));
        }
    }
    Ok(())
}

/// Whether `c` is an explicit bidirectional formatting character.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Whether `c` is one of Unicode's 66 noncharacters.
fn is_noncharacter(c: char) -> bool {
    let n = u32::from(c);
    (0xFDD0..=0xFDEF).contains(&n) || n & 0xFFFE == 0xFFFE
}

/// `text` safe to print on a terminal: every character [`check`] refuses
/// written as `\u{XXXX}` (a second defence: what enters is checked).
pub fn for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if check(c.encode_utf8(&mut [0; 4])).is_ok() {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
        }
    }
    out
}

/// `text` as one cell of a markdown table: `|` escaped, and what
/// [`for_terminal`] escapes.
pub fn for_markdown_cell(text: &str) -> String {
    for_terminal(text).replace('|', "\\|")
}

/// A URL as it may be shown in a log or a message: the userinfo of its
/// authority (`https://user:token@mirror/…`, RFC 3986 § 3.2.1) replaced by
/// `***`; a URL without one comes back as it is.
pub fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***{}", &rest[at..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_refuses_controls_bidi_and_noncharacters() {
        assert!(check("NVIDIA H100 80GB HBM3 — ünïcode ok").is_ok());
        for bad in [
            "a\nb",
            "tab\t",
            "e\u{1b}[31mred",
            "\u{202E}evil",
            "\u{2066}x",
            "x\u{FFFE}",
            "\u{FDD0}",
            "\u{10FFFF}",
            "a\u{2028}b",
            "\u{2029}",
            "x\u{FEFF}y",
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        assert!(check("\u{202E}").unwrap_err().contains("U+202E"));
    }

    #[test]
    fn escapes_for_where_it_is_written() {
        assert_eq!(for_terminal("e\u{1b}[31mred"), "e\\u{001b}[31mred");
        assert_eq!(for_markdown_cell("a|b\nc"), "a\\|b\\u{000a}c");
    }
}
