//! `--set PATH=VALUE`: a host description changed at a JSON path, for
//! asking what a machine would do after the change.

use super::Host;

/// One `--set PATH=VALUE`: a change to a host description, for asking
/// what a machine would do after it (`nvidia.driver=580.65.06`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The JSON path: `nvidia.driver`, `nvidia.gpus[0].compute_capability`.
    pub path: String,
    /// The value as written: JSON (`9.0`, `true`, `["gcc"]`) or plain text.
    pub value: String,
}

impl Setting {
    /// Parses `PATH=VALUE`.
    ///
    /// # Errors
    /// A sentence when there is no `=` or no path.
    pub fn parse(s: &str) -> Result<Setting, String> {
        match s.split_once('=') {
            Some((p, v)) if !p.trim().is_empty() => Ok(Setting { path: p.trim().to_string(), value: v.to_string() }),
            _ => Err(format!("`{s}` is not PATH=VALUE (like nvidia.driver=580.65.06)")),
        }
    }
}

impl Host {
    /// This host with `settings` applied in order, validated as a host
    /// description is. `null` is null wherever it is set; otherwise a value
    /// replacing a string stays text, and any other value is read as JSON
    /// when it parses as JSON.
    ///
    /// # Errors
    /// `PATH: …` for a path that does not exist or crosses a `null`, or a
    /// host that the change makes invalid (with its JSON path).
    pub fn with_settings(&self, settings: &[Setting]) -> Result<Host, String> {
        let mut doc = serde_json::to_value(self).expect("a host always serializes");
        for s in settings {
            let slot = pointer_mut(&mut doc, &s.path)?;
            *slot = match slot {
                _ if s.value.trim() == "null" => serde_json::Value::Null,
                serde_json::Value::String(_) => serde_json::Value::String(s.value.clone()),
                _ => serde_json::from_str(&s.value).unwrap_or_else(|_| serde_json::Value::String(s.value.clone())),
            };
        }
        Host::from_json(&doc.to_string()).map_err(|e| e.to_string())
    }
}

/// The value at a dotted path (`a.b[2].c`), created as `null` when its
/// object lacks the last key (the host's own validation then names it).
fn pointer_mut<'a>(doc: &'a mut serde_json::Value, path: &str) -> Result<&'a mut serde_json::Value, String> {
    let mut at = doc;
    let mut walked = String::new();
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, rest)) => {
                let i = rest.strip_suffix(']').and_then(|n| n.parse::<usize>().ok());
                (k, Some(i.ok_or_else(|| format!("{path}: `{part}` is not KEY[INDEX]"))?))
            }
            None => (part, None),
        };
        walked = if walked.is_empty() { key.to_string() } else { format!("{walked}.{key}") };
        let obj = at
            .as_object_mut()
            .ok_or_else(|| format!("{path}: `{walked}` is inside something that is not an object"))?;
        if !obj.contains_key(key) && walked != path {
            return Err(format!("{path}: unknown field `{key}`: no such field at `{walked}` of a host description"));
        }
        at = obj.entry(key.to_string()).or_insert(serde_json::Value::Null);
        if let Some(i) = index {
            let len = at.as_array().map_or(0, Vec::len);
            let list = at.as_array_mut().ok_or_else(|| format!("{path}: `{walked}` is not a list"))?;
            at = list.get_mut(i).ok_or_else(|| format!("{path}: `{walked}` has {len} entries, not {}", i + 1))?;
            walked.push_str(&format!("[{i}]"));
        }
        if at.is_null() && walked != path {
            return Err(format!("{path}: `{walked}` is null on this host"));
        }
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v100() -> Host {
        Host::from_json(include_str!("../../../../matrix/hosts/v100.json")).unwrap()
    }

    #[test]
    fn settings_change_the_host_or_say_why_not() {
        let h = v100().with_settings(&[Setting::parse("nvidia.driver=580.65.06").unwrap()]).unwrap();
        assert_eq!(h.driver().unwrap().to_string(), "580.65.06");
        let h = v100().with_settings(&[Setting::parse("nvidia.gpus[0].compute_capability=9.0").unwrap()]).unwrap();
        assert_eq!(h.min_compute_capability().unwrap().to_string(), "9.0");
        let e = v100().with_settings(&[Setting::parse("nvidia.drvier=580").unwrap()]).unwrap_err();
        assert!(e.contains("unknown field `drvier`"), "{e}");
        let e = v100().with_settings(&[Setting::parse("nvidia.gpus[3].name=x").unwrap()]).unwrap_err();
        assert!(e.contains("has 1 entries, not 4"), "{e}");
        assert!(Setting::parse("no-equals").is_err());
        let e = v100().with_settings(&[Setting::parse("a.b.c=1").unwrap()]).unwrap_err();
        assert_eq!(e, "a.b.c: unknown field `a`: no such field at `a` of a host description");
        let nulls = [Setting::parse("os.glibcxx=null").unwrap()];
        assert_eq!(v100().with_settings(&nulls).unwrap().os.glibcxx, None);
        let e = v100().with_settings(&[Setting::parse("os.glibc=null").unwrap()]).unwrap_err();
        assert!(e.starts_with("os.glibc: a glibc system must give its glibc version"), "{e}");
        let musl = [
            Setting::parse("os.libc=musl").unwrap(),
            Setting::parse("os.glibc=null").unwrap(),
            Setting::parse("os.glibcxx=null").unwrap(),
        ];
        assert_eq!(v100().with_settings(&musl).unwrap().os.glibc, None);
    }
}
