use super::*;

/// A .parv text with `disks` instances of disk block D (a stub: the logorg reader does not
/// read the disk) and one logorg with `params` (the standard parameters, any of which a test
/// may replace by giving it again in `over`).
fn parv(devices: &str, redun: &str, over: &[(&str, &str)]) -> String {
    let mut params: Vec<(String, String)> = [
        ("Addressing mode", "Array"),
        ("Distribution scheme", "Striped"),
        ("Redundancy scheme", redun),
        ("devices", devices),
        ("Stripe unit", "64"),
        ("Synch writes for safety", "1"),
        ("Number of copies", "2"),
        ("Copy choice on read", "6"),
        ("RMW vs. reconstruct", "0.5"),
        ("Parity stripe unit", "64"),
        ("Parity rotation type", "1"),
        ("Time stamp interval", "0.000000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in over {
        match params.iter_mut().find(|(pk, _)| pk == k) {
            Some(p) if *v == "-" => p.1 = String::new(),
            Some(p) => p.1 = v.to_string(),
            None => params.push((k.to_string(), v.to_string())),
        }
    }
    let body: Vec<String> = params
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("   {k} = {v}"))
        .collect();
    format!(
        "disksim_disk D {{ }}\ndisksim_disk E {{ }}\ndisksim_bus B {{ }}\ninstantiate [ disk0 .. disk7 ] as D\ninstantiate [ other0 ] as E\ninstantiate [ bus0 ] as B\n\ndisksim_logorg org0 {{\n{}\n}}\n",
        body.join(",\n")
    )
}

fn read(text: &str) -> Result<DiskSimArray, DiskSimError> {
    let text = text.to_string();
    import_logorg("a/array.parv", &move |p: &str| {
        if p == "a/array.parv" {
            Ok(text.clone())
        } else {
            Err("no such file".into())
        }
    })
}

fn err(text: &str) -> DiskSimError {
    read(text).expect_err("should be refused")
}

#[test]
fn noredun_striped_is_striping_over_every_device() {
    let a = read(&parv(
        "[ disk0 .. disk3 ]",
        "Noredun",
        &[("Stripe unit", "128")],
    ))
    .unwrap();
    assert_eq!(a.name, "org0");
    assert_eq!(a.file, "a/array.parv");
    assert_eq!(a.devices, ["disk0", "disk1", "disk2", "disk3"]);
    assert_eq!(a.disk_spec, "D");
    assert_eq!(a.redundancy, Redundancy::Noredun);
    assert_eq!(a.stripe_unit_sectors, 128);
    assert_eq!((a.copies, a.data_disks()), (1, 4));
    assert_eq!(
        (a.group_width, a.rotation, a.reconstruct_fraction),
        (None, None, None)
    );
    // The parameters DiskSim reads only for other schemes are noted, not dropped.
    assert!(
        a.notes.iter().any(|n| n.contains("Copy choice on read")),
        "{:?}",
        a.notes
    );
    assert!(
        a.notes.iter().any(|n| n.contains("RMW vs. reconstruct")),
        "{:?}",
        a.notes
    );
    assert!(
        a.notes.iter().any(|n| n.starts_with("Time stamp interval")),
        "{:?}",
        a.notes
    );
}

#[test]
fn shadowed_keeps_copies_of_the_data_disks() {
    let a = read(&parv(
        "[ disk0 .. disk5 ]",
        "Shadowed",
        &[("Number of copies", "3")],
    ))
    .unwrap();
    assert_eq!(a.redundancy, Redundancy::Shadowed);
    assert_eq!((a.copies, a.data_disks()), (3, 2));
    assert_eq!(a.group_width, None);
    let a = read(&parv("[ disk0, disk1 ]", "Shadowed", &[])).unwrap();
    assert_eq!((a.copies, a.data_disks()), (2, 1));
}

#[test]
fn parity_disk_is_a_dedicated_parity_group_of_every_device() {
    let a = read(&parv(
        "[ disk0 .. disk4 ]",
        "Parity_disk",
        &[("Parity stripe unit", "8")],
    ))
    .unwrap();
    assert_eq!(a.redundancy, Redundancy::ParityDisk);
    assert_eq!(a.group_width, Some(5));
    assert_eq!(a.rotation, Some(ParityRotation::Dedicated));
    assert_eq!(a.data_disks(), 4);
    // rmwpoint = (int)(0.5 * 5) = 2: reconstruct from 2 of the 4 data units.
    assert_eq!(a.reconstruct_fraction, Some(0.375));
}

#[test]
fn parity_rotated_maps_each_rotation_type() {
    for (t, want) in [
        ("1", ParityRotation::LeftSymmetric),
        ("2", ParityRotation::LeftAsymmetric),
        ("3", ParityRotation::RightAsymmetric),
        ("4", ParityRotation::RightSymmetric),
    ] {
        let a = read(&parv(
            "[ disk0 .. disk4 ]",
            "Parity_rotated",
            &[("Parity rotation type", t)],
        ))
        .unwrap();
        assert_eq!(a.rotation, Some(want), "type {t}");
        assert_eq!(a.group_width, Some(5));
        assert_eq!(a.stripe_unit_sectors, 64);
        assert_eq!(
            a.notes
                .iter()
                .any(|n| n.contains("DiskSim 4.0 itself builds only type 1")),
            t != "1"
        );
    }
}

#[test]
fn rmw_breakpoint_matches_disksim_for_whole_unit_writes() {
    // DiskSim: reconstruct when units touched >= floor(rmw * n); spindle: when
    // k units > fraction * (n - 1).
    for n in 3..=9u32 {
        for i in 0..=20 {
            let rmw = f64::from(i) / 20.0;
            let point = (rmw * f64::from(n)).floor() as u32;
            let f = reconstruct_fraction_of(rmw, n);
            assert!((0.0..=1.0).contains(&f));
            for k in 1..n - 1 {
                let disksim = k >= point;
                let spindle = f64::from(k) > f * f64::from(n - 1);
                assert_eq!(disksim, spindle, "n {n} rmw {rmw} k {k}");
            }
        }
    }
}

#[test]
fn refusals_name_the_file_block_parameter_and_line() {
    let e = err(&parv(
        "[ disk0 .. disk3 ]",
        "Noredun",
        &[("Addressing mode", "Parts")],
    ));
    assert_eq!(e.file, "a/array.parv");
    assert_eq!(e.block, "disksim_logorg org0");
    assert_eq!(e.param, "Addressing mode");
    assert!(e.msg.starts_with("line 9: Parts is not supported"), "{e}");

    for (param, value, want) in [
        ("Distribution scheme", "Asis", "Can't have ASIS"),
        ("Distribution scheme", "Random", "load-balancing"),
        ("Distribution scheme", "Ideal", "load-balancing"),
        (
            "Distribution scheme",
            "Wavy",
            "must be Asis, Striped, Random or Ideal",
        ),
        ("Redundancy scheme", "Parity_declustered", "must be Noredun"),
        ("Components", "Partial", "whole disks"),
        ("Stripe unit", "0", "must be within 1..="),
        ("Parity rotation type", "5", "must be within 1..=4"),
        ("RMW vs. reconstruct", "1.5", "must be within 0.0..=1.0"),
        ("Copy choice on read", "0", "must be within 1..=6"),
        ("Number of copies", "0", "must be > 0"),
        ("Mystery knob", "3", "unknown or unsupported parameter"),
    ] {
        let e = err(&parv("[ disk0 .. disk3 ]", "Noredun", &[(param, value)]));
        assert_eq!(
            (e.block.as_str(), e.param.as_str()),
            ("disksim_logorg org0", param)
        );
        assert!(e.msg.contains(want), "{param} = {value}: {e}");
    }
    let e = err(&parv(
        "[ disk0 .. disk3 ]",
        "Noredun",
        &[("Stripe unit", "-")],
    ));
    assert_eq!(e.param, "Stripe unit");
    assert!(e.msg.contains("required parameter is missing"), "{e}");
}

#[test]
fn what_spindle_cannot_honour_is_refused_per_scheme() {
    // (devices, scheme, parameters replaced, the parameter named, the message)
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: &[Case] = &[
        (
            "[ disk0 .. disk4 ]",
            "Parity_rotated",
            &[("Parity stripe unit", "128")],
            "Parity stripe unit",
            "differs from Stripe unit 64",
        ),
        (
            "[ disk0 .. disk4 ]",
            "Parity_rotated",
            &[("Synch writes for safety", "0")],
            "Synch writes for safety",
            "0 is not supported",
        ),
        (
            "[ disk0 .. disk4 ]",
            "Parity_disk",
            &[("Synch writes for safety", "0")],
            "Synch writes for safety",
            "0 is not supported",
        ),
        (
            "[ disk0, disk1 ]",
            "Parity_rotated",
            &[],
            "devices",
            "at least 3 devices",
        ),
        (
            "[ disk0 .. disk4 ]",
            "Shadowed",
            &[],
            "Number of copies",
            "5 devices are not a whole number of sets of 2 copies",
        ),
        (
            "[ disk0 .. disk3 ]",
            "Shadowed",
            &[("Copy choice on read", "3")],
            "Copy choice on read",
            "3 is not supported",
        ),
        (
            "[ disk0, other0 ]",
            "Noredun",
            &[],
            "devices",
            "disk0 is a D but other0 is a E",
        ),
        (
            "[ disk0, bus0 ]",
            "Noredun",
            &[],
            "devices",
            "bus0 is a disksim_bus",
        ),
        (
            "[ disk0, disk9 ]",
            "Noredun",
            &[],
            "devices",
            "disk9 is not instantiated",
        ),
        (
            "[ disk0, disk0 ]",
            "Noredun",
            &[],
            "devices",
            "disk0 is listed twice",
        ),
        ("[ ]", "Noredun", &[], "devices", "the list is empty"),
    ];
    for (devices, redun, over, param, want) in cases {
        let e = err(&parv(devices, redun, over));
        assert_eq!(e.param, *param, "{e}");
        assert!(e.msg.contains(want), "{redun} {devices} {over:?}: {e}");
    }
    // The same values are fine where DiskSim does not read them.
    let a = read(&parv(
        "[ disk0 .. disk3 ]",
        "Noredun",
        &[
            ("Synch writes for safety", "0"),
            ("Parity stripe unit", "128"),
            ("Copy choice on read", "1"),
        ],
    ))
    .unwrap();
    assert_eq!(a.redundancy, Redundancy::Noredun);
    let a = read(&parv(
        "[ disk0 .. disk2 ]",
        "Shadowed",
        &[("Number of copies", "1"), ("Copy choice on read", "2")],
    ))
    .unwrap();
    assert_eq!(a.copies, 1);
}

#[test]
fn exactly_one_logorg() {
    let e = err("disksim_disk D { }\ninstantiate [ disk0 ] as D\n");
    assert_eq!((e.block.as_str(), e.param.as_str()), ("disksim_logorg", ""));
    assert!(e.msg.contains("no disksim_logorg block"), "{e}");
    let two = parv("[ disk0 .. disk3 ]", "Noredun", &[])
        + "disksim_logorg org1 { devices = [ disk4 ] }\n";
    let e = err(&two);
    assert!(
        e.msg
            .contains("found 2 logical organisations (org0 in a/array.parv, org1 in a/array.parv)"),
        "{e}"
    );
}
