//! Nothing here: the tests in `tests/` are the point. They use xdsloop-server's testkit and
//! xdsloop-client's library from outside the workspace, with neither crate's default features.
