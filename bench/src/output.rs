//! Results: medians per cell, the machine, the JSON file and the terminal table.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use xdsloop_client::fleet::report::human_bytes;

use crate::admin_load::AdminLoad;
use crate::apply::ApplyTiming;
use crate::cell::{CellRun, percentile};
use crate::edit::EditToAcked;
use crate::extras::{DeltaChange, StatusTiming, median};
use crate::page::PageCost;
use crate::record::RecordCost;

#[derive(Debug, Serialize)]
pub(crate) struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub memory_gib: f64,
    pub os: String,
}

impl Machine {
    fn detect() -> Self {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            .unwrap_or_else(|| "unknown".into());
        let memory_kib: f64 = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        Self {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            memory_gib: (memory_kib / (1024.0 * 1024.0) * 10.0).round() / 10.0,
            os: read("/proc/sys/kernel/osrelease").trim().to_string(),
        }
    }

    pub(crate) fn line(&self) -> String {
        format!(
            "{} CPUs ({}), {} GiB RAM, Linux {}",
            self.cpus, self.cpu_model, self.memory_gib, self.os
        )
    }
}

/// One matrix cell: every run and the field-wise medians.
#[derive(Debug, Serialize)]
pub(crate) struct CellResult {
    pub nodes: usize,
    /// Server and fleet over TLS (the server's certificate, no client certificates).
    pub tls: bool,
    pub clusters: usize,
    pub endpoints: usize,
    pub median: CellRun,
    pub runs: Vec<CellRun>,
}

impl CellResult {
    pub(crate) fn new(nodes: usize, clusters: usize, endpoints: usize, runs: Vec<CellRun>) -> Self {
        let m = |f: fn(&CellRun) -> f64| median(runs.iter().map(f).collect());
        let median = CellRun {
            first_config_p50_ms: m(|r| r.first_config_p50_ms),
            first_config_max_ms: m(|r| r.first_config_max_ms),
            push_p50_ms: m(|r| r.push_p50_ms),
            push_max_ms: m(|r| r.push_max_ms),
            write_to_first_byte_ms: m(|r| r.write_to_first_byte_ms),
            server_cpu_s: m(|r| r.server_cpu_s),
            fleet_cpu_s: m(|r| r.fleet_cpu_s),
            fleet_cpu_per_node_ms: m(|r| r.fleet_cpu_per_node_ms),
            server_peak_rss_mb: m(|r| r.server_peak_rss_mb),
            initial_bytes: m(|r| r.initial_bytes as f64) as u64,
            push_bytes: m(|r| r.push_bytes as f64) as u64,
            nacks: runs.iter().map(|r| r.nacks).sum(),
            reconnects: runs.iter().map(|r| r.reconnects).sum(),
            load_average: m(|r| r.load_average),
        };
        Self {
            nodes,
            tls: false,
            clusters,
            endpoints,
            median,
            runs,
        }
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct Results {
    #[serde(skip)]
    path: PathBuf,
    pub machine: Machine,
    pub runs_per_cell: usize,
    pub quick: bool,
    /// Rename of new files → every node ACKed them (N = 1,000, C = 100 by default).
    pub edit: Option<EditToAcked>,
    pub cells: Vec<CellResult>,
    /// Median over every run of every cell.
    pub write_to_first_byte_p50_ms: Option<f64>,
    pub reload_10k_ms: Option<f64>,
    /// The same directory reloaded after one of its files changed.
    pub reload_10k_one_file_ms: Option<f64>,
    pub delta_one_change: Option<DeltaChange>,
    /// `None`: not measured (the server has no `--admin`/`/status`).
    pub status: Option<StatusTiming>,
    #[serde(skip)]
    pub status_streams: usize,
    pub client_apply: Option<ApplyTiming>,
    /// `None`: not measured (the server has no admin endpoint, so no page).
    pub page: Option<PageCost>,
    /// `None`: not measured (the server has no `--record`).
    pub record: Option<RecordCost>,
    /// `None`: not measured (the server has no admin endpoint).
    pub admin_load: Option<AdminLoad>,
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

impl Results {
    pub(crate) fn new(path: &Path, runs_per_cell: usize, quick: bool) -> Self {
        Self {
            path: path.to_path_buf(),
            machine: Machine::detect(),
            runs_per_cell,
            quick,
            edit: None,
            cells: Vec::new(),
            write_to_first_byte_p50_ms: None,
            reload_10k_ms: None,
            reload_10k_one_file_ms: None,
            delta_one_change: None,
            status: None,
            status_streams: 0,
            client_apply: None,
            page: None,
            record: None,
            admin_load: None,
        }
    }

    /// Writes the JSON file (after every cell, so a long run that fails keeps what it had).
    pub(crate) fn save(&mut self) -> Result<(), String> {
        let mut all: Vec<f64> = (self.cells.iter())
            .flat_map(|c| c.runs.iter().map(|r| r.write_to_first_byte_ms))
            .collect();
        all.sort_by(f64::total_cmp);
        self.write_to_first_byte_p50_ms = (!all.is_empty()).then(|| percentile(&all, 0.5));
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let json = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&self.path, json).map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// The Markdown table and the single numbers, as printed and pasted into the README.
    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Machine: {}", self.machine.line());
        self.edit_line(&mut out);
        // Runs of a single cell (--edit-only, --record-only, --extras-only) have no matrix.
        if !self.cells.is_empty() {
            let _ = writeln!(
                out,
                "SotW fleet, CDS wildcard + EDS; {} run(s) per row, medians. Push = one endpoint \
                 resource edited (write-temp-then-rename) until every node ACKed it. TLS: the \
                 server with --tls-cert, the fleet with --tls-ca (run right after the plaintext \
                 row of the same N).\n",
                self.runs_per_cell
            );
            let _ = writeln!(
                out,
                "| N | C | E | first config p50 / max | push to all ACKed p50 / max | server CPU | server peak RSS | bytes on the wire (sync + push) | fleet CPU (per node) | load avg |"
            );
            let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for c in &self.cells {
                let m = &c.median;
                let _ = writeln!(
                    out,
                    "| {}{} | {} | {} | {:.0} / {:.0} ms | {:.0} / {:.0} ms | {:.2} s | {:.0} MiB | {} + {} | {:.2} s ({:.2} ms) | {:.1} |",
                    c.nodes,
                    if c.tls { " TLS" } else { "" },
                    c.clusters,
                    c.endpoints,
                    m.first_config_p50_ms,
                    m.first_config_max_ms,
                    m.push_p50_ms,
                    m.push_max_ms,
                    m.server_cpu_s,
                    m.server_peak_rss_mb,
                    human_bytes(m.initial_bytes),
                    human_bytes(m.push_bytes),
                    m.fleet_cpu_s,
                    m.fleet_cpu_per_node_ms,
                    m.load_average
                );
            }
            out.push('\n');
        }
        self.single_numbers(&mut out);
        out
    }

    /// Edit to all ACKed, printed first: what a user waits for after saving.
    fn edit_line(&self, out: &mut String) {
        if let Some(e) = &self.edit {
            let m = &e.median;
            let _ = writeln!(
                out,
                "\nEdit to all ACKed (N = {} SotW nodes, C = {} clusters x {} endpoints; new clusters \
                 and endpoints files renamed into place; default server settings; from the rename \
                 to each node's last ACK): p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; first pushed \
                 byte {:.0} ms (medians of {} runs; load average {})\n",
                e.nodes,
                e.clusters,
                e.endpoints,
                m.p50_ms,
                m.p99_ms,
                m.max_ms,
                m.first_byte_ms,
                e.runs.len(),
                e.runs
                    .iter()
                    .map(|r| format!("{:.1}", r.load_average))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }

    fn single_numbers(&self, out: &mut String) {
        if let Some(v) = self.write_to_first_byte_p50_ms {
            let _ = writeln!(out, "- fixture write → first pushed byte (p50): {v:.0} ms");
        }
        if let Some(v) = self.reload_10k_ms {
            let _ = writeln!(out, "- reload of a 10,000-resource directory: {v:.0} ms");
        }
        if let Some(v) = self.reload_10k_one_file_ms {
            let _ = writeln!(
                out,
                "- the same directory reloaded after one file changed: {v:.0} ms"
            );
        }
        if let Some(d) = &self.delta_one_change {
            let _ = writeln!(
                out,
                "- Delta, one resource of {} changes: {:.0} bytes per client for a {}-byte \
                 resource ({:.2}×), {} nodes all ACKed in {:.0} ms, server peak RSS {:.0} MiB",
                d.resources,
                d.bytes_per_client,
                d.resource_bytes,
                d.ratio,
                d.nodes,
                d.push_max_ms,
                d.server_peak_rss_mb
            );
        }
        match &self.status {
            Some(s) => {
                let _ = writeln!(
                    out,
                    "- /status with {} streams: {:.0} ms (p50), {} bytes",
                    s.streams, s.p50_ms, s.bytes
                );
            }
            None if self.status_streams > 0 => {
                let _ = writeln!(
                    out,
                    "- /status with {} streams: not measured (the server has no --admin / /status)",
                    self.status_streams
                );
            }
            None => {}
        }
        if let Some(p) = &self.page {
            let _ = writeln!(
                out,
                "- live page, one push to {} streams: page closed {:.0} ms all ACKed, server CPU \
                 {:.0} ms; page open (grid + one conversation) {:.0} ms, {:.0} ms CPU; the page \
                 got {:.0} events, {} per push",
                p.streams,
                p.closed.push_max_ms,
                p.closed.server_cpu_ms,
                p.open.push_max_ms,
                p.open.server_cpu_ms,
                p.page_events_per_push,
                human_bytes(p.page_bytes_per_push as u64)
            );
        }
        if let Some(r) = &self.record {
            let _ = writeln!(
                out,
                "- --record, one push to {} streams (C = {}): without {:.0} ms all ACKed, server \
                 CPU {:.0} ms; with --record FILE {:.0} ms, {:.0} ms CPU; the transcript took {} \
                 for the fleet's sync and {} per push",
                r.streams,
                r.clusters,
                r.off.push_max_ms,
                r.off.server_cpu_ms,
                r.on.push_max_ms,
                r.on.server_cpu_ms,
                human_bytes(r.sync_bytes),
                human_bytes(r.bytes_per_push as u64)
            );
        }
        if let Some(a) = &self.admin_load {
            let _ = writeln!(
                out,
                "- admin load, one push to {} streams (C = {}): unloaded {:.0} ms all ACKed, \
                 server CPU {:.0} ms; with {} /status pollers and {} /events streams {:.0} ms \
                 ({:.2}x), {:.0} ms CPU; /status answered {:.1}/s, p50 {:.0} ms; peak RSS {:.0} MiB",
                a.streams,
                a.clusters,
                a.unloaded.push_max_ms,
                a.unloaded.server_cpu_ms,
                crate::admin_load::POLLERS,
                crate::admin_load::PAGES,
                a.loaded.push_max_ms,
                a.loaded.push_max_ms / a.unloaded.push_max_ms.max(0.001),
                a.loaded.server_cpu_ms,
                a.status_per_second,
                a.status_p50_ms,
                a.peak_rss_mib
            );
        }
        if let Some(a) = &self.client_apply {
            let _ = writeln!(
                out,
                "- client, one {}-endpoint EDS update ({:.1} MiB): {:.0} ms from response bytes to \
                 applied and ACKed (p50); {:.0} ms from the server publishing it to the client \
                 reporting it applied",
                a.endpoints,
                mib(a.encoded_bytes as u64),
                a.core_p50_ms,
                a.end_to_end_p50_ms
            );
        }
    }
}
