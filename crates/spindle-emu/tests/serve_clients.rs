//! `spindle serve` (in process) against real clients, for every layout the emulator
//! serves: nbdinfo sees the array's size, qemu-io's pattern writes read back (and a wrong
//! pattern is caught), fio's nbd engine passes a crc32c-verified random read/write run.
//!
//! A missing tool skips its check with a message, unless `SPINDLE_REQUIRE_NBD_TOOLS=1`
//! (CI installs the Debian packages and sets it).

use spindle::config::Experiment;
use spindle_emu::serve::{serve_until, Listen, ServeOptions};
use std::process::Command;

mod common;
use common::have;

fn no_files(p: &str) -> Result<Vec<u8>, String> {
    Err(format!("{p}: built-in drives only"))
}

/// Runs `tool args` under a hang guard; returns (success, stdout + stderr).
fn run(tool: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new("timeout")
        .arg("300")
        .arg(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {tool}: {e}"));
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

const LAYOUTS: [&str; 14] = [
    "layout = \"jbod\"\ndisks = 1",
    "layout = \"striping\"\nds = 4\nstripe_unit_bytes = 16384",
    "layout = \"mirror\"\ndm = 2\nscheduler = \"satf\"",
    "layout = \"raid-10\"\nds = 2\nscheduler = \"satf\"",
    "layout = \"sr-array\"\nds = 2\ndr = 2\nscheduler = \"rsatf\"",
    "layout = \"sr-mirror\"\nds = 1\ndr = 2\ndm = 2\nscheduler = \"rlook\"",
    "layout = \"ew-array\"\ndm = 2\nds = 1\ndd = 2\nsync_copies = 1\nscheduler = \"satf-ew\"\n\
     map_nvram_bytes = 4096",
    "layout = \"ddm\"\nds = 1\ndd = 2\nscheduler = \"freebw-hybrid\"",
    "layout = \"raid-5\"\ndisks = 5\nwrite_cache_bytes = 0",
    "layout = \"raid-5\"\ndisks = 5\nwrite_cache_bytes = 262144\ndestage = \"linear-threshold\"",
    "layout = \"raid-4\"\ndisks = 4\ngroup_width = 4\nwrite_cache_bytes = 0\nscheduler = \"satf\"",
    // 4 KiB pages so that fio's 4 KiB blocks are whole pages; its data set is every page.
    "layout = \"paged\"\nreplicas = 4\npage_kb = 4",
    // …and its cleaner, moving bad tenants home whenever the disk has idled 1 ms: its copies
    // are real data moves between the clients' requests.
    "layout = \"paged\"\nreplicas = 4\npage_kb = 4\ncleaner = \"idle\"\ncleaner_idle_ms = 1.0",
    // …and page runs: qemu-io's 256 KiB and 64 KiB writes go as runs of bad tenants.
    "layout = \"paged\"\nreplicas = 4\npage_kb = 4\npage_runs = true",
];

#[test]
fn real_clients_pass_against_every_layout() {
    let tools = have("nbdinfo", "libnbd-bin") & have("qemu-io", "qemu-utils") & have("fio", "fio");
    if !tools {
        return;
    }
    for layout in LAYOUTS {
        let data_set = if layout.contains("paged") {
            ""
        } else {
            "data_set_bytes = 67108864\n"
        };
        let text = format!(
            "seed = 2\n[drive]\nmodel = \"st39133lwv\"\n[array]\n{layout}\n{data_set}\
             [workload]\nkind = \"closed\"\n[run]\nrequests = 1\n"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let (uri, stop_tx, server) = serve_in_thread(&text, dir.path().join("data"));

        let (ok, out) = run("nbdinfo", &["--size", &uri]);
        assert!(ok, "{layout}: nbdinfo: {out}");
        let size: u64 = out.trim().parse().expect("a size");
        assert!(size >= 64 << 20 && size % 512 == 0, "{layout}: size {size}");
        let (ok, out) = run("nbdinfo", &[&uri]);
        assert!(ok, "{layout}: nbdinfo: {out}");
        for flag in [
            "is_rotational: true",
            "can_multi_conn: true",
            "can_trim: true",
        ] {
            assert!(out.contains(flag), "{layout}: nbdinfo lacks {flag}:\n{out}");
        }

        let (ok, out) = run(
            "qemu-io",
            &[
                "-f",
                "raw",
                &uri,
                "-c",
                "write -P 0x5a 0 256k",
                "-c",
                "write -P 0xa5 1m 64k",
                "-c",
                "read -P 0x5a 0 256k",
                "-c",
                "read -P 0xa5 1m 64k",
            ],
        );
        assert!(ok && !out.contains("fail"), "{layout}: qemu-io: {out}");
        let (_, out) = run("qemu-io", &["-f", "raw", &uri, "-c", "read -P 0x11 0 4k"]);
        assert!(
            out.contains("Pattern verification failed"),
            "{layout}: a wrong pattern passed: {out}"
        );

        let (ok, out) = run(
            "fio",
            &[
                "--name=verify",
                "--ioengine=nbd",
                &format!("--uri={uri}"),
                "--rw=randrw",
                "--bs=4k",
                "--iodepth=16",
                "--size=8M",
                "--io_size=2M",
                "--verify=crc32c",
                "--verify_fatal=1",
                "--verify_state_save=0",
                "--output-format=terse",
            ],
        );
        assert!(ok, "{layout}: fio: {out}");
        let cleaner = layout.contains("cleaner");
        if cleaner {
            // A second of idle disk for the cleaner to move fio's bad tenants home.
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        stop_tx.send(()).expect("server running");
        let stats = server.join().expect("server thread").expect("served");
        if cleaner {
            let p = stats.paged.expect("a paged disk's state");
            assert!(
                p.cleaned > 0,
                "{layout}: the cleaner moved nothing: {stats}"
            );
        }
        // fio's 2 MiB of 4 KiB random I/O is ~256 writes and ~256 reads, then 256 verify
        // reads: it went through the array.
        assert!(stats.writes > 200 && stats.reads > 400, "{layout}: {stats}");
        eprintln!("{layout}: {stats}");
    }
}

/// The options every test serves with: TCP on a free local port, export "spindle".
fn options(data_dir: std::path::PathBuf) -> ServeOptions {
    ServeOptions {
        disks: spindle_emu::serve::Disks::Emulated(data_dir),
        listen: Listen::Tcp("127.0.0.1:0".parse().expect("address")),
        export_name: "spindle".into(),
        clock: Default::default(),
        record: None,
        limits: Default::default(),
    }
}

/// Serves `text` on `data_dir` in a thread; returns the URI, the stop switch and the thread.
#[allow(clippy::type_complexity)]
fn serve_in_thread(
    text: &str,
    data_dir: std::path::PathBuf,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<Result<spindle_emu::driver::Stats, String>>,
) {
    let exp = Experiment::parse(text, "test", &[]).expect("valid experiment");
    let (uri_tx, uri_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
    let server = std::thread::spawn(move || {
        let opts = options(data_dir);
        serve_until(
            &exp,
            &no_files,
            opts,
            |u| uri_tx.send(u.to_string()).expect("send"),
            Some(stop_rx),
        )
    });
    let Ok(uri) = uri_rx.recv() else {
        let e = server.join().expect("server thread");
        panic!("the server did not start: {e:?}");
    };
    (uri, stop_tx, server)
}

/// A RAID-10, RAID-5, EW-Array or DDM disk fails under real clients and is rebuilt onto a
/// spare (docs/failures.md): data written before the failure reads back during and after
/// the rebuild, fio's verified random I/O runs across the failure and the rebuild, and the
/// spare really holds the data — served again with another disk failed from the start (the
/// spare's mirror; RAID-5: any other), every read of that data needs the spare. An EW-Array
/// with its map log region replicated loses disk 0, the region's first copy: served again
/// without its mirror, the map itself is recovered from the spare's rebuilt copy.
#[test]
fn a_failed_mirror_is_rebuilt_under_real_clients() {
    let tools = have("qemu-io", "qemu-utils") & have("fio", "fio");
    if !tools {
        return;
    }
    // The layout, the disk that fails, and a disk whose failure leaves it (rebuilt) the only
    // copy of some of the patterns.
    for (layout, failed, mirror) in [
        (
            "layout = \"raid-10\"\nds = 2\ndm = 2\nscheduler = \"satf\"\n",
            1,
            0,
        ),
        (
            "layout = \"raid-5\"\ndisks = 5\nwrite_cache_bytes = 0\n",
            1,
            0,
        ),
        // Four disks, two per replica: disk 1's copies' mirror is disk 3.
        ("layout = \"ew-array\"\ndm = 2\nds = 1\ndd = 2\n", 1, 3),
        ("layout = \"ddm\"\nds = 1\ndd = 2\n", 1, 3),
        // Disk 0 holds the map log region's first copy, disk 2 its second.
        (
            "layout = \"ew-array\"\ndm = 2\nds = 1\ndd = 2\nmap_log_replicas = 2\n",
            0,
            2,
        ),
    ] {
        failed_disk_is_rebuilt_under_real_clients(layout, failed, mirror);
    }
}

fn failed_disk_is_rebuilt_under_real_clients(layout: &str, failed: usize, mirror: usize) {
    let exp = |extra: &str| {
        format!(
            "seed = 2\n[drive]\nmodel = \"st39133lwv\"\n[array]\n{layout}\
             data_set_bytes = 33554432\n{extra}[workload]\nkind = \"closed\"\n[run]\n\
             requests = 1\n"
        )
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().join("data");
    let (uri, stop, server) = serve_in_thread(
        &exp(&format!("failed_disk = {failed}\nfail_at_ms = 1500\n")),
        data_dir.clone(),
    );
    let pattern_io = |uri: &str, op: &str| {
        run(
            "qemu-io",
            &[
                "-f",
                "raw",
                uri,
                "-c",
                &format!("{op} -P 0x5a 0 256k"),
                "-c",
                &format!("{op} -P 0xa5 1m 64k"),
            ],
        )
    };
    let (ok, out) = pattern_io(&uri, "write");
    assert!(
        ok && !out.contains("fail"),
        "{layout}: qemu-io write: {out}"
    );
    let (ok, out) = run(
        "fio",
        &[
            "--name=verify",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
            "--rw=randrw",
            "--bs=4k",
            "--iodepth=16",
            "--offset=4M",
            "--size=8M",
            "--io_size=4M",
            "--verify=crc32c",
            "--verify_fatal=1",
            "--verify_state_save=0",
            "--output-format=terse",
        ],
    );
    assert!(ok, "{layout}: fio across the failure: {out}");
    // The spare is marked while it is rebuilt; the marker goes once its file is durable.
    let marker = data_dir.join("rebuilding");
    let t0 = std::time::Instant::now();
    let mut seen = false;
    while t0.elapsed() < std::time::Duration::from_secs(120) {
        // Keep the array busy enough for the failure's timer to be asked for.
        let (ok, out) = pattern_io(&uri, "read");
        assert!(
            ok && !out.contains("fail"),
            "{layout}: qemu-io read while degraded: {out}"
        );
        seen |= marker.exists();
        if seen && !marker.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(
        seen && !marker.exists(),
        "{layout}: the rebuild did not run to its end"
    );
    stop.send(()).expect("server running");
    server.join().expect("server thread").expect("served");

    // The spare's mirror failed from the start, no rebuild: the spare serves alone.
    let (uri, stop, server) = serve_in_thread(
        &exp(&format!(
            "failed_disk = {mirror}\nfail_at_ms = 0\nrebuild = false\n"
        )),
        data_dir.clone(),
    );
    let (ok, out) = pattern_io(&uri, "read");
    assert!(
        ok && !out.contains("fail"),
        "{layout}: reading the rebuilt spare: {out}"
    );
    stop.send(()).expect("server running");
    server.join().expect("server thread").expect("served");
    // Served degraded, the failed disk's file missed those writes: it stays marked, and the
    // directory is not served again as if it were current.
    assert_eq!(
        std::fs::read_to_string(&marker).ok().as_deref(),
        Some(format!("{mirror}\n").as_str()),
        "{layout}: the degraded disk is marked"
    );
    let e = spindle_emu::serve::serve_until(
        &Experiment::parse(&exp(""), "test", &[]).expect("valid"),
        &no_files,
        options(data_dir.clone()),
        |_| {},
        None,
    )
    .expect_err("a stale disk is refused");
    assert!(
        e.contains(&format!("disk {mirror} had failed")),
        "{layout}: {e}"
    );

    // A rebuild cut short leaves a marker: serving without rebuilding that disk is refused.
    std::fs::write(&marker, format!("{failed}\n")).expect("marker");
    let e = spindle_emu::serve::serve_until(
        &Experiment::parse(&exp(""), "test", &[]).expect("valid"),
        &no_files,
        options(data_dir.clone()),
        |_| {},
        None,
    )
    .expect_err("an interrupted rebuild is refused");
    assert!(
        e.contains(&format!("disk {failed} had failed")),
        "{layout}: {e}"
    );
}

/// Latent sector errors under real clients (docs/failures.md): an EW-Array, a DDM and a
/// RAID-10 with unreadable sectors chosen from the seed. qemu-io reads 16 MiB of never-written
/// data (it reads as zeros: every read that meets a bad location is served by the mirror) and
/// writes and reads back patterns; fio's verified random I/O runs over it; the final
/// statistics count the errors met and repaired and no data lost. A single-copy EW-Array
/// or striped array answers a read of a bad location with an I/O error, never with other
/// bytes.
#[test]
fn latent_sector_errors_are_served_by_a_mirror_under_real_clients() {
    let tools = have("qemu-io", "qemu-utils") & have("fio", "fio");
    if !tools {
        return;
    }
    let exp = |layout: &str, rate: &str| {
        format!(
            "seed = 3\n[drive]\nmodel = \"st39133lwv\"\n[array]\n{layout}\
             data_set_bytes = 33554432\nlatent_error_rate = {rate}\n[workload]\n\
             kind = \"closed\"\n[run]\nrequests = 1\n"
        )
    };
    // 5e-4 of sectors: 0.4 % of the EW arrays' 4 KiB locations bad; the first 16 MiB read
    // alone is 256 commands of 16 blocks, each meeting one with probability 6 % (about 16
    // errors; which copy is read depends on real time, so the floor is well below that).
    // Both copies of a block are bad for 1.6e-5 of blocks; which blocks is fixed by the
    // seed, and none is in these reads. A RAID-10 reads whole 64 KiB pieces (128 sectors):
    // at 2e-4 one copy of a piece is bad with probability 2.5 %, about 6 met per pass.
    for (layout, rate, min_errors) in [
        ("layout = \"ew-array\"\ndm = 2\nds = 1\ndd = 2\n", "5e-4", 3),
        ("layout = \"ddm\"\nds = 1\ndd = 2\n", "5e-4", 3),
        (
            "layout = \"raid-10\"\nds = 2\ndm = 2\nscheduler = \"satf\"\n",
            "2e-4",
            1,
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (uri, stop, server) = serve_in_thread(&exp(layout, rate), dir.path().join("d"));
        let (ok, out) = run(
            "qemu-io",
            &[
                "-f",
                "raw",
                &uri,
                "-c",
                "read -P 0 16m 16m",
                "-c",
                "write -P 0x5a 0 256k",
                "-c",
                "read -P 0x5a 0 256k",
                "-c",
                "read -P 0 16m 16m",
            ],
        );
        assert!(ok && !out.contains("fail"), "{layout}: qemu-io: {out}");
        let (ok, out) = run(
            "fio",
            &[
                "--name=verify",
                "--ioengine=nbd",
                &format!("--uri={uri}"),
                "--rw=randrw",
                "--bs=4k",
                "--iodepth=16",
                "--offset=4M",
                "--size=8M",
                "--io_size=4M",
                "--verify=crc32c",
                "--verify_fatal=1",
                "--verify_state_save=0",
                "--output-format=terse",
            ],
        );
        assert!(ok, "{layout}: fio with latent errors: {out}");
        stop.send(()).expect("server running");
        let stats = server.join().expect("server thread").expect("served");
        let l = stats.latent.expect("latent errors are counted");
        println!("{layout}: {l:?}");
        assert!(l.errors >= min_errors, "{layout}: {l:?}");
        assert!(l.repairs > 0 && l.unrecoverable == 0, "{layout}: {l:?}");
    }
    // One copy: a read of a bad location has nowhere else to go. An EW-Array, and striping
    // (the mirrored family's engine: its bad read must move no bytes either).
    for layout in [
        "layout = \"ew-array\"\ndm = 1\nds = 2\ndd = 2\n",
        "layout = \"striping\"\nds = 2\n",
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (uri, stop, server) = serve_in_thread(&exp(layout, "1e-3"), dir.path().join("d"));
        let (_, out) = run("qemu-io", &["-f", "raw", &uri, "-c", "read -P 0 0 16m"]);
        assert!(
            out.contains("Input/output error") && !out.contains("Pattern verification failed"),
            "{layout}: a lost block is an I/O error: {out}"
        );
        stop.send(()).expect("server running");
        let stats = server.join().expect("server thread").expect("served");
        let l = stats.latent.expect("latent errors are counted");
        assert!(l.unrecoverable > 0 && l.repairs == 0, "{layout}: {l:?}");
    }
}
