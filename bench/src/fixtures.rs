//! Generated fixture sets: C EDS clusters with E endpoints each, 100 resources per file (as a
//! real config repository would split them), and the one-resource edit the bench times.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use xdsloop_proto::type_url;

/// Resources per generated file.
const PER_FILE: usize = 100;

/// A generated fixture directory.
#[derive(Debug)]
pub(crate) struct FixtureSet {
    pub dir: PathBuf,
    pub clusters: usize,
    pub endpoints: usize,
    /// Edits made so far; each changes cluster 0's first endpoint port.
    edits: u32,
}

pub(crate) fn cluster_name(i: usize) -> String {
    format!("cluster-{i:05}")
}

/// Cluster `i`; `timeout_s` is its connect timeout in seconds (edits move cluster 0's).
fn cluster_json(i: usize, timeout_s: u32) -> String {
    format!(
        r#"{{"@type":"{}","name":"{}","type":"EDS","connect_timeout":"{timeout_s}s","lb_policy":"ROUND_ROBIN","eds_cluster_config":{{"eds_config":{{"ads":{{}},"resource_api_version":"V3"}}}}}}"#,
        type_url::CLUSTER,
        cluster_name(i)
    )
}

/// Cluster `i`'s endpoints; `first_port` is the port of its first endpoint (edits move it).
pub(crate) fn endpoints_json(i: usize, endpoints: usize, first_port: u32) -> String {
    let mut lb = String::new();
    for e in 0..endpoints {
        let port = if e == 0 { first_port } else { 8080 };
        let ip = format!("10.{}.{}.{}", (i >> 8) & 255, i & 255, e % 250 + 1);
        if e > 0 {
            lb.push(',');
        }
        let _ = write!(
            lb,
            r#"{{"endpoint":{{"address":{{"socket_address":{{"address":"{ip}","port_value":{port}}}}}}}}}"#
        );
    }
    format!(
        r#"{{"@type":"{}","cluster_name":"{}","endpoints":[{{"locality":{{"zone":"zone-a"}},"lb_endpoints":[{lb}]}}]}}"#,
        type_url::ENDPOINT,
        cluster_name(i)
    )
}

/// Writes by temp file and rename: the loader never sees a half-written file.
fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let temp = temp_path(path);
    std::fs::write(&temp, text)?;
    std::fs::rename(&temp, path)
}

/// A leading dot: the loader ignores hidden files, so the temp file is never loaded.
fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    path.with_file_name(format!(".{name}.tmp"))
}

fn chunk_path(dir: &Path, kind: &str, chunk: usize) -> PathBuf {
    dir.join(kind).join(format!("{kind}-{chunk:04}.json"))
}

impl FixtureSet {
    /// Generates `clusters` clusters with `endpoints` endpoints each under `dir`.
    pub(crate) fn generate(dir: &Path, clusters: usize, endpoints: usize) -> io::Result<Self> {
        for kind in ["clusters", "endpoints"] {
            std::fs::create_dir_all(dir.join(kind))?;
        }
        let set = Self {
            dir: dir.to_path_buf(),
            clusters,
            endpoints,
            edits: 0,
        };
        for chunk in 0..clusters.div_ceil(PER_FILE) {
            let text = set.clusters_text(chunk, 1);
            write_atomically(&chunk_path(dir, "clusters", chunk), &text)?;
            set.write_endpoints(chunk, 8080)?;
        }
        Ok(set)
    }

    fn range(&self, chunk: usize) -> std::ops::Range<usize> {
        chunk * PER_FILE..((chunk + 1) * PER_FILE).min(self.clusters)
    }

    fn clusters_text(&self, chunk: usize, first_timeout_s: u32) -> String {
        let list: Vec<String> = (self.range(chunk))
            .map(|i| cluster_json(i, if i == 0 { first_timeout_s } else { 1 }))
            .collect();
        format!("[\n{}\n]\n", list.join(",\n"))
    }

    fn endpoints_text(&self, chunk: usize, first_port: u32) -> String {
        let list: Vec<String> = (self.range(chunk))
            .map(|i| {
                let port = if i == 0 { first_port } else { 8080 };
                endpoints_json(i, self.endpoints, port)
            })
            .collect();
        format!("[\n{}\n]\n", list.join(",\n"))
    }

    fn write_endpoints(&self, chunk: usize, first_port: u32) -> io::Result<()> {
        let text = self.endpoints_text(chunk, first_port);
        write_atomically(&chunk_path(&self.dir, "endpoints", chunk), &text)
    }

    /// The edit users make with a deploy script or an editor that saves by rename: new clusters
    /// and endpoints files (cluster 0's timeout and first port change) written beside the old
    /// ones under hidden names, then renamed into place. Returns the moment of the first rename.
    pub(crate) fn rename_new_files_into_place(&mut self) -> io::Result<Instant> {
        self.edits += 1;
        let clusters = chunk_path(&self.dir, "clusters", 0);
        let endpoints = chunk_path(&self.dir, "endpoints", 0);
        std::fs::write(temp_path(&clusters), self.clusters_text(0, 1 + self.edits))?;
        std::fs::write(
            temp_path(&endpoints),
            self.endpoints_text(0, 8080 + self.edits),
        )?;
        let renamed = Instant::now();
        std::fs::rename(temp_path(&clusters), &clusters)?;
        std::fs::rename(temp_path(&endpoints), &endpoints)?;
        Ok(renamed)
    }

    /// Changes one resource: cluster 0's endpoints (its first port). Rewrites that file by
    /// temp-then-rename. Returns the changed resource's fixture JSON.
    pub(crate) fn edit_one_endpoint(&mut self) -> io::Result<String> {
        self.edits += 1;
        let port = 8080 + self.edits;
        self.write_endpoints(0, port)?;
        Ok(endpoints_json(0, self.endpoints, port))
    }

    pub(crate) fn resource_count(&self) -> usize {
        self.clusters * 2
    }
}
