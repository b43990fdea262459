use super::*;
use crate::drive::builtin_drive;
use rand::{Rng, SeedableRng};

fn setup(used: f64, seed: u64) -> (Drive, FreeSpace) {
    let drive = builtin_drive("st39133lwv").expect("built-in drive");
    let mut free = FreeSpace::new(&drive, 0, 2_000_000, 8).expect("region");
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    for b in 0..free.blocks() {
        if rng.gen_bool(used) {
            free.allocate(b, 1);
        }
    }
    (drive, free)
}

fn read(drive: &Drive, id: u64, lba: u64) -> EwRequest {
    EwRequest {
        id,
        work: Work::Positioned {
            op: Op::Read,
            lba,
            sectors: 8,
            target: drive.locate(lba),
        },
        queued_at: Nanos::ZERO,
        seq: id,
    }
}

fn write(id: u64) -> EwRequest {
    EwRequest {
        id,
        work: Work::Eager { blocks: 1 },
        queued_at: Nanos::ZERO,
        seq: id,
    }
}

fn head(cylinder: u32) -> HeadState {
    HeadState {
        cylinder,
        head: 0,
        phase_ns: 1234,
    }
}

#[test]
fn write_first_and_read_first_take_their_class_first() {
    let (drive, free) = setup(0.5, 1);
    for (policy, want_write) in [(EwPolicy::WriteFirst, true), (EwPolicy::ReadFirst, false)] {
        let mut q = EwQueue::new(policy, None);
        q.push(read(&drive, 1, 1000));
        q.push(write(2));
        let p = q.pick(Nanos(5), &head(0), &drive, &free).expect("a pick");
        assert_eq!(p.request.id == 2, want_write, "{policy}");
        assert_eq!(p.extent.is_some(), want_write);
    }
}

#[test]
fn an_eager_write_goes_to_the_closest_free_block() {
    let (drive, free) = setup(0.8, 2);
    let mut q = EwQueue::new(EwPolicy::WriteFirst, None);
    q.push(write(1));
    let h = head(300);
    let p = q.pick(Nanos(77), &h, &drive, &free).expect("a pick");
    let (b, len) = p.extent.expect("an extent");
    assert_eq!(len, 1);
    let want = free
        .closest(&drive, Nanos(77), &h, 1, Sweep::Any)
        .expect("free");
    assert_eq!(b, want.0);
}

#[test]
fn satf_ew_takes_free_blocks_only_ahead_of_its_sweep_and_turns_when_none_is_left() {
    let (drive, mut free) = setup(0.0, 3);
    // Free blocks only on cylinder 99, behind a head at 100 sweeping up.
    for b in 0..free.blocks() {
        if free.is_free(b) && free.cylinder(b) != 99 {
            free.allocate(b, 1);
        }
    }
    let at = |cyl: u32| {
        drive
            .geometry()
            .chs_to_lba(crate::drive::Chs {
                cylinder: cyl,
                head: 0,
                sector: 0,
            })
            .expect("lba")
    };
    let mut q = EwQueue::new(EwPolicy::SatfEw, None);
    q.push(read(&drive, 1, at(900)));
    q.push(write(2));
    // The free block one cylinder back is sooner than a read 800 cylinders on, but behind.
    let p = q
        .pick(Nanos::ZERO, &head(100), &drive, &free)
        .expect("a pick");
    assert_eq!(
        p.request.id, 1,
        "the read, not a free block behind the sweep"
    );
    // Nothing free ahead of 900: the sweep turns for the write.
    let p = q
        .pick(Nanos::ZERO, &head(900), &drive, &free)
        .expect("a pick");
    assert_eq!(p.request.id, 2);
    assert_eq!(free.cylinder(p.extent.expect("an extent").0), 99);
    assert_eq!(q.stats().reversals, 1);
}

#[test]
fn free_bandwidth_inserts_a_write_only_where_it_does_not_delay_the_read() {
    // Random queues and heads: whenever FreeBW picks the eager write before a read, the
    // read is still reached in the same revolution it would have been without the write.
    let (drive, free) = setup(0.5, 4);
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    let mut inserted = 0;
    for _ in 0..300 {
        for policy in [EwPolicy::FreeBwSatf, EwPolicy::FreeBwScan] {
            let mut q = EwQueue::new(policy, None);
            let lba = rng.gen_range(0..1_900_000u64);
            q.push(read(&drive, 1, lba));
            q.push(write(2));
            let h = head(rng.gen_range(0..600));
            let now = Nanos(rng.gen_range(0..10_000_000));
            let target = drive.locate(lba);
            let direct = now + drive.position_time(now, &h, Op::Read, &target);
            let p = q.pick(now, &h, &drive, &free).expect("a pick");
            if p.request.id == 2 {
                inserted += 1;
                let (b, len) = p.extent.expect("an extent");
                let a = drive.access(
                    now,
                    &h,
                    Transfer {
                        op: Op::Write,
                        lba: free.lba(b),
                        sectors: len * 8,
                    },
                    None,
                    None::<&mut Pcg64Mcg>,
                );
                let after = HeadState {
                    cylinder: a.end_cylinder,
                    head: a.end_head,
                    phase_ns: h.phase_ns,
                };
                let via = a.end + drive.position_time(a.end, &after, Op::Read, &target);
                assert!(
                    via <= direct,
                    "{policy}: the write delayed the read ({via:?} > {direct:?})"
                );
            }
        }
    }
    assert!(inserted > 10, "gaps were found ({inserted})");
}

#[test]
fn the_age_bound_serves_the_oldest_first() {
    let (drive, free) = setup(0.5, 6);
    let mut q = EwQueue::new(EwPolicy::WriteFirst, Some(Span::from_ms(10)));
    let mut r = read(&drive, 1, 5000);
    r.queued_at = Nanos::ZERO;
    q.push(r);
    let mut w = write(2);
    w.queued_at = Nanos(Span::from_ms(15).0);
    q.push(w);
    let p = q
        .pick(Nanos(Span::from_ms(20).0), &head(0), &drive, &free)
        .expect("a pick");
    assert_eq!(p.request.id, 1, "the read waited 20 ms > 10 ms");
    assert_eq!(q.stats().aged_picks, 1);
}
