//! Strict JSON documents: the one way host descriptions and wants files are
//! read, so that every problem is reported the same way, with where it is.
//!
//! [`parse`] refuses an empty document, trailing text after the value, and
//! an array where the format has an object (serde would otherwise read a
//! struct from a sequence); a leading UTF-8 byte-order mark is skipped. A
//! syntax error says its line and column; any other error its JSON path.

use serde::de::DeserializeOwned;

/// Why a document was refused: `path` is the JSON path (`os.glibc`,
/// `nvidia.gpus[0]`), or `line L column C` for a syntax error, or `.` for
/// the whole document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct JsonError {
    /// Where.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

/// Parses `text` as a `T`, requiring a JSON object at `.` and at each of
/// `objects` (paths like `os`, `nvidia.gpus[*]`; `[*]` is every element,
/// and a `null` or absent value is not checked).
///
/// # Errors
/// A [`JsonError`] naming where the document is wrong.
pub fn parse<T: DeserializeOwned>(text: &str, objects: &[&str]) -> Result<T, JsonError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(JsonError { path: ".".into(), message: "the document is empty".into() });
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        let msg = e.to_string();
        let msg = msg.rfind(" at line ").map_or(msg.as_str(), |i| &msg[..i]).to_string();
        JsonError { path: format!("line {} column {}", e.line(), e.column()), message: msg }
    })?;
    require_object(&value, ".")?;
    for pattern in objects {
        check_objects(&value, pattern, String::new())?;
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        JsonError { path, message: e.into_inner().to_string() }
    })
}

fn require_object(v: &serde_json::Value, path: &str) -> Result<(), JsonError> {
    if v.is_object() || v.is_null() {
        return Ok(());
    }
    let kind = match v {
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::Bool(_) => "a boolean",
        _ => "something else",
    };
    Err(JsonError { path: path.to_string(), message: format!("expected an object, found {kind}") })
}

/// Walks `pattern` (`a.b[*].c`) from `v`, requiring an object at its end.
fn check_objects(v: &serde_json::Value, pattern: &str, at: String) -> Result<(), JsonError> {
    if pattern.is_empty() {
        return require_object(v, if at.is_empty() { "." } else { &at });
    }
    let (head, rest) = pattern.split_once('.').unwrap_or((pattern, ""));
    let (key, each) = match head.strip_suffix("[*]") {
        Some(k) => (k, true),
        None => (head, false),
    };
    let here = if at.is_empty() { key.to_string() } else { format!("{at}.{key}") };
    let Some(child) = v.get(key) else { return Ok(()) };
    if !each {
        return check_objects(child, rest, here);
    }
    match child.as_array() {
        Some(items) => {
            for (i, item) in items.iter().enumerate() {
                check_objects(item, rest, format!("{here}[{i}]"))?;
            }
            Ok(())
        }
        None => Ok(()), // the type error is serde's to report, with its path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        #[serde(rename = "a")]
        _a: Inner,
        #[serde(rename = "list")]
        _list: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[serde(rename = "x")]
        _x: u32,
    }

    fn err(text: &str) -> String {
        parse::<Doc>(text, &["a", "list[*]"]).unwrap_err().to_string()
    }

    #[test]
    fn refuses_what_serde_alone_would_take() {
        assert_eq!(err(""), ".: the document is empty");
        assert_eq!(err(r#"{"a": {"x": 1}, "list": []} trailing"#), "line 1 column 29: trailing characters");
        assert_eq!(err("[1, 2]"), ".: expected an object, found an array");
        assert_eq!(err(r#"{"a": [1], "list": []}"#), "a: expected an object, found an array");
        assert_eq!(err(r#"{"a": {"x": 1}, "list": [{"x": 1}, [2]]}"#), "list[1]: expected an object, found an array");
        assert_eq!(err(r#"{"a": {"x": 1,}, "list": []}"#), "line 1 column 15: trailing comma");
        assert_eq!(err(r#"{"a": {"x": "1"}, "list": []}"#), "a.x: invalid type: string \"1\", expected u32");
        assert!(parse::<Doc>("\u{feff}{\"a\": {\"x\": 1}, \"list\": []}", &[]).is_ok());
    }
}
