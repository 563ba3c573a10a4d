//! Several servers on one machine, as test suites run mock servers (one per test): each needs
//! nothing but its own `--listen`, and its admin routes come with its port.

use crate::support::{Server, fixtures, served_version, status};

#[test]
fn two_servers_start_side_by_side_with_only_listen() {
    let (dir_a, dir_b) = (fixtures("a-1"), fixtures("b-1"));
    let listen = ["--listen", "127.0.0.1:0"];
    let a = Server::spawn(dir_a.path(), &listen, &[]);
    let b = Server::spawn(dir_b.path(), &listen, &[]);
    let (addr_a, addr_b) = (a.listening(), b.listening());
    assert_ne!(addr_a, addr_b);
    assert_eq!(a.admin(), addr_a);
    assert_eq!(b.admin(), addr_b);
    for (addr, version) in [(&addr_a, "a-1"), (&addr_b, "b-1")] {
        let out = status(&["--server", addr, "--output", "json"]);
        assert!(out.status.success(), "{addr}: {out:?}");
        assert_eq!(served_version(&out.stdout), version, "{addr}");
        let table = status(&["--server", addr]);
        assert!(table.status.success(), "{addr}: {table:?}");
    }
    for server in [a, b] {
        let mut server = server;
        assert!(server.child.try_wait().unwrap().is_none(), "still serving");
    }
}
