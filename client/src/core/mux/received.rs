//! [`Report::Received`]: each response as it arrived, before it is checked, for observers that
//! narrate or record the loop. Built only when the config asks for it, and never consulted by
//! the protocol: it reads the response on its own so that a response the mux rejects is still
//! shown as it came.

use prost::Message;
use xdsloop_proto::Codec;
use xdsloop_proto::discovery::{Any, DeltaDiscoveryResponse, DiscoveryResponse, WireResource};
use xdsloop_proto::wrapper::RESOURCE_WRAPPER;

use super::Mux;
use crate::config::{ReceivedReports, Variant};
use crate::core::event::{ReceivedReport, ReceivedResource, Report};

impl Mux {
    pub(super) fn report_sotw_received(&mut self, response: &DiscoveryResponse) {
        let detail = self.config.received;
        if detail == ReceivedReports::Off {
            return;
        }
        let mut report = self.received(Variant::Sotw, &response.type_url, response.encoded_len());
        report.version = response.version_info.clone();
        report.nonce = response.nonce.clone();
        for any in &response.resources {
            match sotw_entry(&self.config.codec, detail, any) {
                Some(entry) => report.resources.push(entry),
                None => report.undecodable += 1,
            }
        }
        self.out.reports.push(Report::Received(Box::new(report)));
    }

    pub(super) fn report_delta_received(&mut self, response: &DeltaDiscoveryResponse) {
        let detail = self.config.received;
        if detail == ReceivedReports::Off {
            return;
        }
        let mut report = self.received(Variant::Delta, &response.type_url, response.encoded_len());
        report.version = response.system_version_info.clone();
        report.nonce = response.nonce.clone();
        report.removed = response.removed_resources.clone();
        for resource in &response.resources {
            let any = resource.resource.as_ref();
            let name = match (resource.name.as_str(), any) {
                ("", Some(any)) => name_of(&self.config.codec, any),
                ("", None) => None,
                (name, _) => Some(name.to_string()),
            };
            let Some(name) = name else {
                report.undecodable += 1;
                continue;
            };
            report.resources.push(ReceivedResource {
                name,
                version: Some(resource.version.clone()),
                body: any.and_then(|any| body(detail, any)),
                // Removals travel in `removed_resources`: an entry without a body is a
                // heartbeat.
                heartbeat: any.is_none(),
            });
        }
        self.out.reports.push(Report::Received(Box::new(report)));
    }

    pub(super) fn received(&self, mode: Variant, type_url: &str, bytes: usize) -> ReceivedReport {
        ReceivedReport {
            stream: self.streams.id_of(&self.stream_of(type_url)),
            mode,
            type_url: type_url.to_string(),
            version: String::new(),
            nonce: String::new(),
            resources: Vec::new(),
            removed: Vec::new(),
            undecodable: 0,
            bytes,
        }
    }
}

/// A SotW entry: a bare resource, or a `Resource` wrapper (C17) holding one, or none (a
/// heartbeat for the wrapper's name). `None`: no name could be read.
fn sotw_entry(codec: &Codec, detail: ReceivedReports, any: &Any) -> Option<ReceivedResource> {
    let entry = |name, body, heartbeat| ReceivedResource {
        name,
        version: None,
        body,
        heartbeat,
    };
    if any.type_url != RESOURCE_WRAPPER {
        return Some(entry(name_of(codec, any)?, body(detail, any), false));
    }
    let wrapper = WireResource::decode(any.value.as_slice()).ok()?;
    match &wrapper.resource {
        Some(inner) => Some(entry(name_of(codec, inner)?, body(detail, inner), false)),
        None if wrapper.name.is_empty() => None,
        None => Some(entry(wrapper.name, None, true)),
    }
}

fn name_of(codec: &Codec, any: &Any) -> Option<String> {
    codec.resource_name(&any.type_url, &any.value).ok()
}

fn body(detail: ReceivedReports, any: &Any) -> Option<Any> {
    (detail == ReceivedReports::Bodies).then(|| any.clone())
}
