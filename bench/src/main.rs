//! `make bench`: the real `xdsloop-server` binary under a simulated fleet (in this process),
//! over a matrix of fleet sizes, plus single-number measurements. Prints a table and writes
//! `bench-results/bench.json`. Speed is measured here, never asserted in tests.

mod admin_load;
mod apply;
mod cell;
mod edit;
mod extras;
mod fixtures;
mod output;
mod page;
mod record;
mod server;
mod tls;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use crate::output::{CellResult, Results};

/// Benchmarks xdsloop-server with a simulated fleet.
#[derive(Debug, Parser)]
#[command(name = "xdsloop-bench")]
struct Args {
    /// Fleet sizes (N) [default: 100,1000,5000, or 10,100 with --quick].
    #[arg(long, value_delimiter = ',')]
    nodes: Vec<usize>,
    /// Clusters in the fixtures (C); each has its own endpoint resource [default: 1000, or 100
    /// with --quick].
    #[arg(long)]
    clusters: Option<usize>,
    /// Endpoints per cluster (E).
    #[arg(long, default_value_t = 10)]
    endpoints: usize,
    /// Runs per matrix cell; the table shows medians [default: 3, or 1 with --quick].
    #[arg(long)]
    runs: Option<usize>,
    /// A small matrix that finishes in about a minute (overrides the sizes above).
    #[arg(long)]
    quick: bool,
    /// Only the matrix (with --nodes 10000 --runs 1: the 10,000-client cell, `make bench-10k`).
    #[arg(long)]
    matrix_only: bool,
    /// Only the single-number measurements.
    #[arg(long, conflicts_with = "matrix_only")]
    extras_only: bool,
    /// Fleet size of the TLS cell, run right after the plaintext cell of the same N (added to
    /// the matrix if missing) [default: 1000, or 100 with --quick]; 0: no TLS cell.
    #[arg(long)]
    tls_nodes: Option<usize>,
    /// Only the edit-to-all-ACKed measurement (printed first in a full run).
    #[arg(long, conflicts_with_all = ["matrix_only", "extras_only"])]
    edit_only: bool,
    /// Only the Delta cell (N = 5,000 Delta nodes on C = 1,000, or 100 on 100 with --quick; one
    /// resource changes): its push time, bytes per client and the server's peak RSS.
    #[arg(long, conflicts_with_all = ["matrix_only", "extras_only", "edit_only", "record_only"])]
    delta_only: bool,
    /// Only the cost of `--record`: one push to N = 1,000 streams (C = 100) without and with
    /// it, and the transcript's size [N = 100 with --quick].
    #[arg(long, conflicts_with_all = ["matrix_only", "extras_only", "edit_only"])]
    record_only: bool,
    /// Only the cost of admin load: one push to N = 2,000 streams (C = 100; N = 100 with
    /// --quick) with nobody reading the admin routes, then with 25 `/status` pollers and 25
    /// open `/events` streams.
    #[arg(long, conflicts_with_all = ["matrix_only", "extras_only", "edit_only", "record_only", "delta_only"])]
    admin_load_only: bool,
    /// The server binary (default: xdsloop-server next to this binary).
    #[arg(long)]
    server_bin: Option<PathBuf>,
    /// Where the JSON results go.
    #[arg(long, default_value = "bench-results/bench.json")]
    output: PathBuf,
}

/// Sizes of the single-number measurements.
struct ExtraSizes {
    edit_nodes: usize,
    edit_clusters: usize,
    delta_nodes: usize,
    delta_clusters: usize,
    status_streams: usize,
    apply_endpoints: usize,
    /// Streams of the admin-load cell.
    admin_nodes: usize,
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    let (nodes, clusters) = if args.quick {
        (vec![10, 100], 100)
    } else {
        (vec![100, 1000, 5000], 1000)
    };
    if args.nodes.is_empty() {
        args.nodes = nodes;
    }
    let tls_nodes = *args
        .tls_nodes
        .get_or_insert(if args.quick { 100 } else { 1000 });
    if tls_nodes > 0 && !args.nodes.contains(&tls_nodes) {
        args.nodes.push(tls_nodes);
        args.nodes.sort_unstable();
    }
    args.clusters.get_or_insert(clusters);
    let extra = if args.quick {
        args.runs.get_or_insert(1);
        ExtraSizes {
            edit_nodes: 100,
            edit_clusters: 100,
            delta_nodes: 100,
            delta_clusters: 100,
            status_streams: 100,
            apply_endpoints: 100_000,
            admin_nodes: 100,
        }
    } else {
        ExtraSizes {
            edit_nodes: 1000,
            edit_clusters: 100,
            delta_nodes: 5000,
            delta_clusters: 1000,
            status_streams: 1000,
            apply_endpoints: 100_000,
            admin_nodes: 2000,
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(args, extra)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xdsloop-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args, sizes: ExtraSizes) -> Result<(), String> {
    let binary = args
        .server_bin
        .clone()
        .unwrap_or_else(server::default_binary);
    if !binary.exists() {
        return Err(format!(
            "{} not found: build it first (make bench does: cargo build --release -p xdsloop-server)",
            binary.display()
        ));
    }
    let runs_per_cell = args.runs.unwrap_or(3).max(1);
    let clusters = args.clusters.unwrap_or(1000);
    let mut results = Results::new(&args.output, runs_per_cell, args.quick);
    eprintln!("xdsloop-bench: server {}", binary.display());
    if args.admin_load_only {
        admin_load_cell(&mut results, &binary, &args, &sizes, runs_per_cell.max(3)).await?;
        results.save()?;
        println!("{}", results.table());
        return Ok(());
    }
    if args.delta_only || args.record_only {
        if args.delta_only {
            results.delta_one_change = Some(delta(&binary, &args, &sizes).await?);
        } else {
            record_cell(&mut results, &binary, &args, &sizes, runs_per_cell.max(3)).await?;
        }
        results.save()?;
        println!("{}", results.table());
        return Ok(());
    }
    if !args.matrix_only && !args.extras_only {
        let (n, c) = (sizes.edit_nodes, sizes.edit_clusters);
        let edit = edit::edit_to_all_acked(&binary, n, c, args.endpoints, runs_per_cell.max(3));
        results.edit = Some(edit.await?);
        results.save()?;
    }
    let matrix = if args.extras_only || args.edit_only {
        &[][..]
    } else {
        &args.nodes[..]
    };
    let certs_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    for &nodes in matrix {
        let tls = args.tls_nodes == Some(nodes);
        // The TLS cell right after the plaintext one: the two share the machine's state.
        let certs = match tls {
            true => Some(tls::Certs::make(certs_dir.path())?),
            false => None,
        };
        for certs in std::iter::once(None).chain(certs.as_ref().map(Some)) {
            let mut runs = Vec::new();
            let label = if certs.is_some() { " TLS" } else { "" };
            for run in 1..=runs_per_cell {
                eprintln!(
                    "  N={nodes}{label} C={} E={} run {run}/{runs_per_cell}",
                    clusters, args.endpoints
                );
                runs.push(cell::run(&binary, nodes, clusters, args.endpoints, certs).await?);
            }
            let mut cell = CellResult::new(nodes, clusters, args.endpoints, runs);
            cell.tls = certs.is_some();
            results.cells.push(cell);
            results.save()?;
        }
    }
    if !args.matrix_only && !args.edit_only {
        extras(&mut results, &binary, &args, &sizes, runs_per_cell.max(3)).await?;
    }
    results.save()?;
    println!("{}", results.table());
    eprintln!("results: {}", args.output.display());
    Ok(())
}

async fn delta(
    binary: &std::path::Path,
    args: &Args,
    sizes: &ExtraSizes,
) -> Result<extras::DeltaChange, String> {
    let (nodes, clusters) = (sizes.delta_nodes, sizes.delta_clusters);
    eprintln!(
        "  Delta: {nodes} nodes, one resource of {} changes",
        clusters * 2
    );
    extras::delta_one_change(binary, nodes, clusters, args.endpoints).await
}

async fn extras(
    results: &mut Results,
    binary: &std::path::Path,
    args: &Args,
    sizes: &ExtraSizes,
    runs: usize,
) -> Result<(), String> {
    eprintln!("  reload of a 10,000-resource directory");
    let (full, one_file) = extras::reload_10k(args.endpoints, runs)?;
    results.reload_10k_ms = Some(full);
    results.reload_10k_one_file_ms = Some(one_file);
    results.delta_one_change = Some(delta(binary, args, sizes).await?);
    eprintln!("  /status with {} streams", sizes.status_streams);
    results.status_streams = sizes.status_streams;
    results.status = extras::status_with_streams(
        binary,
        sizes.status_streams,
        args.clusters.unwrap_or(1000),
        args.endpoints,
        runs,
    )
    .await?;
    eprintln!(
        "  push to {} streams with the live page closed vs open",
        sizes.status_streams
    );
    results.page = page::page_cost(
        binary,
        sizes.status_streams,
        args.clusters.unwrap_or(1000),
        args.endpoints,
        runs,
    )
    .await?;
    eprintln!(
        "  client: apply one {}-endpoint EDS update",
        sizes.apply_endpoints
    );
    results.client_apply = Some(apply::apply_big_eds(sizes.apply_endpoints, runs).await?);
    record_cell(results, binary, args, sizes, runs).await?;
    admin_load_cell(results, binary, args, sizes, runs).await
}

async fn admin_load_cell(
    results: &mut Results,
    binary: &std::path::Path,
    args: &Args,
    sizes: &ExtraSizes,
    runs: usize,
) -> Result<(), String> {
    let (nodes, clusters) = (sizes.admin_nodes, sizes.edit_clusters);
    eprintln!(
        "  push to {nodes} streams (C={clusters}) without and with {} /status pollers and {} \
         /events streams",
        admin_load::POLLERS,
        admin_load::PAGES
    );
    results.admin_load =
        admin_load::admin_load(binary, nodes, clusters, args.endpoints, runs).await?;
    Ok(())
}

async fn record_cell(
    results: &mut Results,
    binary: &std::path::Path,
    args: &Args,
    sizes: &ExtraSizes,
    runs: usize,
) -> Result<(), String> {
    // The edit cell's sizes (N = 1,000, C = 100): every line names each resource it carries,
    // so the transcript grows with C as much as with N.
    let (nodes, clusters) = (sizes.edit_nodes, sizes.edit_clusters);
    eprintln!("  push to {nodes} streams (C={clusters}) without and with --record");
    results.record = record::record_cost(binary, nodes, clusters, args.endpoints, runs).await?;
    Ok(())
}
