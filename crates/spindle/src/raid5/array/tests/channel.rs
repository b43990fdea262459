//! The I/O channel and the read cache's write port (paper III.B).

use super::*;
use crate::cache::DestagePolicy;

/// The paper's array with a 1 MiB write cache (FCFS destage) and the channel and port at
/// `bus` and `port` bytes/s.
fn with_channel(bus: Option<f64>, port: Option<f64>) -> Raid5Array {
    let cfg = Raid5Config {
        random_phase: false,
        seed: 1,
        cache: Some(CacheConfig {
            write_blocks: 256,
            read_blocks: 2048,
            parity_reserve: 3,
            policy: DestagePolicy::Fcfs,
        }),
        io_bus_bytes_per_s: bus,
        cache_port_bytes_per_s: port,
        ..config((2, 5, 72), None, ParityRotation::LeftSymmetric)
    };
    Raid5Array::new(hp97560(), &cfg).expect("valid array")
}

const MB20: f64 = 20e6;
/// 8 KiB at 20 MB/s.
const XFER_8K: u64 = 409_600;

#[test]
fn writes_into_the_cache_are_answered_when_their_data_has_crossed_the_channel_in_fifo_order() {
    let mut a = with_channel(Some(MB20), None);
    let done = drain(
        &mut a,
        &[
            req(0, Op::Write, 0, 16, 1_000),
            req(1, Op::Write, 1_000, 16, 1_000),
        ],
    );
    let at = |id: u64| done.iter().find(|c| c.id == id).unwrap().done.0;
    assert_eq!(at(0), 1_000 + XFER_8K);
    assert_eq!(at(1), 1_000 + 2 * XFER_8K, "the second waits for the first");
    // Without the channel a write into the cache is answered at once.
    let mut b = with_channel(None, None);
    let done = drain(&mut b, &[req(0, Op::Write, 0, 16, 1_000)]);
    assert_eq!(done[0].done.0, 1_000);
}

#[test]
fn a_read_is_answered_after_its_data_crosses_the_channel_and_its_disk_after_the_port() {
    let run = |bus, port| {
        let mut a = with_channel(bus, port);
        let done = drain(&mut a, &[req(0, Op::Read, 0, 16, 0)]);
        (done[0].done.0, a.busy(0, Nanos(1_000_000_000)).total().0)
    };
    let (plain, busy) = run(None, None);
    let (bus, busy_bus) = run(Some(MB20), None);
    assert_eq!(bus, plain + XFER_8K);
    assert_eq!(busy_bus, busy, "the channel does not hold the disk");
    let (port, busy_port) = run(None, Some(MB20));
    assert_eq!(
        port,
        plain + XFER_8K,
        "the read waits for its port transfer"
    );
    assert_eq!(
        busy_port,
        busy + XFER_8K,
        "the disk is busy until the transfer ends"
    );
    let (both, _) = run(Some(MB20), Some(MB20));
    assert_eq!(both, plain + 2 * XFER_8K);
}

#[test]
fn random_work_through_the_channel_is_answered_and_deterministic() {
    let run = || {
        let mut a = with_channel(Some(MB20), Some(MB20));
        let cap = a.capacity_sectors();
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let mut t = 0;
        let reqs: Vec<_> = (0..400u64)
            .map(|i| {
                t += rng.gen_range(0..6_000_000);
                let op = if rng.gen_bool(0.6) {
                    Op::Read
                } else {
                    Op::Write
                };
                let lba = rng.gen_range(0..cap / 8 - 4) * 8;
                req(i, op, lba, 8 * rng.gen_range(1..=4), t)
            })
            .collect();
        let done = drain(&mut a, &reqs);
        assert_eq!(done.len(), reqs.len());
        assert_eq!(a.outstanding(), 0);
        // Every answer is at least one transfer after its arrival.
        for c in &done {
            let bytes = u64::from(c.sectors) * 512;
            assert!(c.latency().0 >= bytes * 50, "{c:?}");
        }
        done.iter().map(|c| (c.id, c.done)).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}
