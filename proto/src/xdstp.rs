//! Resource names in the `xdstp://` form (xDS federation, gRFC A47 and xRFC TP1):
//! `xdstp://[AUTHORITY]/TYPE/ID[?KEY=VALUE&...][#DIRECTIVES]`, where TYPE is the resource's
//! message name (`envoy.config.listener.v3.Listener`) and the query holds context parameters.
//!
//! Two names that differ only in the order of their context parameters name the same resource.
//! Clients (gRPC, Envoy) subscribe with the parameters sorted, so both ends compare names in
//! [`normalize`]d form: parameters sorted by key, then value; everything else byte for byte
//! (no percent-decoding). Names in any other form are left alone. Wildcard collections
//! (`.../*`) and directives are passed through, not interpreted. `fixture_name` applies
//! this to a resource decoded from a fixture (S18).

use std::borrow::Cow;

use prost_reflect::DynamicMessage;

use crate::{
    DecodeError, Position,
    locate::{Failure, Step},
    type_url,
};

/// The scheme prefix of a federation name.
pub const SCHEME: &str = "xdstp://";

/// A parsed `xdstp://` name, borrowing from the text it was parsed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdstpName<'a> {
    /// May be empty (`xdstp:///TYPE/ID`).
    pub authority: &'a str,
    /// The resource's message name.
    pub resource_type: &'a str,
    /// The resource's id within its authority and type: everything after TYPE up to `?` or
    /// `#`, slashes included (a collection's `*` among them).
    pub id: &'a str,
    /// Context parameters, in the order written.
    pub params: Vec<(&'a str, &'a str)>,
    /// Everything from `#` on, if present.
    pub directives: Option<&'a str>,
}

/// Whether `name` is written as an `xdstp://` name.
pub fn is_xdstp(name: &str) -> bool {
    name.starts_with(SCHEME)
}

/// Parses an `xdstp://` name; the error says what is missing, and names it.
pub fn parse(name: &str) -> Result<XdstpName<'_>, String> {
    let rest = name
        .strip_prefix(SCHEME)
        .ok_or_else(|| format!("{name:?} does not start with {SCHEME}"))?;
    let (rest, directives) = match rest.split_once('#') {
        Some((rest, directives)) => (rest, Some(directives)),
        None => (rest, None),
    };
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    let shape = "xdstp://AUTHORITY/TYPE/ID";
    let (authority, path) = path
        .split_once('/')
        .ok_or_else(|| format!("{name:?} has no resource type: expected {shape}"))?;
    let (resource_type, id) = path
        .split_once('/')
        .ok_or_else(|| format!("{name:?} has no resource id: expected {shape}"))?;
    if resource_type.is_empty() || id.is_empty() {
        return Err(format!(
            "{name:?} has an empty resource type or id: expected {shape}"
        ));
    }
    let params = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    Ok(XdstpName {
        authority,
        resource_type,
        id,
        params,
        directives,
    })
}

impl XdstpName<'_> {
    /// The name written back with its context parameters sorted by key, then value.
    pub fn canonical(&self) -> String {
        let mut params = self.params.clone();
        params.sort_unstable();
        let mut out = format!(
            "{SCHEME}{}/{}/{}",
            self.authority, self.resource_type, self.id
        );
        for (i, (key, value)) in params.iter().enumerate() {
            out.push(if i == 0 { '?' } else { '&' });
            out.push_str(key);
            if !value.is_empty() {
                out.push('=');
                out.push_str(value);
            }
        }
        if let Some(directives) = self.directives {
            out.push('#');
            out.push_str(directives);
        }
        out
    }
}

/// `name` in the form both ends compare: an `xdstp://` name with its context parameters
/// sorted; any other name (or a malformed `xdstp://` one, which then matches only itself)
/// unchanged and not copied.
pub fn normalize(name: &str) -> Cow<'_, str> {
    if !is_xdstp(name) {
        return Cow::Borrowed(name);
    }
    match parse(name) {
        Ok(parsed) => {
            let canonical = parsed.canonical();
            if canonical == name {
                Cow::Borrowed(name)
            } else {
                Cow::Owned(canonical)
            }
        }
        Err(_) => Cow::Borrowed(name),
    }
}

/// [`normalize`] in place, for names already owned.
pub fn normalize_owned(name: &mut String) {
    if let Cow::Owned(canonical) = normalize(name) {
        *name = canonical;
    }
}

/// S18: an `xdstp://` name must name its own type, and is served (and written into the
/// resource) with its context parameters sorted, the form clients subscribe with.
pub(crate) fn fixture_name(
    message: &mut DynamicMessage,
    type_url: &str,
    name: String,
    label: &str,
) -> Result<String, Failure> {
    if !is_xdstp(&name) {
        return Ok(name);
    }
    let field = type_url::name_field(type_url);
    let refuse = |message: String| {
        let error = DecodeError::Field {
            at: Position::default(),
            resource: label.to_string(),
            path: field.to_string(),
            message,
        };
        let step = Step::Field {
            name: field.to_string(),
            json: type_url::json_name(field).to_string(),
        };
        Failure::new(error).at(vec![step], false)
    };
    let parsed = parse(&name).map_err(refuse)?;
    let expected = type_url::message_name(type_url);
    if parsed.resource_type != expected {
        return Err(refuse(format!(
            "the xdstp:// name's type is {} but the resource is a {expected}: clients ask for \
             this type as xdstp://{}/{expected}/{}",
            parsed.resource_type, parsed.authority, parsed.id
        )));
    }
    let canonical = parsed.canonical();
    if canonical != name {
        message.set_field_by_name(field, prost_reflect::Value::String(canonical.clone()));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLUSTER: &str = "envoy.config.cluster.v3.Cluster";

    #[test]
    fn s18_xdstp_context_params_sorted() {
        let written = format!("xdstp://xdsloop.test/{CLUSTER}/greeter-a?zone=z&app=g");
        let sorted = format!("xdstp://xdsloop.test/{CLUSTER}/greeter-a?app=g&zone=z");
        assert_eq!(normalize(&written), sorted);
        assert!(
            matches!(normalize(&sorted), Cow::Borrowed(_)),
            "already sorted: no copy"
        );
        let same_key = format!("xdstp://a/{CLUSTER}/x?k=2&k=1&flag");
        assert_eq!(
            normalize(&same_key),
            format!("xdstp://a/{CLUSTER}/x?flag&k=1&k=2")
        );
        let mut owned = written.clone();
        normalize_owned(&mut owned);
        assert_eq!(owned, sorted);
    }

    #[test]
    fn s18_everything_but_the_parameter_order_is_kept_byte_for_byte() {
        let name = format!("xdstp:///{CLUSTER}/a/b%2Fc?z=%20&a=1#alt=xdstp://b/x");
        assert_eq!(
            normalize(&name),
            format!("xdstp:///{CLUSTER}/a/b%2Fc?a=1&z=%20#alt=xdstp://b/x")
        );
        let parsed = parse(&name).unwrap();
        assert_eq!(
            (parsed.authority, parsed.resource_type, parsed.id),
            ("", CLUSTER, "a/b%2Fc")
        );
        for plain in ["web", "outbound|80||web.default", "*", "xds:///greeter"] {
            assert!(matches!(normalize(plain), Cow::Borrowed(n) if n == plain));
        }
    }

    #[test]
    fn s18_malformed_names_are_explained() {
        let no_type = parse("xdstp://authority").unwrap_err();
        assert!(no_type.contains("no resource type") && no_type.contains("xdstp://authority"));
        let no_id = parse(&format!("xdstp://a/{CLUSTER}")).unwrap_err();
        assert!(no_id.contains("no resource id"), "{no_id}");
        assert!(parse(&format!("xdstp://a/{CLUSTER}/")).is_err());
        assert_eq!(
            normalize("xdstp://authority"),
            "xdstp://authority",
            "left alone"
        );
    }
}
