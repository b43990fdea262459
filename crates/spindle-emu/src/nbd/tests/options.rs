//! Option haggling: LIST, ABORT, INFO, GO, EXPORT_NAME, unknown exports and options.

use super::*;

fn two_exports() -> (MemBackend, MemBackend, Exports) {
    let a = MemBackend::new(1 << 20);
    let b = MemBackend::new(3 << 20);
    let ex: Exports = vec![
        ("alpha".into(), "first disk".into(), Arc::new(a.clone())),
        ("beta".into(), String::new(), Arc::new(b.clone())),
    ];
    (a, b, ex)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_names_exports_and_abort_acks() {
    let (_, _, ex) = two_exports();
    let srv = Running::tcp(ex).await;
    let mut s = srv.connect().await;
    greet(&mut s, FLAG_C_FIXED_NEWSTYLE).await;
    send_opt(&mut s, OPT_LIST, &[]).await;
    let mut names = Vec::new();
    loop {
        let (opt, rep, d) = read_opt_reply(&mut s).await;
        assert_eq!(opt, OPT_LIST);
        if rep == REP_ACK {
            break;
        }
        assert_eq!(rep, REP_SERVER);
        let n = u32::from_be_bytes(d[0..4].try_into().unwrap()) as usize;
        names.push((
            String::from_utf8(d[4..4 + n].to_vec()).unwrap(),
            String::from_utf8(d[4 + n..].to_vec()).unwrap(),
        ));
    }
    assert_eq!(
        names,
        vec![
            ("alpha".into(), "first disk".into()),
            ("beta".into(), String::new())
        ]
    );
    // LIST with data is invalid, and the session goes on.
    send_opt(&mut s, OPT_LIST, b"x").await;
    assert_eq!(read_opt_reply(&mut s).await.1, REP_ERR_INVALID);
    send_opt(&mut s, OPT_ABORT, &[]).await;
    let (opt, rep, d) = read_opt_reply(&mut s).await;
    assert_eq!((opt, rep, d.len()), (OPT_ABORT, REP_ACK, 0));
    expect_closed(&mut s).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_gives_size_and_block_sizes_then_go() {
    let (_, b, ex) = two_exports();
    let srv = Running::tcp(ex).await;
    let mut s = srv.connect().await;
    greet(&mut s, FLAG_C_FIXED_NEWSTYLE).await;
    let all = [INFO_BLOCK_SIZE, INFO_NAME, INFO_DESCRIPTION];
    let i = info_or_go(&mut s, OPT_INFO, "alpha", &all).await.unwrap();
    assert_eq!(i.size, 1 << 20);
    assert_eq!(i.block, Some((512, 4096, 32 << 20)));
    assert_eq!(i.name.as_deref(), Some("alpha"));
    assert_eq!(i.description.as_deref(), Some("first disk"));
    // The default export answers to the empty name; nothing asked, nothing extra sent.
    let i = info_or_go(&mut s, OPT_INFO, "", &[]).await.unwrap();
    assert_eq!((i.size, i.block, i.name), (1 << 20, None, None));
    // Malformed INFO data is an error reply, not a close.
    send_opt(&mut s, OPT_INFO, &[0, 0, 0, 9, b'a']).await;
    assert_eq!(read_opt_reply(&mut s).await.1, REP_ERR_INVALID);
    assert_eq!(
        info_or_go(&mut s, OPT_INFO, "nope", &[]).await.unwrap_err(),
        REP_ERR_UNKNOWN
    );
    let i = info_or_go(&mut s, OPT_GO, "beta", &[INFO_BLOCK_SIZE])
        .await
        .unwrap();
    assert_eq!(i.size, 3 << 20);
    assert_eq!(i.block, Some((512, 4096, 32 << 20)));
    write_at(&mut s, (3 << 20) - 4096, &[9; 4096], 0).await;
    assert_eq!(b.contents()[(3 << 20) - 4096..], [9; 4096]);
    disconnect(s).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_export_and_unsupported_options() {
    let (a, _, ex) = two_exports();
    let srv = Running::tcp(ex).await;
    let mut s = srv.connect().await;
    greet(&mut s, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).await;
    assert_eq!(
        info_or_go(&mut s, OPT_GO, "gamma", &[]).await.unwrap_err(),
        REP_ERR_UNKNOWN
    );
    for opt in [OPT_STRUCTURED_REPLY, OPT_STARTTLS, 42, 0xdead_beef] {
        send_opt(&mut s, opt, &[]).await;
        let (o, rep, _) = read_opt_reply(&mut s).await;
        assert_eq!((o, rep), (opt, REP_ERR_UNSUP), "option {opt}");
    }
    // Still negotiating: GO on the default export works.
    assert_eq!(
        info_or_go(&mut s, OPT_GO, "", &[]).await.unwrap().size,
        1 << 20
    );
    write_at(&mut s, 0, &[5; 512], 0).await;
    assert_eq!(a.contents()[..512], [5; 512]);
    disconnect(s).await;
    // NBD_OPT_EXPORT_NAME for an unknown export can only close.
    let mut s = srv.connect().await;
    greet(&mut s, FLAG_C_FIXED_NEWSTYLE).await;
    send_opt(&mut s, OPT_EXPORT_NAME, b"gamma").await;
    expect_closed(&mut s).await;
    wait_until("violation counted", || {
        srv.server.stats().protocol_errors == 1
    })
    .await;
    assert!(srv
        .server
        .last_violation()
        .unwrap()
        .contains("unknown export \"gamma\""));
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_name_with_and_without_zeroes() {
    let (_, b, ex) = two_exports();
    let srv = Running::tcp(ex).await;
    for (client_flags, tail) in [
        (FLAG_C_FIXED_NEWSTYLE, 124usize),
        (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES, 0),
    ] {
        let mut s = srv.connect().await;
        greet(&mut s, client_flags).await;
        send_opt(&mut s, OPT_EXPORT_NAME, b"beta").await;
        assert_eq!(s.read_u64().await.unwrap(), 3 << 20);
        let flags = read_u16(&mut s).await;
        assert_ne!(flags & FLAG_HAS_FLAGS, 0);
        let mut zeroes = vec![1u8; tail];
        s.read_exact(&mut zeroes).await.unwrap();
        assert!(zeroes.iter().all(|&z| z == 0));
        // The next bytes must be the reply to our first request, not more zeroes.
        write_at(&mut s, 512, &[3; 512], 0).await;
        assert_eq!(read_at(&mut s, 512, 512).await, vec![3; 512]);
        disconnect(s).await;
    }
    assert_eq!(b.contents()[512..1024], [3; 512]);
    srv.stop().await;
}

#[test]
fn server_new_rejects_bad_export_lists() {
    let m = || -> Arc<dyn Backend> { Arc::new(MemBackend::new(512)) };
    assert_eq!(Server::new(vec![]).err(), Some(ConfigError::NoExports));
    let dup = Server::new(vec![
        ("a".into(), String::new(), m()),
        ("a".into(), String::new(), m()),
    ]);
    assert_eq!(
        dup.err().unwrap().to_string(),
        "nbd exports[1]: name \"a\" is used by exports[0] too"
    );
    let long = Server::new(vec![("x".repeat(4097), String::new(), m())]);
    assert_eq!(
        long.err().unwrap().to_string(),
        "nbd exports[0]: name is 4097 bytes, more than 4096"
    );
    let nul = Server::new(vec![("a".into(), "b\0".into(), m())]);
    assert_eq!(
        nul.err().unwrap().to_string(),
        "nbd exports[0]: description contains a NUL byte"
    );
    assert!(Server::new(vec![(String::new(), String::new(), m())]).is_ok());
}
