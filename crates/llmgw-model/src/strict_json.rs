//! Strict JSON documents: the one way host descriptions and wants files are
//! read, so that every problem is reported the same way, with where it is.
//!
//! [`parse`] refuses an empty document, trailing text after the value, an
//! array where the format has an object (serde would otherwise read a
//! struct from a sequence), a key given twice in one object (serde would
//! keep the last), and a key or string that [`crate::text::check`] refuses;
//! a leading UTF-8 byte-order mark is skipped. A syntax error says its line
//! and column; any other error its JSON path.
//!
//! Uses: `text`.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};

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
    let syntax = |e: serde_json::Error| {
        let msg = e.to_string();
        let msg = msg.rfind(" at line ").map_or(msg.as_str(), |i| &msg[..i]).to_string();
        JsonError { path: format!("line {} column {}", e.line(), e.column()), message: msg }
    };
    let mut found = None;
    let mut de = serde_json::Deserializer::from_str(text);
    match (Walk { path: String::new(), found: &mut found }).deserialize(&mut de) {
        Ok(()) => {}
        Err(_) if found.is_some() => {}
        Err(e) => return Err(syntax(e)),
    }
    if let Some(e) = found {
        return Err(e);
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(syntax)?;
    if value.is_null() {
        return Err(JsonError { path: ".".into(), message: "expected an object, found null".into() });
    }
    require_object(&value, ".")?;
    for pattern in objects {
        check_objects(&value, pattern, String::new())?;
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        JsonError { path, message: e.into_inner().to_string() }
    })
}

/// A walk over a document that stops at the first key given twice in one
/// object, or key or string [`crate::text::check`] refuses; `found` says
/// which and where (the walk then fails, to stop).
struct Walk<'a> {
    path: String,
    found: &'a mut Option<JsonError>,
}

impl Walk<'_> {
    fn refuse<E: serde::de::Error>(&mut self, at: String, message: String) -> E {
        *self.found = Some(JsonError { path: if at.is_empty() { ".".into() } else { at }, message });
        E::custom("refused")
    }

    fn child(&mut self, suffix: String) -> Walk<'_> {
        Walk { path: format!("{}{suffix}", self.path), found: self.found }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: serde::de::Error>(mut self, v: &str) -> Result<(), E> {
        match crate::text::check(v) {
            Ok(()) => Ok(()),
            Err(why) => {
                let at = self.path.clone();
                Err(self.refuse(at, format!("the text {why}")))
            }
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq.next_element_seed(self.child(format!("[{i}]")))?.is_some() {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let at = if self.path.is_empty() { key.clone() } else { format!("{}.{key}", self.path) };
            if let Err(why) = crate::text::check(&key) {
                return Err(self.refuse(at, format!("the key {why}")));
            }
            if !seen.insert(key.clone()) {
                let message = format!("the key `{key}` is given twice in one object (only one may be)");
                return Err(self.refuse(at, message));
            }
            let dot = if self.path.is_empty() { String::new() } else { ".".into() };
            map.next_value_seed(self.child(format!("{dot}{key}")))?;
        }
        Ok(())
    }
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
        assert_eq!(err(" null "), ".: expected an object, found null");
        assert_eq!(err(r#"{"a": [1], "list": []}"#), "a: expected an object, found an array");
        assert_eq!(err(r#"{"a": {"x": 1}, "list": [{"x": 1}, [2]]}"#), "list[1]: expected an object, found an array");
        assert_eq!(err(r#"{"a": {"x": 1,}, "list": []}"#), "line 1 column 15: trailing comma");
        assert_eq!(err(r#"{"a": {"x": "1"}, "list": []}"#), "a.x: invalid type: string \"1\", expected u32");
        assert!(parse::<Doc>("\u{feff}{\"a\": {\"x\": 1}, \"list\": []}", &[]).is_ok());
    }

    #[test]
    fn refuses_a_key_given_twice_and_text_a_report_would_misprint() {
        assert_eq!(
            err(r#"{"a": {"x": 1}, "list": [{"x": 1, "x": 2}]}"#),
            "list[0].x: the key `x` is given twice in one object (only one may be)"
        );
        assert_eq!(
            err(r#"{"a": {"x": 1}, "a": {"x": 2}, "list": []}"#),
            "a: the key `a` is given twice in one object (only one may be)"
        );
        let e = parse::<std::collections::BTreeMap<String, String>>(r#"{"k": "a\u202eb"}"#, &[]).unwrap_err();
        assert_eq!(e.path, "k");
        assert!(e.message.contains("bidirectional control"), "{e}");
        let e = parse::<std::collections::BTreeMap<String, String>>("{\"k\\n\": \"v\"}", &[]).unwrap_err();
        assert!(e.message.starts_with("the key holds a control character"), "{e}");
    }
}
