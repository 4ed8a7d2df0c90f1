//! [`Sha256`]: a sha256 digest, its 32 bytes parsed once from hex.
//!
//! Uses: nothing of this crate.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A sha256 digest: 32 bytes, read from 64 hex digits in either case
/// ([`Sha256::parse`], with the `hex` crate) and written as lowercase hex,
/// as `sha256sum`, GitHub's `digest` and llmgw's manifests write it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256([u8; 32]);

/// Why a text is not a [`Sha256`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Sha256Error {
    /// Not 64 characters long.
    #[error("is {0} characters long, not 64 hex digits")]
    Length(usize),
    /// A character that is not a hex digit, at this byte offset.
    #[error("holds a character that is not a hex digit at offset {0}")]
    NotHex(usize),
}

impl Sha256 {
    /// Parses 64 hex digits, either case.
    ///
    /// # Errors
    /// [`Sha256Error::Length`] for another length, [`Sha256Error::NotHex`]
    /// naming the offset of the first character that is not a hex digit.
    pub fn parse(hex: &str) -> Result<Sha256, Sha256Error> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hex, &mut bytes).map_err(|e| match e {
            hex::FromHexError::InvalidHexCharacter { index, .. } if hex.len() == 64 => Sha256Error::NotHex(index),
            _ => Sha256Error::Length(hex.chars().count()),
        })?;
        Ok(Sha256(bytes))
    }

    /// The digest of these 32 bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Sha256 {
        Sha256(bytes)
    }

    /// The 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Whether `hex` is 64 hex digits (either case).
    pub fn is_hex(hex: &str) -> bool {
        Sha256::parse(hex).is_ok()
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256({self})")
    }
}

impl FromStr for Sha256 {
    type Err = Sha256Error;
    fn from_str(s: &str) -> Result<Sha256, Sha256Error> {
        Sha256::parse(s)
    }
}

impl Serialize for Sha256 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Sha256 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Sha256::parse(&text).map_err(|e| serde::de::Error::custom(format!("`{text}` {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_either_case_and_writes_lowercase() {
        let upper = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";
        let d = Sha256::parse(upper).unwrap();
        assert_eq!(d.to_string(), upper.to_ascii_lowercase());
        assert_eq!(d.as_bytes()[0], 0xe3);
        assert_eq!(Sha256::parse(&d.to_string()), Ok(d));
    }

    #[test]
    fn refuses_other_lengths_and_non_hex_naming_where() {
        assert_eq!(Sha256::parse("abc"), Err(Sha256Error::Length(3)));
        assert_eq!(Sha256::parse(""), Err(Sha256Error::Length(0)));
        let mut bad = "0".repeat(64);
        bad.replace_range(10..11, "g");
        assert_eq!(Sha256::parse(&bad), Err(Sha256Error::NotHex(10)));
        assert!(!Sha256::is_hex(&"é".repeat(32)));
    }
}
