//! The fault stage's edits of responses ([`WireResponse`]). A response a rule changes is
//! decoded once, changed and kept whole in its head (the shared entries are dropped from it);
//! every other response goes out untouched.

use bytes::{Bytes, BytesMut};
use prost::Message;
use xdsloop_proto::discovery::{DeltaDiscoveryResponse, DiscoveryResponse};

use std::sync::Arc;

use super::{DeltaResponse, Manifest, Outbound, SotwResponse};
use crate::{
    protocol::wire::{Edit, WireResponse},
    snapshot::views::View,
};

/// A field key no xDS message uses (number 1000, length-delimited): decoders skip it.
const PAD_FIELD: u64 = (1000 << 3) | 2;
/// A key with wire type 7, which no protobuf decoder accepts.
const UNDECODABLE: &[u8] = &[0x0f];

/// `any`: whether the response has a resource at all (in its entries or its head).
fn position(manifest: &Manifest, any: bool, name: Option<&str>) -> Option<usize> {
    match name {
        Some(name) => manifest.resources().iter().position(|r| r.name == name),
        None => any.then_some(0),
    }
}

fn positions(manifest: &Manifest, wanted: &dyn Fn(&str) -> bool) -> Vec<usize> {
    let resources = manifest.resources().iter().enumerate();
    resources
        .filter(|(_, r)| wanted(&r.name))
        .map(|(i, _)| i)
        .collect()
}

/// Keeps the items whose index is not in `drop` (ascending).
fn remove<T>(items: &mut Vec<T>, drop: &[usize]) -> bool {
    let before = items.len();
    let mut i = 0;
    items.retain(|_| {
        let keep = drop.binary_search(&i).is_err();
        i += 1;
        keep
    });
    items.len() < before
}

/// The manifest without the resources at `drop` (ascending), so observers see what was sent.
fn manifest_without(manifest: &Manifest, drop: &[usize]) -> Manifest {
    let kept: Vec<_> = manifest
        .resources()
        .iter()
        .enumerate()
        .filter(|(i, _)| drop.binary_search(i).is_err())
        .map(|(_, r)| r.clone())
        .collect();
    match manifest {
        Manifest::Unknown => Manifest::Unknown,
        Manifest::Sotw(view) => Manifest::Sotw(Arc::new(View::new(kept.into(), view.hash))),
        Manifest::Delta(_) => Manifest::Delta(kept.into()),
        Manifest::Heartbeat(_) => Manifest::Heartbeat(kept.into()),
        Manifest::Replayed(_) => Manifest::Replayed(kept.into()),
    }
}

/// Pads `out` with an unknown field so that it encodes to at least `bytes`. The field's
/// zeros are a slice of one buffer every padded response shares ([`zeros`]), so the copies a
/// slow reader's queue holds, on every stream, cost one buffer.
fn pad_to<M: Message + Default>(out: &mut Outbound<M>, bytes: usize) -> bool {
    let current = out.encoded_len();
    if current >= bytes {
        return true;
    }
    let n = bytes - current;
    let mut key = BytesMut::with_capacity(12);
    prost::encoding::encode_varint(PAD_FIELD, &mut key);
    prost::encoding::encode_varint(n as u64, &mut key);
    out.entries.push(key.freeze());
    out.entries.push(zeros(n));
    true
}

/// `n` zero bytes, sliced from one process-wide buffer that grows to the largest pad asked
/// for (a scenario bounds it: `MAX_OVERSIZE_BYTES`).
fn zeros(n: usize) -> Bytes {
    static SHARED: std::sync::Mutex<Bytes> = std::sync::Mutex::new(Bytes::new());
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if shared.len() < n {
        *shared = Bytes::from(vec![0u8; n]);
    }
    shared.slice(..n)
}

/// Decodes `out` into its head (dropping the shared entries) so `change` can edit it.
fn in_head<M: Message + Default>(
    out: &mut Outbound<M>,
    change: impl FnOnce(&mut M) -> bool,
) -> bool {
    let mut message = out.to_message();
    if !change(&mut message) {
        return false;
    }
    out.head = message;
    out.entries = Vec::<Bytes>::new();
    true
}

impl WireResponse for SotwResponse {
    fn entry_bytes(&self) -> usize {
        self.entries.iter().map(Bytes::len).sum()
    }

    fn version(&self) -> &str {
        &self.head.version_info
    }

    fn set_nonce(&mut self, nonce: &str) {
        nonce.clone_into(&mut self.head.nonce);
    }

    fn position(&self, name: Option<&str>) -> Option<usize> {
        let any = !self.entries.is_empty() || !self.head.resources.is_empty();
        position(&self.manifest, any, name)
    }

    fn positions(&self, wanted: &dyn Fn(&str) -> bool) -> Vec<usize> {
        positions(&self.manifest, wanted)
    }

    fn name_at(&self, i: usize) -> Option<&str> {
        self.manifest.resources().get(i).map(|r| r.name.as_str())
    }

    fn edit(&mut self, edit: Edit<'_>) -> bool {
        if let Edit::Remove(drop) = edit {
            self.manifest = manifest_without(&self.manifest, drop);
        }
        match edit {
            Edit::PadTo(bytes) => pad_to(self, bytes),
            Edit::ResponseTypeUrl(url) => {
                url.clone_into(&mut self.head.type_url);
                true
            }
            _ => in_head(self, |m: &mut DiscoveryResponse| {
                let resources = &mut m.resources;
                match edit {
                    Edit::Corrupt(i) => resources
                        .get_mut(i)
                        .map(|a| a.value = UNDECODABLE.to_vec())
                        .is_some(),
                    Edit::Duplicate(i) => match resources.get(i).cloned() {
                        Some(any) => {
                            resources.insert(i + 1, any);
                            true
                        }
                        None => false,
                    },
                    Edit::ResourceTypeUrl(i, url) => resources
                        .get_mut(i)
                        .map(|a| url.clone_into(&mut a.type_url))
                        .is_some(),
                    Edit::Remove(drop) => remove(resources, drop),
                    Edit::ResponseTypeUrl(_) | Edit::PadTo(_) => unreachable!("handled above"),
                }
            }),
        }
    }
}

impl WireResponse for DeltaResponse {
    fn entry_bytes(&self) -> usize {
        self.entries.iter().map(Bytes::len).sum()
    }

    fn version(&self) -> &str {
        &self.head.system_version_info
    }

    fn set_nonce(&mut self, nonce: &str) {
        nonce.clone_into(&mut self.head.nonce);
    }

    fn position(&self, name: Option<&str>) -> Option<usize> {
        let any = !self.entries.is_empty() || !self.head.resources.is_empty();
        position(&self.manifest, any, name)
    }

    fn positions(&self, wanted: &dyn Fn(&str) -> bool) -> Vec<usize> {
        positions(&self.manifest, wanted)
    }

    fn name_at(&self, i: usize) -> Option<&str> {
        self.manifest.resources().get(i).map(|r| r.name.as_str())
    }

    fn edit(&mut self, edit: Edit<'_>) -> bool {
        if let Edit::Remove(drop) = edit {
            self.manifest = manifest_without(&self.manifest, drop);
        }
        match edit {
            Edit::PadTo(bytes) => pad_to(self, bytes),
            Edit::ResponseTypeUrl(url) => {
                url.clone_into(&mut self.head.type_url);
                true
            }
            _ => in_head(self, |m: &mut DeltaDiscoveryResponse| {
                let resources = &mut m.resources;
                match edit {
                    Edit::Corrupt(i) => resources
                        .get_mut(i)
                        .and_then(|r| r.resource.as_mut())
                        .map(|a| a.value = UNDECODABLE.to_vec())
                        .is_some(),
                    Edit::Duplicate(i) => match resources.get(i).cloned() {
                        Some(resource) => {
                            resources.insert(i + 1, resource);
                            true
                        }
                        None => false,
                    },
                    Edit::ResourceTypeUrl(i, url) => resources
                        .get_mut(i)
                        .and_then(|r| r.resource.as_mut())
                        .map(|a| url.clone_into(&mut a.type_url))
                        .is_some(),
                    Edit::Remove(drop) => remove(resources, drop),
                    Edit::ResponseTypeUrl(_) | Edit::PadTo(_) => unreachable!("handled above"),
                }
            }),
        }
    }
}
