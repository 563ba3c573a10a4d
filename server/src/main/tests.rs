use super::*;
use xdsloop_server::app::Placement;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(["xdsloop-server"].iter().chain(args))
}

#[test]
fn status_defaults_to_the_default_listen_address() {
    let Some(Command::Status(status)) = parse(&["status"]).unwrap().command else {
        panic!("status subcommand");
    };
    let serve = parse(&["--fixtures", "dir"]).unwrap().serve;
    assert_eq!(status.server, serve.listen.to_string());
    assert_eq!(serve.admin.unwrap_or_default(), Placement::XdsPort);
}

#[test]
fn log_format_applies_to_the_status_subcommand_too() {
    let cli = parse(&["status", "--log-format", "json"]).unwrap();
    assert_eq!(cli.log_format, LogFormat::Json);
    let cli = parse(&["--log-format", "json", "--fixtures", "d"]).unwrap();
    assert_eq!(cli.log_format, LogFormat::Json);
}

#[test]
fn record_resources_needs_record_and_timeline_depth_defaults_to_16() {
    let error = parse(&["--fixtures", "d", "--record-resources"]).unwrap_err();
    assert!(error.to_string().contains("--record <FILE>"), "{error}");
    let serve = parse(&[
        "--fixtures",
        "d",
        "--record",
        "t.jsonl",
        "--record-resources",
    ])
    .unwrap()
    .serve;
    assert_eq!(
        serve.record.as_deref(),
        Some(std::path::Path::new("t.jsonl"))
    );
    assert!(serve.record_resources);
    assert_eq!(serve.timeline_depth, 16);
}

#[test]
fn replay_stands_in_for_fixtures_and_conflicts_with_them() {
    let serve = parse(&["--replay", "run.jsonl"]).unwrap().serve;
    assert_eq!(
        serve.replay.as_deref(),
        Some(std::path::Path::new("run.jsonl"))
    );
    let error = parse(&["--replay", "run.jsonl", "--fixtures", "d"]).unwrap_err();
    assert_eq!(error.kind(), clap::error::ErrorKind::ArgumentConflict);
    let error = error.to_string();
    assert!(
        error.contains("--replay <FILE>") && error.contains("--fixtures <DIR>"),
        "{error}"
    );
    let error = parse(&[]).unwrap_err();
    assert_eq!(
        error.kind(),
        clap::error::ErrorKind::MissingRequiredArgument
    );
    let error = parse(&["--fixtures", "d", "--replay-timing"]).unwrap_err();
    assert_eq!(error.kind(), clap::error::ErrorKind::ArgumentConflict);
    let error = parse(&["--replay-timing"]).unwrap_err().to_string();
    assert!(error.contains("--replay <FILE>"), "{error}");
    assert!(
        parse(&["--replay", "r", "--replay-timing"])
            .unwrap()
            .serve
            .replay_timing
    );
}

#[test]
fn max_fixture_bytes_of_zero_is_refused() {
    // 0 would reject every fixture file that has anything in it.
    let error = parse(&["--fixtures", "d", "--max-fixture-bytes", "0"]).unwrap_err();
    assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation);
    assert!(error.to_string().contains("--max-fixture-bytes"), "{error}");
    let one = parse(&["--fixtures", "d", "--max-fixture-bytes", "1"]).unwrap();
    assert_eq!(one.serve.max_fixture_bytes, 1);
}

#[test]
fn admin_flag_moves_or_turns_off_the_admin_routes() {
    let admin = |value: &str| parse(&["--fixtures", "d", "--admin", value]).map(|c| c.serve.admin);
    let listener = Placement::Listener("127.0.0.1:9901".parse().unwrap());
    assert_eq!(admin("127.0.0.1:9901").unwrap(), Some(listener));
    assert_eq!(admin("off").unwrap(), Some(Placement::Off));
    let error = admin("loopback").unwrap_err().to_string();
    assert!(error.contains("expected HOST:PORT or `off`"), "{error}");
}

#[test]
fn max_connections_of_zero_is_refused_in_words() {
    let error = parse(&["--fixtures", "f", "--max-connections", "0"])
        .unwrap_err()
        .to_string();
    assert!(error.contains("0 would refuse every connection"), "{error}");
    assert!(parse(&["--fixtures", "f", "--max-connections", "1"]).is_ok());
}
