//! The simulated llama.cpp's model loader: reads a GGUF file's header and
//! tensor table as llama.cpp does, and refuses a damaged file in its words.
//!
//! Format: GGUF version 3 (ggml's `docs/gguf.md`): `GGUF`, version (u32),
//! tensor count and metadata count (u64), the metadata (key, type, value),
//! the tensor infos (name, dimensions, type, offset), then the data,
//! aligned to `general.alignment` (32 by default). Refusals, in llama.cpp
//! b11312's words (`ggml/src/gguf.cpp`, `src/llama-model-loader.h`; seen on
//! a corrupted and a truncated tiny model in ci/tiny-model/llama-cpu-check.out.txt):
//! `gguf_init_from_reader: invalid magic characters: 'GGUX', expected
//! 'GGUF'`, and the first tensor, in file order, whose data runs past the
//! end: `tensor 'blk.0.ffn_down.weight' data is not within the file bounds,
//! model is corrupted or incomplete`.

/// What the loader found: the model's layer count (`llama.block_count`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Model {
    /// Repeating layers.
    pub layers: u64,
}

/// Why a file does not load: the loader's lines before llama.cpp's own
/// `failed to load model` lines (which the program adds).
pub(super) type Refused = Vec<String>;

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len())?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Some(out)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    fn string(&mut self) -> Option<String> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n).map(|b| String::from_utf8_lossy(b).into_owned())
    }
    /// A metadata value of type `t`: its integer value when it is one.
    fn value(&mut self, t: u32) -> Option<Option<u64>> {
        let size = match t {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            8 => return self.string().map(|_| None),
            9 => {
                let (inner, n) = (self.u32()?, self.u64()?);
                for _ in 0..n {
                    self.value(inner)?;
                }
                return Some(None);
            }
            _ => return None,
        };
        let b = self.take(size)?;
        let mut v = [0u8; 8];
        v[..size].copy_from_slice(b);
        Some((t != 6 && t != 12).then(|| u64::from_le_bytes(v)))
    }
}

/// Loads `bytes` as llama.cpp would.
pub(super) fn load(bytes: &[u8]) -> Result<Model, Refused> {
    let cut = || vec!["gguf_init_from_reader: failed to read tensor info".to_string()];
    if bytes.len() < 4 {
        return Err(vec!["gguf_init_from_reader: failed to read magic".into()]);
    }
    if &bytes[..4] != b"GGUF" {
        let magic: String = bytes[..4].iter().map(|&b| b as char).collect();
        return Err(vec![format!("gguf_init_from_reader: invalid magic characters: '{magic}', expected 'GGUF'")]);
    }
    let mut r = Reader { bytes, at: 4 };
    let header = (r.u32(), r.u64(), r.u64());
    let (Some(3), Some(n_tensors), Some(n_kv)) = header else {
        return Err(vec!["gguf_init_from_reader: failed to read header".into()]);
    };
    let (mut alignment, mut layers) = (32u64, 0u64);
    for _ in 0..n_kv {
        let (Some(key), Some(t)) = (r.string(), r.u32()) else { return Err(cut()) };
        let Some(v) = r.value(t) else { return Err(cut()) };
        match key.as_str() {
            "general.alignment" => alignment = v.filter(|&a| a > 0).unwrap_or(32),
            k if k.ends_with(".block_count") => layers = v.unwrap_or(0),
            _ => {}
        }
    }
    let mut tensors = Vec::new();
    for _ in 0..n_tensors {
        let Some(name) = r.string() else { return Err(cut()) };
        let Some(dims) = r.u32() else { return Err(cut()) };
        let mut elements: u64 = 1;
        for _ in 0..dims {
            let Some(d) = r.u64() else { return Err(cut()) };
            elements = elements.saturating_mul(d);
        }
        let (Some(kind), Some(offset)) = (r.u32(), r.u64()) else { return Err(cut()) };
        // F32 and F16, the types of the tiny model; another is no model the simulation knows.
        let size = match kind {
            0 => elements.saturating_mul(4),
            1 => elements.saturating_mul(2),
            other => {
                return Err(vec![format!(
                    "gguf_init_from_reader: tensor '{name}' has type {other}, which the simulated loader does not read"
                )]);
            }
        };
        tensors.push((name, offset, size));
    }
    let data = (r.at as u64).div_ceil(alignment).saturating_mul(alignment);
    for (name, offset, size) in tensors {
        if data.saturating_add(offset).saturating_add(size) > bytes.len() as u64 {
            return Err(vec![format!(
                "llama_model_load: error loading model: tensor '{name}' data is not within the file bounds, model is corrupted or incomplete"
            )]);
        }
    }
    Ok(Model { layers })
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmgw_core::converge::TINY_MODEL;

    #[test]
    fn the_tiny_model_loads_and_damaged_copies_fail_in_llama_cpps_words() {
        assert_eq!(load(TINY_MODEL), Ok(Model { layers: 2 }));
        let mut magic = TINY_MODEL.to_vec();
        magic[3] = b'X';
        assert_eq!(
            load(&magic).unwrap_err(),
            ["gguf_init_from_reader: invalid magic characters: 'GGUX', expected 'GGUF'"]
        );
        // Half of the file, as ci/llama-cpu-check.sh cuts it: the same tensor llama.cpp b11312 named.
        let half = &TINY_MODEL[..TINY_MODEL.len() / 2];
        assert!(
            load(half).unwrap_err()[0].contains("tensor 'blk.0.ffn_down.weight' data is not within the file bounds")
        );
        assert!(load(&TINY_MODEL[..100]).is_err() && load(b"GG").is_err() && load(b"").is_err());
    }
}
