use super::super::cache_spec::ExtraWriteDisconnect;
use super::super::spec::test_spec;
use super::*;
use rand_pcg::Pcg64Mcg;

fn cache() -> CacheSpec {
    toml::from_str(
        r#"
        segments = 2
        segment_sectors = 400
        continuous_read = 1
        max_read_ahead_sectors = 400
        fast_write_level = 2
        read_hit_after_read_ms = 0.1
        read_hit_after_write_ms = 0.2
        read_miss_after_read_ms = 0.3
        read_miss_after_write_ms = 0.4
        write_hit_after_read_ms = 0.5
        write_hit_after_write_ms = 0.6
        write_miss_after_read_ms = 0.7
        write_miss_after_write_ms = 0.8
        bus_sector_ms = 0.1
        "#,
    )
    .unwrap()
}

fn drive(c: Option<CacheSpec>) -> Drive {
    let mut s = test_spec(2, 1000, 100);
    s.cache = c;
    Drive::from_spec(&s).unwrap()
}

fn serve(ctl: &mut Controller, d: &Drive, now: Nanos, op: Op, lba: u64, sectors: u32) -> Service {
    ctl.serve(d, now, Transfer { op, lba, sectors }, None::<&mut Pcg64Mcg>)
}

const HEAD: HeadState = HeadState {
    cylinder: 0,
    head: 0,
    phase_ns: 0,
};

#[test]
fn without_a_cache_a_request_is_its_mechanical_access() {
    let d = drive(None);
    let mut ctl = Controller::new(&d, HEAD);
    let s = serve(&mut ctl, &d, Nanos(1_000), Op::Read, 5_000, 8);
    let a = d.access(
        Nanos(1_000),
        &HEAD,
        Transfer {
            op: Op::Read,
            lba: 5_000,
            sectors: 8,
        },
        None,
        None::<&mut Pcg64Mcg>,
    );
    assert_eq!(s.access, a);
}

#[test]
fn a_read_after_a_miss_on_the_same_track_hits_the_read_ahead() {
    let d = drive(Some(cache()));
    let mut ctl = Controller::new(&d, HEAD);
    let miss = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 4);
    assert!(!miss.hit);
    // 10 ms later the read-ahead (to the end of the track: sectors 5004..5100) is done.
    let t = miss.access.end + Span::from_ms(10);
    let hit = serve(&mut ctl, &d, t, Op::Read, 5_010, 4);
    assert!(hit.hit);
    // Hit overhead after a read (0.1 ms) + 4 sectors over the interface at 0.1 ms each.
    assert_eq!(hit.access.end.since(t), Span::from_ms_f64(0.1 + 0.4));
    // Beyond the track end (sector 5100 is the next track) it is a miss.
    let far = serve(
        &mut ctl,
        &d,
        hit.access.end + Span::from_ms(10),
        Op::Read,
        5_100,
        4,
    );
    assert!(!far.hit);
}

#[test]
fn read_ahead_mode_1_does_not_start_on_the_next_track() {
    // DiskSim `disk_initiate_seek` refuses a background read that needs a head switch: a
    // read ending at its track's end (sectors 5000..5100 are all of cylinder 25, head 0) is
    // not read ahead of, so the next track's first sectors are a miss 10 ms later. A read
    // ending inside the track is read ahead of as before.
    let d = drive(Some(cache()));
    let mut ctl = Controller::new(&d, HEAD);
    let whole = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 100);
    let next = serve(
        &mut ctl,
        &d,
        whole.access.end + Span::from_ms(10),
        Op::Read,
        5_100,
        4,
    );
    assert!(!next.hit, "no read-ahead across the head switch");
    let part = serve(
        &mut ctl,
        &d,
        next.access.end + Span::from_ms(10),
        Op::Read,
        7_000,
        50,
    );
    let on = serve(
        &mut ctl,
        &d,
        part.access.end + Span::from_ms(10),
        Op::Read,
        7_050,
        4,
    );
    assert!(on.hit, "the rest of the track is read ahead");
}

#[test]
fn a_never_disconnect_read_larger_than_its_segment_waits_for_the_segment() {
    // DiskSim `disk_buffer_block_available`: the media does not read a sector a segment
    // or more ahead of what the host has taken, whether or not the drive disconnects.
    // 10 sectors a segment, the bus (0.2 ms a sector) slower than the media (60 µs):
    // the media stalls and comes back after a revolution (6 ms) while the bus drains
    // the segment in 2 ms, so 100 sectors take well over their 20 ms on the bus.
    let mut c = cache();
    c.enable_caching = 0;
    c.continuous_read = 0;
    c.max_read_ahead_sectors = 0;
    c.fast_write_level = 0;
    c.segment_sectors = 10;
    c.never_disconnect = true;
    c.bus_sector_ms = 0.2;
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    let s = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 100);
    assert!(
        s.access.end > Nanos::ZERO + Span::from_ms(40),
        "{:?}",
        s.access.end
    );
}

#[test]
fn a_read_ahead_of_the_read_ahead_is_a_miss() {
    // DiskSim `disk_buffer_check_read_segments`: only sectors already read are hits.
    let d = drive(Some(cache()));
    let mut ctl = Controller::new(&d, HEAD);
    let miss = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 4);
    // The read-ahead (5004..5100, 60 µs a sector) has not reached 5050 0.1 ms later.
    let t = miss.access.end + Span::from_ms_f64(0.1);
    let ahead = serve(&mut ctl, &d, t, Op::Read, 5_050, 4);
    assert!(!ahead.hit);
    // Read miss overhead after a read (0.3 ms) first.
    assert!(ahead.access.end.since(t) > Span::from_ms_f64(0.3 + 0.4));
}

#[test]
fn a_read_hit_during_a_destage_waits_for_it() {
    // DiskSim `disk_buffer_stopable_access`: a destage is not stopped for a read hit.
    let d = drive(Some(cache()));
    let mut ctl = Controller::new(&d, HEAD);
    let w = serve(&mut ctl, &d, Nanos(0), Op::Write, 5_000, 8);
    let destaged = ctl.mech_free();
    assert!(destaged > w.access.end);
    let r = serve(&mut ctl, &d, w.access.end, Op::Read, 5_000, 4);
    assert!(r.hit);
    // After the destage: 4 sectors at 0.1 ms.
    assert_eq!(r.access.end, destaged + Span::from_ms_f64(0.4));
}

#[test]
fn a_read_hit_on_another_segment_waits_for_the_minimum_read_ahead() {
    let mut c = cache();
    c.min_read_ahead_sectors = 90;
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    // Sectors 0..100 cached (the read-ahead ran to the track end), then a miss at 5000
    // whose read-ahead must read 90 sectors (5.4 ms) before it may stop.
    let a = serve(&mut ctl, &d, Nanos(0), Op::Read, 0, 4);
    let b = serve(
        &mut ctl,
        &d,
        a.access.end + Span::from_ms(20),
        Op::Read,
        5_000,
        4,
    );
    let t = b.access.end;
    let r = serve(&mut ctl, &d, t, Op::Read, 10, 4);
    assert!(r.hit);
    assert!(
        r.access.end > t + Span::from_ms(5),
        "{:?}",
        r.access.end.since(t)
    );
}

#[test]
fn a_fast_write_takes_the_mechanism_from_the_read_ahead() {
    // With or without "Write hit stop prefetch", the destage stops the read-ahead: a
    // later miss positions from where the destage left the arm.
    let run = |stop: bool| {
        let mut c = cache();
        c.write_hit_stop_prefetch = stop;
        let d = drive(Some(c));
        let mut ctl = Controller::new(&d, HEAD);
        let r = serve(&mut ctl, &d, Nanos(0), Op::Read, 0, 4);
        let w = serve(&mut ctl, &d, r.access.end, Op::Write, 50_000, 8);
        let t = w.access.end + Span::from_ms(30);
        serve(&mut ctl, &d, t, Op::Read, 50_200, 4)
            .access
            .end
            .since(t)
    };
    assert_eq!(run(false), run(true));
}

#[test]
fn a_write_during_the_read_ahead_leaves_the_read_ahead_segment_its_range() {
    // DiskSim `disk_buffer_set_segment` empties only clean, inactive segments a write
    // overlaps: the segment the read-ahead is filling keeps what it has read.
    let d = drive(Some(cache()));
    let mut ctl = Controller::new(&d, HEAD);
    let miss = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 4);
    // 0.5 ms on, the read-ahead (60 µs a sector) has read past 5008.
    let w = serve(
        &mut ctl,
        &d,
        miss.access.end + Span::from_ms_f64(0.5),
        Op::Write,
        5_006,
        2,
    );
    let r = serve(
        &mut ctl,
        &d,
        w.access.end + Span::from_ms(30),
        Op::Read,
        5_000,
        8,
    );
    assert!(r.hit);
}

#[test]
fn a_never_disconnect_write_waits_for_a_destage_filling_the_write_segments() {
    // DiskSim `disk_buffer_select_write_segment`: no segment for a write (but an
    // append) while `numdirty >= numwritesegs`; with more write segments it goes to
    // another one during the destage.
    let run = |write_segments: u32| {
        let mut c = cache();
        c.never_disconnect = true;
        c.write_segments = write_segments;
        let d = drive(Some(c));
        let mut ctl = Controller::new(&d, HEAD);
        let a = serve(&mut ctl, &d, Nanos(0), Op::Write, 5_000, 8);
        let destaged = ctl.mech_free();
        assert!(destaged > a.access.end);
        let b = serve(&mut ctl, &d, a.access.end, Op::Write, 50_000, 8);
        (b.access.end, destaged)
    };
    let (end, destaged) = run(1);
    assert!(end > destaged, "{end:?} {destaged:?}");
    let (end, destaged) = run(2);
    assert!(end < destaged, "{end:?} {destaged:?}");
}

#[test]
fn a_miss_after_a_finished_destage_takes_the_emptied_write_segment() {
    // DiskSim `disk_release_hda` leaves a destaged segment empty (without read hits on
    // write data) and `disk_buffer_select_read_segment` prefers an empty segment to a
    // clean one, so cached read data survives.
    let mut c = cache();
    c.read_hits_on_write_data = false;
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    let a = serve(&mut ctl, &d, Nanos(0), Op::Read, 0, 4);
    let t = a.access.end + Span::from_ms(30);
    let w = serve(&mut ctl, &d, t, Op::Write, 50_000, 8);
    let t = w.access.end + Span::from_ms(30);
    let b = serve(&mut ctl, &d, t, Op::Read, 80_000, 4);
    assert!(!b.hit);
    let t = b.access.end + Span::from_ms(30);
    assert!(serve(&mut ctl, &d, t, Op::Read, 10, 4).hit);
}

#[test]
fn the_read_ahead_pushes_the_oldest_sectors_out_of_the_circular_segment() {
    let mut c = cache();
    c.continuous_read = 3;
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    let miss = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 4);
    assert!(!miss.hit);
    // Mode 3 reads 400 sectors past the request (sectors 5004..5404) into a 400-sector
    // segment: the request's own sectors are still there at first, overwritten once
    // the read-ahead is done.
    let mut early = ctl.clone();
    let t = miss.access.end + Span::from_ms(1);
    assert!(serve(&mut early, &d, t, Op::Read, 5_000, 4).hit);
    let t = miss.access.end + Span::from_ms(100);
    assert!(!serve(&mut ctl, &d, t, Op::Read, 5_000, 4).hit);
}

/// Mode 3 with a 40-sector maximum read-ahead: a miss of 5000..5020 reads ahead to 5060.
fn mode3(idle_hit: bool) -> (Drive, Controller, Service) {
    let mut c = cache();
    c.continuous_read = 3;
    c.max_read_ahead_sectors = 40;
    c.read_ahead_on_idle_hit = idle_hit;
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    let miss = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 20);
    assert!(!miss.hit);
    (d, ctl, miss)
}

#[test]
fn a_hit_moves_the_running_read_ahead_goal_past_itself() {
    let (d, mut ctl, miss) = mode3(false);
    // While the read-ahead runs, a hit on 5020..5040 moves its goal to 5040 + 40.
    let t = miss.access.end + Span::from_ms_f64(0.1);
    let hit = serve(&mut ctl, &d, t, Op::Read, 5_020, 20);
    assert!(hit.hit);
    // So 5060..5080, beyond the miss's own goal, is read ahead too.
    let t = hit.access.end + Span::from_ms(100);
    let next = serve(&mut ctl, &d, t, Op::Read, 5_060, 20);
    assert!(next.hit);
    assert_eq!(next.access.end.since(t), Span::from_ms_f64(0.1 + 2.0));
}

#[test]
fn an_idle_hit_resumes_the_read_ahead_where_the_segment_ends() {
    for idle_hit in [true, false] {
        let (d, mut ctl, miss) = mode3(idle_hit);
        // Long after the read-ahead stopped at 5060, a hit on 5020..5040 finds the
        // mechanism idle: with read-ahead on idle hits it reads on from 5060 to
        // 5040 + 40, keeping 5040..5060.
        let t = miss.access.end + Span::from_ms(100);
        let hit = serve(&mut ctl, &d, t, Op::Read, 5_020, 20);
        assert!(hit.hit);
        let t = hit.access.end + Span::from_ms(100);
        let mut kept = ctl.clone();
        let k = serve(&mut kept, &d, t, Op::Read, 5_040, 20);
        assert!(k.hit, "5040..5060 was kept (idle hit: {idle_hit})");
        // Straight from the buffer: hit overhead after a read, 20 sectors at 0.1 ms.
        assert_eq!(k.access.end.since(t), Span::from_ms_f64(0.1 + 2.0));
        let next = serve(&mut ctl, &d, t, Op::Read, 5_060, 20);
        assert_eq!(next.hit, idle_hit, "5060..5080 (idle hit: {idle_hit})");
    }
}

#[test]
fn new_data_goes_to_an_overlapped_then_an_empty_then_the_least_recently_used_segment() {
    let mut c = cache();
    c.segments = 4;
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    let seg = |start, end, used| Segment {
        start,
        end,
        used,
        write_end: None,
        dirty: false,
    };
    ctl.segments = vec![
        seg(100, 200, 1),
        seg(0, 0, 5),
        seg(300, 400, 2),
        seg(500, 600, 3),
    ];
    ctl.segments[3].dirty = true;
    // An empty segment before the least recently used one, which is taken before the
    // one the read-ahead was filling; write data not yet on the media is never taken.
    assert_eq!(ctl.take_segment(Op::Read, (900, 904), None), 1);
    ctl.segments[1] = seg(700, 800, 6);
    assert_eq!(ctl.take_segment(Op::Read, (900, 904), Some(0)), 2);
    // A write takes the clean segment it overlaps.
    assert_eq!(ctl.take_segment(Op::Write, (350, 358), None), 2);
}

#[test]
fn a_miss_completes_after_its_last_sector_crosses_the_interface() {
    let d = drive(Some(cache()));
    let mut ctl = Controller::new(&d, HEAD);
    let s = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 4);
    let a = d.access(
        Nanos(0) + Span::from_ms_f64(0.3),
        &HEAD,
        Transfer {
            op: Op::Read,
            lba: 5_000,
            sectors: 4,
        },
        None,
        None::<&mut Pcg64Mcg>,
    );
    // The interface (0.1 ms/sector) is slower than the media (0.06 ms/sector): the
    // first sector is in the buffer once read (0.06 ms after its start), and the last
    // leaves 4 × 0.1 ms later.
    let first_start = a.end.0 - a.transfer.0;
    assert_eq!(s.access.end, Nanos(first_start + 60_000 + 400_000));
    let sum = s.access.overhead
        + s.access.seek
        + s.access.rotation
        + s.access.transfer
        + s.access.switches;
    assert_eq!(sum, s.access.end.since(Nanos(0)), "breakdown adds up");
}

#[test]
fn fast_writes_complete_from_the_buffer_and_delay_the_next_miss() {
    let d = drive(Some(cache()));
    let mut ctl = Controller::new(&d, HEAD);
    let w = serve(&mut ctl, &d, Nanos(0), Op::Write, 150_000, 8);
    assert!(w.hit);
    // Write hit after a read (the initial state): 0.5 ms + 8 × 0.1 ms.
    assert_eq!(w.access.end, Nanos(0) + Span::from_ms_f64(1.3));
    // The media write (a long seek) is still going on: a read miss issued right away
    // waits for it, so it takes longer than the same read on an idle drive.
    let r = serve(&mut ctl, &d, w.access.end, Op::Read, 0, 1);
    let mut idle = Controller::new(&d, HEAD);
    let r_idle = serve(&mut idle, &d, Nanos(0), Op::Read, 0, 1);
    assert!(r.access.end.since(w.access.end) > r_idle.access.end.since(Nanos(0)));
}

#[test]
fn zero_latency_writes_wait_for_the_first_sector_as_in_disksim() {
    // DiskSim 4.0's `g1_access_block` takes `dm_convert_atop`'s DM_OK (−3) for a failure,
    // so an immediate ("zero-latency") access starts at its first requested sector.
    let mut c = cache();
    c.bus_sector_ms = 0.0;
    c.fast_write_level = 0;
    c.write_miss_after_read_ms = 0.3;
    let plain = drive(Some(c.clone()));
    c.immediate_buffer_write = true;
    let zl = drive(Some(c));
    // A 50-sector write on track 0 (sectors 0..50; 100 sectors, 6 ms per revolution, 0.06
    // ms per sector) from the same track, landing 0.3 + 1.5 ms = 1.8 ms in: 30 sectors
    // into the span, with all data already buffered (interface time 0). It waits 70
    // sectors for sector 0 and writes 50: 7.2 ms after landing, zero latency or not.
    let head = HeadState {
        cylinder: 0,
        head: 0,
        phase_ns: 0,
    };
    let t = Nanos(1_500_000);
    let landed = t + Span::from_ms_f64(0.3);
    for d in [&plain, &zl] {
        let s = serve(&mut Controller::new(d, head), d, t, Op::Write, 0, 50);
        assert_eq!(s.access.end, landed + Span::from_ms_f64(7.2));
    }
}

/// The extra write disconnect of the two tests below.
const EXTRA_DISCONNECT: ExtraWriteDisconnect = ExtraWriteDisconnect {
    command_ms: 0.05,
    disconnect_ms: 0.01,
    inter_disconnect_delay_ms: 0.02,
    second_disconnect_ms: 0.0,
    seek_delta_ms: 0.03,
};

#[test]
fn the_extra_write_disconnect_is_suffered_by_a_write_after_a_non_sequential_write() {
    let mut c = cache();
    c.fast_write_level = 0;
    // One segment: every write gets the segment the previous one used (DiskSim flags
    // the extra disconnect only then).
    c.segments = 1;
    c.extra_write_disconnect = Some(EXTRA_DISCONNECT);
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    // No completion costs are set, so the overhead is the command overhead alone.
    let after_read = serve(&mut ctl, &d, Nanos(0), Op::Write, 150_000, 8);
    assert_eq!(after_read.access.overhead, Span::from_ms_f64(0.7));
    let t = after_read.access.end + Span::from_ms(5);
    let jump = serve(&mut ctl, &d, t, Op::Write, 90_000, 8);
    assert_eq!(jump.access.overhead, Span::from_ms_f64(0.05));
    let t = jump.access.end + Span::from_ms(5);
    let sequential = serve(&mut ctl, &d, t, Op::Write, 90_008, 8);
    assert_eq!(sequential.access.overhead, Span::from_ms_f64(0.8));
}

#[test]
fn a_write_given_another_segment_than_the_previous_write_has_no_extra_disconnect() {
    let mut c = cache();
    c.fast_write_level = 0;
    c.segments = 2;
    c.extra_write_disconnect = Some(EXTRA_DISCONNECT);
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    let first = serve(&mut ctl, &d, Nanos(0), Op::Write, 150_000, 8);
    // Written through and not kept: both segments are empty, and the next write gets
    // the least recently used one, not the one the previous write used.
    let t = first.access.end + Span::from_ms(5);
    let jump = serve(&mut ctl, &d, t, Op::Write, 90_000, 8);
    assert_eq!(jump.access.overhead, Span::from_ms_f64(0.8));
}

#[test]
fn write_through_completes_after_the_media_write() {
    let mut c = cache();
    c.fast_write_level = 0;
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    let w = serve(&mut ctl, &d, Nanos(0), Op::Write, 150_000, 8);
    assert!(!w.hit);
    let media = d.access(
        Nanos(0) + Span::from_ms_f64(0.7),
        &HEAD,
        Transfer {
            op: Op::Write,
            lba: 150_000,
            sectors: 8,
        },
        None,
        None::<&mut Pcg64Mcg>,
    );
    assert!(
        w.access.end >= media.end,
        "{:?} < {:?}",
        w.access.end,
        media.end
    );
}

#[test]
fn a_hit_moves_the_read_ahead_goal_in_modes_1_and_2_too() {
    // DiskSim `disk_buffer_attempt_seg_ownership` raises `maxreadaheadblkno` to
    // `disk_buffer_get_max_readahead` of the hit whatever the read-ahead mode; modes 1
    // and 2 still stop at the track's (cylinder's) end, here sector 5100.
    for mode in [1, 2] {
        let mut c = cache();
        c.continuous_read = mode;
        c.max_read_ahead_sectors = 40;
        let d = drive(Some(c));
        let mut ctl = Controller::new(&d, HEAD);
        let miss = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 20);
        // While the read-ahead (to 5060) runs, a hit on 5020..5040 moves its goal to 5080.
        let t = miss.access.end + Span::from_ms_f64(0.1);
        assert!(serve(&mut ctl, &d, t, Op::Read, 5_020, 20).hit);
        let t = t + Span::from_ms(100);
        let next = serve(&mut ctl, &d, t, Op::Read, 5_060, 20);
        assert!(next.hit, "5060..5080 is read ahead (mode {mode})");
    }
}

#[test]
fn a_miss_waits_for_the_stopped_read_ahead_sector_after_its_command_overhead() {
    // DiskSim `disk_check_hda`: the seek is delayed by the command overhead *plus* the
    // wait for the stopped read-ahead's pending sector (`disk_seek_stoptime`), not by the
    // larger of the two. Without "Stop prefetch in sector" that sector is finished first.
    let mut spec = cache();
    spec.read_directly_to_buffer = false;
    let d = drive(Some(spec.clone()));
    let mut ctl = Controller::new(&d, HEAD);
    let miss = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 4);
    // The read-ahead (5004..5100, 5.76 ms of media) is under way.
    let now = miss.access.end + Span::from_ms_f64(0.03);
    let mut probe = ctl.clone();
    let held = probe.preempt_read_ahead(&d, &spec, now);
    assert!(
        held > Span::ZERO && held < Span::from_ms_f64(0.061),
        "{held:?}"
    );
    let to = d.locate(50_000).chs;
    let seek = d.seek_span(probe.head.cylinder, probe.head.head, to, Op::Read);
    let far = serve(&mut ctl, &d, now, Op::Read, 50_000, 4);
    assert!(!far.hit);
    // `Access::seek` counts the wait after the command overhead (0.3 ms) with the seek.
    assert_eq!(far.access.seek, seek + held);
}

#[test]
fn a_write_waiting_for_a_destage_takes_the_destaged_segment() {
    // DiskSim chooses the segment again once the destage is done (`disk_release_hda`,
    // `disk_buffer_select_write_segment`): the destaged segment is empty (no read hits on
    // write data) and preferred to the clean one holding read data, which survives.
    let mut c = cache();
    c.read_hits_on_write_data = false;
    c.continuous_read = 0;
    c.max_read_ahead_sectors = 0;
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    let r = serve(&mut ctl, &d, Nanos(0), Op::Read, 0, 4);
    let t = r.access.end + Span::from_ms(30);
    let w = serve(&mut ctl, &d, t, Op::Write, 50_000, 8);
    // The second write arrives while the first is destaged, and does not append to it.
    assert!(ctl.mech_free() > w.access.end);
    let w2 = serve(&mut ctl, &d, w.access.end, Op::Write, 90_000, 8);
    let t = w2.access.end.max(ctl.mech_free()) + Span::from_ms(30);
    assert!(serve(&mut ctl, &d, t, Op::Read, 0, 4).hit);
}

#[test]
fn a_write_larger_than_its_segment_keeps_only_its_last_sectors() {
    // DiskSim `disk_buffer_segment_wrap`: the circular segment holds the last
    // `segment_sectors` written, so the start of a longer write is not cached.
    let mut c = cache();
    c.segment_sectors = 50;
    c.read_hits_on_write_data = true;
    c.continuous_read = 0;
    c.max_read_ahead_sectors = 0;
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    let w = serve(&mut ctl, &d, Nanos(0), Op::Write, 5_000, 120);
    let t = w.access.end.max(ctl.mech_free()) + Span::from_ms(30);
    let mut tail = ctl.clone();
    assert!(serve(&mut tail, &d, t, Op::Read, 5_080, 40).hit);
    assert!(!serve(&mut ctl, &d, t, Op::Read, 5_000, 8).hit);
}

#[test]
fn a_zero_latency_write_larger_than_its_segment_writes_out_of_order() {
    // DiskSim `disk_buffer_sector_done`: with "Immediate buffer write" the media writes a
    // buffered sector as it passes even when an earlier one is not yet in, so a write
    // whose data trails the head finishes sooner than writing in order, which waits a
    // turn for the first sector. 150 sectors through a 100-sector segment, the bus
    // (0.1 ms a sector) slower than the media (0.06 ms).
    let run = |immediate: bool| {
        let mut c = cache();
        c.segment_sectors = 100;
        c.fast_write_level = 0;
        c.bus_sector_ms = 0.01;
        c.immediate_buffer_write = immediate;
        let d = drive(Some(c));
        let mut ctl = Controller::new(&d, HEAD);
        let a = serve(&mut ctl, &d, Nanos(0), Op::Write, 5_000, 10);
        let b = serve(&mut ctl, &d, a.access.end, Op::Write, 5_010, 150);
        b.access.end.since(a.access.end)
    };
    let (in_order, out_of_order) = (run(false), run(true));
    // Measured: 18.06 against 21.0 ms (in order waits a whole turn, 6 ms, for sector
    // 5010; out of order writes what passes meanwhile and comes round for the rest).
    assert!(
        out_of_order + Span::from_ms(2) < in_order,
        "{out_of_order:?} vs {in_order:?}"
    );
}

#[test]
fn a_hit_the_read_ahead_feeds_stops_the_media_while_its_segment_is_full() {
    // DiskSim `disk_buffer_block_available`: the media does not read a sector a segment
    // or more ahead of what the host has taken, for sectors the read-ahead brings to a
    // hit as for a miss. The bus (0.1 ms a sector) is slower than the media (0.06 ms):
    // through a 30-sector segment the 80-sector hit loses turns of the platter that a
    // 400-sector segment does not.
    let run = |segment: u32| {
        let mut c = cache();
        c.continuous_read = 3;
        c.segment_sectors = segment;
        c.max_read_ahead_sectors = 20;
        let d = drive(Some(c));
        let mut ctl = Controller::new(&d, HEAD);
        let miss = serve(&mut ctl, &d, Nanos(0), Op::Read, 5_000, 20);
        let t = miss.access.end + Span::from_ms_f64(0.1);
        let hit = serve(&mut ctl, &d, t, Op::Read, 5_020, 80);
        assert!(hit.hit);
        hit.access.end.since(t)
    };
    let (small, large) = (run(30), run(400));
    assert!(small > large + Span::from_ms(2), "{small:?} vs {large:?}");
}

#[test]
fn a_dedicated_write_segment_serves_no_read() {
    // DiskSim `disk_buffer_check_read_segments` skips the dedicated write segment: a read
    // of data just written (read hits on write data allowed) goes to the media.
    let run = |separate: bool| {
        let mut c = cache();
        c.separate_write_segment = separate;
        c.continuous_read = 0;
        c.max_read_ahead_sectors = 0;
        let d = drive(Some(c));
        let mut ctl = Controller::new(&d, HEAD);
        let w = serve(&mut ctl, &d, Nanos(0), Op::Write, 5_000, 8);
        let t = w.access.end.max(ctl.mech_free()) + Span::from_ms(30);
        serve(&mut ctl, &d, t, Op::Read, 5_000, 8).hit
    };
    assert!(run(false));
    assert!(!run(true));
}

#[test]
fn a_never_disconnect_write_held_for_a_destage_sends_its_data_when_the_destage_ends() {
    // DiskSim holds the bus (`disk_buffer_transfer_size` returns -2) and, once the destage
    // releases the segment, the data crosses at once: no data preparation again.
    let mut c = cache();
    c.never_disconnect = true;
    c.write_segments = 1;
    c.data_preparation_ms = 0.2;
    let d = drive(Some(c));
    let mut ctl = Controller::new(&d, HEAD);
    let a = serve(&mut ctl, &d, Nanos(0), Op::Write, 5_000, 8);
    let destaged = ctl.mech_free();
    assert!(destaged > a.access.end);
    let b = serve(&mut ctl, &d, a.access.end, Op::Write, 50_000, 8);
    // Eight sectors at 0.1 ms from the destage's end, the fast write done with its data.
    assert_eq!(b.access.end, destaged + Span::from_ms_f64(0.8));
}
