//! Runs to save, shared by the stores' tests.
#![allow(dead_code)]
use kiln_model::{FrameKind, Profile};
use kiln_store::{
    Attachment, Column, Headline, RunData, RunMeta, RunStatus, SeriesTable, StoredHistogram, Window,
};

pub fn profile(event: &str, n: u64) -> Profile {
    let mut p = Profile::new(kiln_model::EventInfo {
        name: event.into(),
        ..Default::default()
    });
    let th = p.thread(Some(1), Some(2), b"1_scheduler");
    for i in 0..n {
        let frames = [
            p.frame(b"main", FrameKind::User),
            p.frame(format!("f{}", i % 50).as_bytes(), FrameKind::User),
            p.frame(b"leaf \xff bytes", FrameKind::Kernel),
        ];
        p.add_sample_path(&frames, 1_001_001, 1_000_000_000 + i * 1_001_001, th);
    }
    p
}

pub fn run(name: &str, group: &str, samples: u64) -> RunData {
    RunData {
        meta: RunMeta {
            name: name.into(),
            group: group.into(),
            repeat: (1, 1),
            started_unix_ms: 1_795_449_600_000,
            status: RunStatus {
                complete: true,
                reason: None,
            },
            command_line: vec!["kiln".into(), "run".into()],
            host: "h".into(),
            kernel: "6".into(),
            cpus: 2,
            kiln_version: "0".into(),
            events: vec!["cpu-clock".into()],
            measure: Window {
                name: "measure".into(),
                start_ns: 1_000_000_000,
                end_ns: 31_000_000_000,
            },
            headline: Headline {
                throughput: Some(20_000.0),
                p99_us: Some(1234.0),
                ..Default::default()
            },
            note: Some("<b>note</b> & \"quotes\"".into()),
            tags: vec![("sbwt".into(), "none".into())],
            ..Default::default()
        },
        series: vec![SeriesTable {
            name: "load".into(),
            time_ns: vec![2_000_000_000, 3_000_000_000],
            columns: vec![Column {
                name: "received".into(),
                unit: "msg/s".into(),
                values: vec![Some(19_999.5), None],
            }],
        }],
        histograms: vec![StoredHistogram {
            name: "consumer".into(),
            window: "measure".into(),
            unit: "us".into(),
            data: vec![1, 2, 3, 0, 255],
        }],
        profiles: vec![profile("cpu-clock", samples), profile("offcpu", 3)],
        attachments: vec![Attachment {
            name: "load.stdout".into(),
            data: b"Requests/sec: 1".to_vec(),
        }],
    }
}

pub fn folded(p: &Profile) -> Vec<u8> {
    let mut out = Vec::new();
    kiln_model::FoldedWriter::new(kiln_model::FoldedOptions::default())
        .write(p, &mut out)
        .unwrap();
    out
}

/// Saves five runs, damages three of their metadata rows as a broken disk, another tool or
/// a hand edit would (`exec` runs an SQL statement on the store's database, `{runs}` its
/// runs table), and checks that the store degrades one run at a time: the others list,
/// resolve and load; a damaged run is listed with what is wrong, named by its field, and
/// is an error naming it wherever it is named.
pub fn damaged_runs_degrade_one_at_a_time(s: &mut dyn kiln_store::Store, exec: &dyn Fn(&str)) {
    use kiln_store::{Select, StoreError};
    let ids: Vec<i64> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|n| s.save(&run(n, n, 10)).unwrap())
        .collect();
    let damage = |id: i64, from: &str, to: &str| {
        exec(&format!(
            "UPDATE {{runs}} SET meta = replace(meta, '{from}', '{to}') WHERE id = {id}"
        ))
    };
    damage(ids[1], "\"throughput\":20000.0", "\"throughput\":NaN");
    damage(ids[2], "\"throughput\":20000.0", "\"throughput\":-1e300");
    damage(ids[3], "\"p99_us\":1234.0", "\"p99_us\":1e999");
    damage(
        ids[4],
        "\"status\":{\"complete\":true}",
        "\"status\":\"weird\"",
    );

    let all = s.stored(Select::All).unwrap();
    assert_eq!(all.len(), 5);
    // Listed as damaged, with what is wrong, as a whole read says.
    let listed = listing(&*s, Select::All);
    for (l, w) in listed.iter().zip(&all) {
        assert_eq!(l.damaged, w.meta.as_ref().err().cloned(), "run #{}", w.id);
    }
    let what = |i: usize| all[i].meta.as_ref().unwrap_err().clone();
    assert!(all[0].meta.is_ok());
    assert!(what(1).contains("headline.throughput"), "{}", what(1));
    assert!(
        what(2).contains("headline.throughput is -1e300: a rate cannot be negative"),
        "{}",
        what(2)
    );
    assert!(
        what(3).contains("headline.p99_us") && what(3).contains("out of range"),
        "{}",
        what(3)
    );
    assert!(what(4).contains("at status"), "{}", what(4));
    for (i, s) in all.iter().enumerate() {
        assert_eq!(s.id, ids[i]);
        assert_eq!(
            s.name,
            ["a", "b", "c", "d", "e"][i],
            "kept beside the metadata"
        );
    }
    // Listing skips them; the good run resolves and loads.
    let good = s.list().unwrap();
    assert_eq!(good.len(), 1);
    assert_eq!(good[0].id, Some(ids[0]));
    assert_eq!(s.resolve("a").unwrap().len(), 1);
    assert_eq!(s.load(ids[0]).unwrap().profiles.len(), 2);
    // Named, each is an error that names it and its field.
    for (i, field) in [
        (1, "headline.throughput"),
        (2, "headline.throughput"),
        (4, "status"),
    ] {
        for e in [
            s.resolve(&format!("#{}", ids[i])).unwrap_err(),
            s.resolve(["a", "b", "c", "d", "e"][i]).unwrap_err(),
            s.meta(ids[i]).unwrap_err(),
            s.load(ids[i]).unwrap_err(),
        ] {
            let msg = e.to_string();
            assert!(matches!(e, StoreError::DamagedRun { .. }), "{msg}");
            assert!(
                msg.contains(&format!("run #{} ", ids[i])) && msg.contains(field),
                "{msg}"
            );
        }
    }
    // Removed, it is gone and the store is whole again.
    let damaged = s.resolve_stored(&ids[1].to_string()).unwrap();
    assert!(damaged[0].meta.is_err());
    s.remove(ids[1]).unwrap();
    assert_eq!(s.stored(Select::All).unwrap().len(), 4);

    // Impossible figures handed to a save are not kept, and the run says so.
    let mut r = run("odd", "odd", 10);
    r.meta.headline.throughput = Some(-1e300);
    r.meta.headline.p50_us = Some(f64::NAN);
    r.meta.headline.cpu_per_op_us = Some(f64::INFINITY);
    let id = s.save(&r).unwrap();
    let back = s.meta(id).unwrap();
    assert_eq!(back.headline.throughput, None);
    assert_eq!(back.headline.p50_us, None);
    assert_eq!(back.headline.cpu_per_op_us, None);
    assert_eq!(back.headline.p99_us, Some(1234.0), "the others kept");
    let notes: Vec<&String> = back
        .warnings
        .iter()
        .filter(|w| w.contains("was not kept"))
        .collect();
    assert_eq!(notes.len(), 3, "{:?}", back.warnings);
    assert!(
        notes[0].starts_with("headline.throughput is -1e300"),
        "{notes:?}"
    );
}

/// The runs `select` names as `kiln runs` lists them.
pub fn listing(s: &dyn kiln_store::Store, select: kiln_store::Select) -> Vec<kiln_store::Listed> {
    let mut out = Vec::new();
    s.listing(select, &mut |l| out.push(l)).unwrap();
    out
}

/// What a listing says of each run, checked against the runs read whole: what [`Listed::of`]
/// makes of each.
pub fn assert_listing_is_the_metadatas(s: &dyn kiln_store::Store) {
    use kiln_store::{Listed, Select};
    let listed = listing(s, Select::All);
    let whole = s.stored(Select::All).unwrap();
    assert_eq!(listed.len(), whole.len());
    for (l, w) in listed.iter().zip(&whole) {
        assert_eq!(*l, Listed::of(w, l.complete), "run #{}", w.id);
    }
}

/// The listing columns: written by a save as the metadata says (a run damaged at its save
/// listed as damaged, with what is wrong), read rather than the metadata, emptied when the
/// metadata is changed in place (the run then listed from it); the runs of one
/// configuration found by [`Select::Config`], exactly. `exec` runs SQL on the store
/// (`{runs}` is its runs table).
pub fn listing_columns_agree_with_the_metadata(s: &mut dyn kiln_store::Store, exec: &dyn Fn(&str)) {
    use kiln_store::{configuration, Select};
    let mut saved = Vec::new();
    let mut save = |r: RunData| saved.push(s.save(&r).unwrap());
    save(run("a", "g1", 1));
    save(run("a", "g2", 1));
    // Another name, the same configuration.
    save(run("b", "g3", 1));
    // Tags in another order and another note: the same configuration as each other.
    let mut r = run("c", "g4", 1);
    r.meta.tags = vec![("sbwt".into(), "none".into()), ("k".into(), "v".into())];
    save(r.clone());
    r.meta.tags.reverse();
    r.meta.note = Some("another note".into());
    r.meta.group = "g5".into();
    save(r);
    let mut r = run("d", "g6", 1);
    r.meta.load.protocol = "amqp".into();
    r.meta.load.argv = vec!["-x".into(), "1".into()];
    r.meta.target.comm = "beam.smp".into();
    r.meta.headline.p50_us = Some(321.0);
    r.meta.headline.cpu_per_op_us = Some(12.5);
    r.meta.status.complete = false;
    save(r);
    // Damaged as it is saved: its window ends before it starts.
    let mut r = run("e", "g7", 1);
    r.meta.measure.end_ns = 1;
    save(r);

    let listed = listing(&*s, Select::All);
    assert_eq!(listed.iter().map(|l| l.id).collect::<Vec<_>>(), saved);
    assert_listing_is_the_metadatas(&*s);
    let d = &listed[5];
    assert_eq!(
        (d.name.as_str(), d.target.as_str(), d.load.as_str()),
        ("d", "beam.smp", "amqp -x 1")
    );
    assert_eq!(
        (d.p50_us, d.cpu_per_op_us, d.complete),
        (Some(321.0), Some(12.5), false)
    );
    assert_eq!(listed[0].throughput, Some(20_000.0));
    assert_eq!(listed[0].p99_us, Some(1234.0));
    let damaged = listed[6].damaged.as_deref().unwrap_or_default();
    assert!(
        damaged.contains("measure ends (1 ns) before it starts"),
        "{damaged}"
    );
    assert_eq!(listed[6].config, "", "a damaged run has no configuration");

    // One configuration each, exactly: through the index, and as the metadata says.
    let keys: Vec<&str> = listed.iter().map(|l| l.config.as_str()).collect();
    assert_eq!(keys[0], keys[1]);
    assert_eq!(keys[0], keys[2]);
    assert_eq!(keys[3], keys[4]);
    assert!(keys[0] != keys[3] && keys[0] != keys[5] && keys[3] != keys[5]);
    for (key, want) in [
        (keys[0], &saved[0..3]),
        (keys[3], &saved[3..5]),
        (keys[5], &saved[5..6]),
    ] {
        let found: Vec<i64> = s
            .stored(Select::Config(key))
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(found, want);
        let by_meta: Vec<i64> = s
            .stored(Select::All)
            .unwrap()
            .into_iter()
            .filter(|r| r.meta.as_ref().is_ok_and(|m| configuration(m) == key))
            .map(|r| r.id)
            .collect();
        assert_eq!(by_meta, want);
        let listed: Vec<i64> = listing(&*s, Select::Config(key))
            .iter()
            .map(|l| l.id)
            .collect();
        assert_eq!(listed, want);
    }
    assert!(s.stored(Select::Config("0000")).unwrap().is_empty());
    assert!(s.stored(Select::Config("")).unwrap().is_empty());

    // The listing reads the columns, not the metadata.
    exec(&format!(
        "UPDATE {{runs}} SET throughput = 7.5 WHERE id = {}",
        saved[0]
    ));
    exec(&format!(
        "UPDATE {{runs}} SET damaged = 'marked here', config = NULL WHERE id = {}",
        saved[1]
    ));
    let listed = listing(&*s, Select::All);
    assert_eq!(listed[0].throughput, Some(7.5));
    assert_eq!(listed[1].damaged.as_deref(), Some("marked here"));
    // Metadata changed in place: its columns are emptied, and it is listed from it.
    exec(&format!(
        "UPDATE {{runs}} SET meta = replace(meta, '\"throughput\":20000.0', '\"throughput\":30000.0') WHERE id = {}",
        saved[2]
    ));
    exec(&format!(
        "UPDATE {{runs}} SET meta = replace(meta, '\"throughput\":20000.0', '\"throughput\":NaN') WHERE id = {}",
        saved[3]
    ));
    let listed = listing(&*s, Select::All);
    assert_eq!(listed[2].throughput, Some(30_000.0));
    assert_eq!(listed[2].config, keys[0]);
    let damaged = listed[3].damaged.as_deref().unwrap_or_default();
    assert!(damaged.contains("headline.throughput"), "{damaged}");
    // An impossible figure in a column is never listed: the run is listed from its
    // metadata.
    exec(&format!(
        "UPDATE {{runs}} SET p99_us = -5.0, throughput = 1e300 WHERE id = {}",
        saved[4]
    ));
    // The columns a run is found by, changed: listed from its metadata, and damaged as a
    // read of the run says.
    exec(&format!(
        "UPDATE {{runs}} SET name = 'renamed' WHERE id = {}",
        saved[5]
    ));
    let listed = listing(&*s, Select::All);
    assert_eq!(
        (listed[4].throughput, listed[4].p99_us),
        (Some(20_000.0), Some(1234.0))
    );
    let damaged = listed[5].damaged.as_deref().unwrap_or_default();
    assert!(
        damaged.contains("its name column says 'renamed' but its metadata 'd'"),
        "{damaged}"
    );
    let read = s.stored(Select::Id(saved[5])).unwrap();
    assert_eq!(read[0].meta.as_ref().err(), listed[5].damaged.as_ref());
}

/// What ran after a run was saved (`--after-each`), added to it: the records in its
/// metadata, the output as attachments, the listing columns as the new metadata says; an
/// attachment's name taken twice or an unknown run refused without a change. A blob past
/// the input limit is named by [`kiln_store::Store::unreadable_blobs`].
pub fn commands_are_added_to_a_saved_run(s: &mut dyn kiln_store::Store) {
    use kiln_store::{CommandRecord, Select, StoreError};
    let id = s.save(&run("after", "g", 1)).unwrap();
    let record = CommandRecord {
        role: "after-each".into(),
        command: "sleep 100000".into(),
        exit_code: None,
        signal: Some(9),
        stopped: Some("stopped on SIGTERM".into()),
        notes: vec!["stdout: 3 bytes written".into()],
    };
    let out = Attachment {
        name: "after-each.stdout".into(),
        data: vec![b'x'; 3000],
    };
    s.add_commands(
        id,
        std::slice::from_ref(&record),
        std::slice::from_ref(&out),
    )
    .unwrap();
    let back = s.load(id).unwrap();
    assert_eq!(back.meta.commands, std::slice::from_ref(&record));
    assert_eq!(
        back.attachments
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>(),
        ["after-each.stdout", "load.stdout"]
    );
    assert_eq!(back.attachments[0], out);
    assert_listing_is_the_metadatas(&*s);
    assert_eq!(listing(&*s, Select::Id(id))[0].damaged, None);
    // The same attachment again: refused, nothing changed.
    let e = s
        .add_commands(
            id,
            std::slice::from_ref(&record),
            std::slice::from_ref(&out),
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("already has an attachment 'after-each.stdout'"),
        "{e}"
    );
    assert_eq!(s.load(id).unwrap().meta.commands.len(), 1);
    assert!(matches!(
        s.add_commands(id + 1000, &[record], &[]),
        Err(StoreError::NoSuchRun { .. })
    ));
    let mut unreadable = Vec::new();
    s.unreadable_blobs(&mut |id, why| unreadable.push((id, why)))
        .unwrap();
    assert!(unreadable.is_empty(), "{unreadable:?}");
    s.set_max_input(2048);
    s.unreadable_blobs(&mut |id, why| unreadable.push((id, why)))
        .unwrap();
    assert!(
        unreadable.contains(&(
            id,
            "attachment 'after-each.stdout': its size, 3000 bytes, exceeds the input limit of 2 KiB (--max-input raises it; a damaged or tampered file?)".to_string()
        )),
        "{unreadable:?}"
    );
}
