use super::*;
use notify::event::{CreateKind, DataChange, Flag, MetadataKind, RemoveKind, RenameMode};

fn event(kind: EventKind, path: &str) -> notify::Result<Event> {
    Ok(Event::new(kind).add_path(PathBuf::from(path)))
}

#[test]
fn changes_below_the_directory_reload() {
    let root = Path::new("/srv/fixtures");
    let modify = EventKind::Modify(ModifyKind::Data(DataChange::Any));
    let create = EventKind::Create(CreateKind::Folder);
    let renamed = EventKind::Modify(ModifyKind::Name(RenameMode::To));
    let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
    for kind in [modify, create, renamed, closed] {
        let signal = classify(
            root,
            &Links::default(),
            &event(kind, "/srv/fixtures/sub/a.yaml"),
        );
        assert_eq!(signal, Signal::Reload, "{kind:?}");
    }
    let sibling = event(modify, "/srv/fixtures-old/a.yaml");
    assert_eq!(classify(root, &Links::default(), &sibling), Signal::Ignore);
}

#[test]
fn the_reloads_own_reads_are_ignored() {
    let root = Path::new("/srv/fixtures");
    let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
    let read = EventKind::Access(AccessKind::Close(AccessMode::Read));
    assert_eq!(
        classify(
            root,
            &Links::default(),
            &event(open, "/srv/fixtures/a.yaml")
        ),
        Signal::Ignore
    );
    assert_eq!(
        classify(root, &Links::default(), &event(read, "/srv/fixtures")),
        Signal::Ignore
    );
    let attrib = EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any));
    let signal = classify(
        root,
        &Links::default(),
        &event(attrib, "/srv/fixtures/a.yaml"),
    );
    assert_eq!(signal, Signal::Ignore);
}

#[test]
fn replacing_the_directory_or_losing_events_rewatches() {
    let root = Path::new("/srv/fixtures");
    let removed = EventKind::Remove(RemoveKind::Folder);
    let renamed = EventKind::Modify(ModifyKind::Name(RenameMode::To));
    assert_eq!(
        classify(root, &Links::default(), &event(removed, "/srv/fixtures")),
        Signal::Rewatch
    );
    assert_eq!(
        classify(root, &Links::default(), &event(renamed, "/srv/fixtures")),
        Signal::Rewatch
    );
    assert_eq!(
        classify(root, &Links::default(), &event(removed, "/srv")),
        Signal::Rewatch,
        "the parent removed"
    );
    let overflow = Ok(Event::new(EventKind::Other).set_flag(Flag::Rescan));
    assert_eq!(
        classify(root, &Links::default(), &overflow),
        Signal::Rewatch
    );
    let error = Err(notify::Error::generic("inotify failed"));
    assert_eq!(classify(root, &Links::default(), &error), Signal::Rewatch);
}

fn steps_of(kind: EventKind, paths: &[&str]) -> Vec<Step> {
    let root = Path::new("/srv/fixtures");
    let event = paths
        .iter()
        .fold(Event::new(kind), |e, p| e.add_path(PathBuf::from(p)));
    let event = Ok(event);
    let links = Links::default();
    steps(root, &links, classify(root, &links, &event), &event)
}

#[test]
fn closed_or_renamed_in_fixture_files_are_complete() {
    let a = || PathBuf::from("/srv/fixtures/sub/a.yaml");
    let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
    assert_eq!(
        steps_of(closed, &["/srv/fixtures/sub/a.yaml"]),
        [Step::Done(a())]
    );
    let written = EventKind::Modify(ModifyKind::Data(DataChange::Any));
    let file = EventKind::Create(CreateKind::File);
    for kind in [written, file] {
        assert_eq!(
            steps_of(kind, &["/srv/fixtures/sub/a.yaml"]),
            [Step::Writing(a())]
        );
    }
    // Write-temp-then-rename: the hidden temp file is never read.
    let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
    let renamed = steps_of(
        both,
        &["/srv/fixtures/sub/.a.yaml.tmp", "/srv/fixtures/sub/a.yaml"],
    );
    assert_eq!(renamed, [Step::Other, Step::Done(a())]);
    // vim's backup: a.yaml moved to a.yaml~ is gone until the new one is written.
    let backup = steps_of(
        both,
        &["/srv/fixtures/sub/a.yaml", "/srv/fixtures/sub/a.yaml~"],
    );
    assert_eq!(backup, [Step::Gone(a()), Step::Other]);
    let removed = EventKind::Remove(RemoveKind::File);
    assert_eq!(
        steps_of(removed, &["/srv/fixtures/sub/a.yaml"]),
        [Step::Gone(a())]
    );
    let probe = steps_of(file, &["/srv/fixtures/4913"]);
    assert_eq!(probe, [Step::Other], "not a fixture extension");
}

#[test]
fn new_directories_and_lost_events_have_no_known_end() {
    let folder = EventKind::Create(CreateKind::Folder);
    assert_eq!(steps_of(folder, &["/srv/fixtures/team"]), [Step::Unknown]);
    let replaced = EventKind::Remove(RemoveKind::Folder);
    assert_eq!(steps_of(replaced, &["/srv/fixtures"]), [Step::Unknown]);
    let overflow = Ok(Event::new(EventKind::Other).set_flag(Flag::Rescan));
    let root = Path::new("/srv/fixtures");
    assert_eq!(
        steps(
            root,
            &Links::default(),
            classify(root, &Links::default(), &overflow),
            &overflow
        ),
        [Step::Unknown]
    );
}

#[test]
fn a_gone_directory_names_the_parent_watch_it_relied_on() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("live");
    std::fs::create_dir(&root).unwrap();
    let (tx, _rx) = WatchedRoot::channel();
    let mut watched = WatchedRoot::start(root.clone(), tx).unwrap();
    std::fs::remove_dir(&root).unwrap();
    assert_eq!(watched.refresh(), Ok(()), "the parent will show its return");
    // A parent that could not be watched (no permission, or `/`) was never relied on.
    watched.parent = None;
    let error = watched.refresh().unwrap_err();
    assert!(error.ends_with("live is gone, and its parent is not watched for its return"));
    drop(base);
    watched.parent = Some((0, 0));
    let error = watched.refresh().unwrap_err();
    assert!(error.ends_with("live is gone, and so is the parent directory watched for its return"));
}
