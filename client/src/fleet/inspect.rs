//! What a fleet node reads from one resource: its name and the names it makes the node
//! subscribe to (CDS → EDS, LDS → RDS). Nothing else is decoded.

use std::borrow::Cow;

use prost::Message;
use xdsloop_proto::type_url;

use super::decode::{ClusterRef, Listener, name_in_place};

/// The role a type plays in Envoy-style subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// CDS: wildcard; EDS clusters drive EDS names.
    Clusters,
    /// EDS: the names CDS asks for.
    Endpoints,
    /// LDS: wildcard; HTTP connection managers drive RDS names.
    Listeners,
    /// RDS: the names LDS asks for.
    Routes,
    /// Any other type: wildcard, payload not inspected.
    Other,
}

impl Kind {
    pub(crate) fn of(url: &str) -> Self {
        match url {
            type_url::CLUSTER => Self::Clusters,
            type_url::ENDPOINT => Self::Endpoints,
            type_url::LISTENER => Self::Listeners,
            type_url::ROUTE => Self::Routes,
            _ => Self::Other,
        }
    }

    /// Whether the type is subscribed by wildcard (otherwise by names a parent type yields).
    pub(crate) fn is_wildcard(self) -> bool {
        !matches!(self, Self::Endpoints | Self::Routes)
    }

    /// The dependent kind this kind drives.
    pub(crate) fn child(self) -> Option<Kind> {
        match self {
            Self::Clusters => Some(Self::Endpoints),
            Self::Listeners => Some(Self::Routes),
            _ => None,
        }
    }
}

/// One resource as the fleet sees it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Inspected<'a> {
    /// `None` for [`Kind::Other`] (not decoded). A slice of the received message unless the
    /// resource was decoded to follow its dependents.
    pub name: Option<Cow<'a, [u8]>>,
    /// Names of the dependent type this resource needs (only when `follow` was asked); slices
    /// of the message for clusters.
    pub children: Vec<Cow<'a, str>>,
}

/// Decodes the few fields `kind` needs. `follow`: also collect dependent names.
pub(crate) fn inspect(kind: Kind, value: &[u8], follow: bool) -> Result<Inspected<'_>, String> {
    let err = |e: prost::DecodeError| format!("cannot decode: {e}");
    let (name, children) = match kind {
        Kind::Clusters if follow => {
            let cluster = ClusterRef::parse(value).map_err(|e| format!("cannot decode: {e}"))?;
            let children = cluster.eds_name.map(Cow::Borrowed).into_iter().collect();
            (Cow::Borrowed(cluster.name.as_bytes()), children)
        }
        Kind::Listeners if follow => {
            let listener = Listener::decode(value).map_err(err)?;
            let children = listener.route_names().into_iter().map(Cow::Owned).collect();
            (Cow::Owned(listener.name.into_bytes()), children)
        }
        Kind::Other => {
            return Ok(Inspected {
                name: None,
                children: Vec::new(),
            });
        }
        _ => {
            let name = name_in_place(value).map_err(|e| format!("cannot decode: {e}"))?;
            (Cow::Borrowed(name), Vec::new())
        }
    };
    if name.is_empty() {
        return Err("resource has no name".into());
    }
    Ok(Inspected {
        name: Some(name),
        children,
    })
}
