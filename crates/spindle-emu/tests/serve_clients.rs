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

const LAYOUTS: [&str; 11] = [
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
];

#[test]
fn real_clients_pass_against_every_layout() {
    let tools = have("nbdinfo", "libnbd-bin") & have("qemu-io", "qemu-utils") & have("fio", "fio");
    if !tools {
        return;
    }
    for layout in LAYOUTS {
        let text = format!(
            "seed = 2\n[drive]\nmodel = \"st39133lwv\"\n[array]\n{layout}\n\
             data_set_bytes = 67108864\n[workload]\nkind = \"closed\"\n[run]\nrequests = 1\n"
        );
        let exp = Experiment::parse(&text, "test", &[]).expect("valid experiment");
        let dir = tempfile::tempdir().expect("tempdir");
        let (uri_tx, uri_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let data_dir = dir.path().join("data");
        let server = std::thread::spawn(move || {
            let opts = ServeOptions {
                data_dir,
                listen: Listen::Tcp("127.0.0.1:0".parse().expect("address")),
                export_name: "spindle".into(),
                clock: Default::default(),
                record: None,
                limits: Default::default(),
            };
            serve_until(
                &exp,
                &no_files,
                opts,
                |u| uri_tx.send(u.to_string()).expect("send"),
                Some(stop_rx),
            )
        });
        let uri = uri_rx.recv().expect("the server reports its address");

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
        stop_tx.send(()).expect("server running");
        let stats = server.join().expect("server thread").expect("served");
        // fio's 2 MiB of 4 KiB random I/O is ~256 writes and ~256 reads, then 256 verify
        // reads: it went through the array.
        assert!(stats.writes > 200 && stats.reads > 400, "{layout}: {stats}");
        eprintln!("{layout}: {stats}");
    }
}
