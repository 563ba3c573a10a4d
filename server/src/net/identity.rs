//! Who a certificate names: the subject's common name and the DNS and URI subject alternative
//! names (a SPIFFE id is a URI SAN). Read with rustls-webpki, which rustls already uses to
//! verify the certificate, plus a small walk of the subject's DER for the common name; IP
//! address SANs are not read.

use serde::{Deserialize, Serialize};
use tokio_rustls::rustls::pki_types::CertificateDer;

/// The identity a verified client certificate (or the server's own) presents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerIdentity {
    /// The subject's common name.
    pub subject_cn: Option<String>,
    /// URI SANs, e.g. `spiffe://example.org/ns/default/sa/envoy`.
    pub uri_sans: Vec<String>,
    /// DNS SANs.
    pub dns_sans: Vec<String>,
    /// The serial number in hex, which tells two certificates with the same names apart.
    pub serial: String,
}

impl PeerIdentity {
    /// The identity of a certificate; `None` when it cannot be parsed (rustls verified it, so
    /// that would be a bug worth not crashing over).
    pub fn of(cert: &CertificateDer<'_>) -> Option<Self> {
        let parsed = webpki::EndEntityCert::try_from(cert).ok()?;
        Some(Self {
            subject_cn: common_name(parsed.subject()),
            uri_sans: parsed.valid_uri_names().map(str::to_string).collect(),
            dns_sans: parsed.valid_dns_names().map(str::to_string).collect(),
            serial: parsed.serial().iter().map(|b| format!("{b:02x}")).collect(),
        })
    }

    /// One short line for logs: the first URI SAN, else the CN, else the first DNS SAN.
    pub fn summary(&self) -> String {
        let name = self.uri_sans.first().or(self.subject_cn.as_ref());
        match name.or(self.dns_sans.first()) {
            Some(name) => name.clone(),
            None => format!("serial {}", self.serial),
        }
    }
}

/// DER tags used by an X.509 `Name`.
const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
/// id-at-commonName, 2.5.4.3.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];

/// The common name in a `Name`'s content (a sequence of SETs of `{OID, value}` SEQUENCEs, the
/// outer SEQUENCE already removed, as webpki hands it out). The value is any string type
/// (UTF8String, PrintableString, IA5String, ...); a malformed name gives `None`.
pub(crate) fn common_name(name: &[u8]) -> Option<String> {
    let mut rdns = name;
    while !rdns.is_empty() {
        let (tag, set, rest) = element(rdns)?;
        rdns = rest;
        if tag != SET {
            return None;
        }
        let mut attributes = set;
        while !attributes.is_empty() {
            let (tag, attribute, rest) = element(attributes)?;
            attributes = rest;
            if tag != SEQUENCE {
                return None;
            }
            let (tag, oid, value) = element(attribute)?;
            if tag == OID && oid == COMMON_NAME {
                let (_, text, _) = element(value)?;
                return String::from_utf8(text.to_vec()).ok();
            }
        }
    }
    None
}

/// One DER element: its tag, its content and what follows it. Only definite lengths (DER
/// has no other) of up to four length bytes.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let len = rest[..count]
            .iter()
            .fold(0usize, |len, b| (len << 8) | usize::from(*b));
        (len, &rest[count..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(cn: &str, sans: &[&str]) -> CertificateDer<'static> {
        let mut params =
            rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "xdsloop");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.subject_alt_names.push(rcgen::SanType::URI(
            "spiffe://xdsloop.test/client".try_into().unwrap(),
        ));
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    #[test]
    fn identity_has_the_common_name_and_both_kinds_of_san() {
        let identity = PeerIdentity::of(&cert("envoy-1", &["envoy.test"])).unwrap();
        assert_eq!(identity.subject_cn.as_deref(), Some("envoy-1"));
        assert_eq!(identity.dns_sans, ["envoy.test"]);
        assert_eq!(identity.uri_sans, ["spiffe://xdsloop.test/client"]);
        assert!(!identity.serial.is_empty());
        assert_eq!(identity.summary(), "spiffe://xdsloop.test/client");
    }

    #[test]
    fn common_name_walk_refuses_malformed_names() {
        // SET { SEQUENCE { OID 2.5.4.3, UTF8String "ab" } }
        let good = [
            0x31, 0x0b, 0x30, 0x09, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x02, b'a', b'b',
        ];
        assert_eq!(common_name(&good).as_deref(), Some("ab"));
        for cut in 1..good.len() {
            assert_eq!(common_name(&good[..cut]), None, "truncated at {cut}");
        }
        let mut not_a_set = good;
        not_a_set[0] = 0x30;
        assert_eq!(common_name(&not_a_set), None);
        let mut other_oid = good;
        other_oid[8] = 0x0a;
        assert_eq!(common_name(&other_oid), None, "no CN");
        assert_eq!(
            common_name(&[0x31, 0x85, 1, 1, 1, 1, 1]),
            None,
            "5 length bytes"
        );
        assert_eq!(common_name(&[]), None);
    }
}
