//! [`Report::Received`]: each response as it arrived, before it is checked, for observers that
//! narrate or record the loop. Built only when the config asks for it, and never consulted by
//! the protocol: every entry is read for the report, readable or not, so a response the mux
//! rejects is still shown as it came.

use super::Mux;
use super::wire::Response;
use crate::config::ReceivedReports;
use crate::core::event::{ReceivedReport, Report};

impl Mux {
    pub(super) fn report_received(&mut self, response: &Response) {
        let detail = self.config.received;
        if detail == ReceivedReports::Off {
            return;
        }
        let (type_url, version, nonce) = response.head();
        let mut report = ReceivedReport {
            stream: self.streams.id_of(&self.stream_of(type_url)),
            mode: response.variant(),
            type_url: type_url.to_string(),
            version: version.to_string(),
            nonce: nonce.to_string(),
            resources: Vec::new(),
            removed: response.removed().to_vec(),
            undecodable: 0,
            bytes: response.encoded_len(),
        };
        for line in response.lines(&self.config.codec, detail) {
            match line {
                Some(line) => report.resources.push(line),
                None => report.undecodable += 1,
            }
        }
        self.out.reports.push(Report::Received(Box::new(report)));
    }
}
