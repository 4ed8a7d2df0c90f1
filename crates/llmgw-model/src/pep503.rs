//! Python project names as PEP 503 normalizes them: lowercase, every run of
//! `-`, `_` and `.` one `-` (`SGL_Kernel` → `sgl-kernel`). The simple API
//! serves each project under this name, and resolvers compare names so.
//! Source: PEP 503, "Normalized Names".
//!
//! Uses: nothing of this crate.

/// `name` normalized: `Sgl_Kernel` → `sgl-kernel`; surrounding whitespace dropped.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// `name` as wheel file and `.dist-info` directory names write it: normalized,
/// with `_` for `-` (`sgl-kernel` → `sgl_kernel`). Source: packaging.python.org,
/// "Binary distribution format", escaping.
pub fn wheel_escape(name: &str) -> String {
    normalize(name).replace('-', "_")
}

#[cfg(test)]
mod tests {
    #[test]
    fn normalizes_and_escapes() {
        assert_eq!(super::normalize("SGL_Kernel"), "sgl-kernel");
        assert_eq!(super::normalize("a.-_b"), "a-b");
        assert_eq!(super::wheel_escape("Sgl-Kernel"), "sgl_kernel");
    }
}
