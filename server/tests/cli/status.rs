//! `xdsloop-server status` reads a running server's admin routes on its xDS port.

use std::process::Command;

use crate::support::{BIN, Server, fixtures, served_version, status};

#[test]
fn status_subcommand_reads_a_running_server() {
    let dir = fixtures("v1");
    let server = Server::spawn(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let addr = server.listening();
    assert_eq!(server.admin(), addr, "the admin routes are on the xDS port");
    let table = status(&["--server", &addr]);
    assert!(table.status.success(), "{table:?}");
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.starts_with("snapshot  generation 1 · 1 resources · cds v1 "),
        "{text}"
    );
    assert!(text.contains("\nno open streams\n"), "{text}");

    let json = status(&["--server", &addr, "--output", "json"]);
    assert!(json.status.success());
    assert_eq!(served_version(&json.stdout), "v1");
}

#[test]
fn status_subcommand_fails_clearly_without_a_server() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap().to_string();
    drop(free);
    let out = status(&["--server", &addr]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains(&addr), "{stderr}");
    assert!(stderr.contains("--listen address"), "{stderr}");
}

/// `xdsloop-server` and `xdsloop-server status`, both without flags, find each other. This
/// needs the default port 127.0.0.1:18000; when something else holds it (another server on a
/// shared machine), the test checks only the weaker half its name says: that the server reports
/// the taken port clearly. Run it where the port is free to check the rest.
#[test]
fn status_finds_admin_on_default_address_or_reports_the_port_taken() {
    let version = format!("default-{}", std::process::id());
    let dir = fixtures(&version);
    let server = Server::spawn(dir.path(), &[], &[]);
    let Some(first) = server.line() else {
        let (code, stderr) = server.exit();
        assert_eq!(code, Some(2), "{stderr:?}");
        let said = stderr.join("\n");
        assert!(said.contains("cannot listen on 127.0.0.1:18000"), "{said}");
        eprintln!("127.0.0.1:18000 is taken: checked the start-up error only");
        return;
    };
    assert_eq!(first, "xdsloop-server listening on 127.0.0.1:18000");
    let admin_line = server.line().unwrap();
    assert!(
        admin_line.ends_with("(or `xdsloop-server status`)"),
        "{admin_line}"
    );
    let json = status(&["--output", "json"]);
    assert!(json.status.success(), "{json:?}");
    assert_eq!(served_version(&json.stdout), version);
}

#[test]
fn admin_listener_moves_the_admin_routes_off_the_xds_port() {
    let dir = fixtures("v1");
    let args = ["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"];
    let server = Server::spawn(dir.path(), &args, &[]);
    let (xds, admin) = (server.listening(), server.admin());
    assert_ne!(xds, admin);
    let on_admin = status(&["--server", &admin, "--output", "json"]);
    assert!(on_admin.status.success(), "{on_admin:?}");
    assert_eq!(served_version(&on_admin.stdout), "v1");

    let on_xds = status(&["--server", &xds]);
    assert_eq!(on_xds.status.code(), Some(1));
    let stderr = String::from_utf8(on_xds.stderr).unwrap();
    assert!(stderr.contains("HTTP 404"), "{stderr}");
    assert!(
        stderr.contains(&format!("serves them on http://{admin}/")),
        "{stderr}"
    );
}

#[test]
fn admin_off_serves_no_admin_routes() {
    let dir = fixtures("v1");
    let args = ["--listen", "127.0.0.1:0", "--admin", "off"];
    let server = Server::spawn(dir.path(), &args, &[]);
    let xds = server.listening();
    let out = status(&["--server", &xds]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("--admin off"), "{stderr}");
}

/// Exposing the xDS port does not expose the admin data (only loopback, the
/// admin token or a verified client certificate read it), and the server says how remote
/// peers get in; moving the admin routes to a loopback listener silences it.
#[test]
fn exposed_xds_port_says_who_may_read_the_admin_routes() {
    let dir = fixtures("v1");
    let warning = "answer other hosts only with --admin-token or a verified client certificate";
    let exposed = Server::spawn(dir.path(), &["--listen", "0.0.0.0:0"], &[]);
    exposed.listening();
    let stderr = exposed.stop_and_stderr();
    assert!(
        stderr
            .iter()
            .any(|l| l.contains("WARN") && l.contains(warning)),
        "{stderr:#?}"
    );
    let args = ["--listen", "0.0.0.0:0", "--admin", "127.0.0.1:0"];
    let moved = Server::spawn(dir.path(), &args, &[]);
    moved.listening();
    let stderr = moved.stop_and_stderr();
    assert!(!stderr.iter().any(|l| l.contains(warning)), "{stderr:#?}");
}

#[test]
fn serving_still_requires_fixtures() {
    let out = Command::new(BIN).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("--fixtures"), "{stderr}");
}
