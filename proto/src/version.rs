//! Deterministic content hashes. Versions must be equal across server restarts for equal
//! content (Delta clients send them back in `initial_resource_versions`), so nothing here
//! may depend on process state such as hash-map seeds.

/// 64-bit FNV-1a: tiny, stable across platforms and releases, good enough to tell contents apart.
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in *part {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Separator so that ["ab", "c"] and ["a", "bc"] differ.
        hash ^= 0xff;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
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
    }
}
