//! Deterministic content hashes. Versions must be equal across server restarts for equal
//! content (Delta clients send them back in `initial_resource_versions`), so nothing here
//! may depend on process state such as hash-map seeds.

/// 64-bit FNV-1a: tiny, stable across platforms and releases, good enough to tell contents apart.
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hasher = Fnv1a::new();
    for part in parts {
        hasher.update(part);
        hasher.end_part();
    }
    hasher.finish()
}

/// Streaming [`fnv1a`]: lets a serializer write straight into the hash instead of into a
/// buffer that is hashed afterwards. `update`s up to an `end_part` make one part.
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a(u64);

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl Fnv1a {
    /// A hash of nothing yet (the FNV-1a offset basis).
    pub fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    /// Adds `bytes` to the current part.
    pub fn update(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    /// Separator so that ["ab", "c"] and ["a", "bc"] differ.
    pub fn end_part(&mut self) {
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(FNV_PRIME);
    }

    /// The hash of everything written so far.
    pub fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a {
    fn default() -> Self {
        Self::new()
    }
}

impl std::io::Write for Fnv1a {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A short printable version string for a hash.
pub fn short(hash: u64) -> String {
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_content_equal_hash_and_parts_are_separated() {
        assert_eq!(fnv1a(&[b"abc"]), fnv1a(&[b"abc"]));
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(short(0xab), "00000000000000ab");
        let mut streamed = Fnv1a::new();
        streamed.update(b"a");
        streamed.update(b"b");
        streamed.end_part();
        streamed.update(b"c");
        streamed.end_part();
        assert_eq!(streamed.finish(), fnv1a(&[b"ab", b"c"]));
    }
}
