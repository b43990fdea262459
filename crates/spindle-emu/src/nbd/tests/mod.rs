//! Server tests through a small fixed-newstyle client over TCP, Unix sockets and in-memory
//! pipes. No timing assertions: reordering is forced with gates, waits have only hang guards.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::oneshot;

use super::proto::*;
use super::*;

mod io;
mod limits;
mod options;
mod violations;

type Exports = Vec<(String, String, Arc<dyn Backend>)>;
type Gates = Vec<(u64, oneshot::Sender<()>)>;

/// Hang guard for a whole test step; never a performance bound.
const GUARD: Duration = Duration::from_secs(60);

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

async fn guard<F: std::future::Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(GUARD, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: still waiting after {GUARD:?}"),
    }
}

/// Polls `cond` until true (hang-guarded).
async fn wait_until(what: &str, cond: impl Fn() -> bool) {
    guard(what, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// Servers under test

struct Running {
    server: Arc<Server>,
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    async fn tcp(exports: Exports) -> Running {
        Running::tcp_with(exports, Limits::default()).await
    }

    async fn tcp_with(exports: Exports, limits: Limits) -> Running {
        let server = Arc::new(Server::with_limits(exports, limits).expect("valid exports"));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.clone().serve_tcp(listener, stopped));
        Running {
            server,
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.expect("connect")
    }

    async fn stop(mut self) {
        let _ = self.stop.take().expect("running").send(());
        guard("serve_tcp returns", self.task.take().expect("running"))
            .await
            .expect("serve task");
    }
}

fn one(name: &str, b: impl Backend) -> Exports {
    vec![(name.to_string(), format!("{name} export"), Arc::new(b))]
}

// ---------------------------------------------------------------------------------------
// A small client

async fn read_u16<S: Stream>(s: &mut S) -> u16 {
    s.read_u16().await.expect("read u16")
}

/// Reads the server greeting and sends client flags.
async fn greet<S: Stream>(s: &mut S, client_flags: u32) {
    assert_eq!(s.read_u64().await.expect("NBDMAGIC"), NBDMAGIC);
    assert_eq!(s.read_u64().await.expect("IHAVEOPT"), IHAVEOPT);
    assert_eq!(read_u16(s).await, FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
    s.write_u32(client_flags).await.expect("client flags");
}

async fn send_opt<S: Stream>(s: &mut S, opt: u32, data: &[u8]) {
    let mut b = Vec::new();
    b.extend_from_slice(&IHAVEOPT.to_be_bytes());
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&u32::try_from(data.len()).unwrap().to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b).await.expect("send option");
}

/// One option reply: (option, reply type, data).
async fn read_opt_reply<S: Stream>(s: &mut S) -> (u32, u32, Vec<u8>) {
    assert_eq!(s.read_u64().await.expect("reply magic"), OPT_REPLY_MAGIC);
    let opt = s.read_u32().await.expect("reply option");
    let rep = s.read_u32().await.expect("reply type");
    let len = s.read_u32().await.expect("reply length");
    assert!(len <= 65536, "option reply length {len}");
    let mut data = vec![0; len as usize];
    s.read_exact(&mut data).await.expect("reply data");
    (opt, rep, data)
}

fn info_data(name: &str, infos: &[u16]) -> Vec<u8> {
    let mut d = Vec::new();
    d.extend_from_slice(&u32::try_from(name.len()).unwrap().to_be_bytes());
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&u16::try_from(infos.len()).unwrap().to_be_bytes());
    for i in infos {
        d.extend_from_slice(&i.to_be_bytes());
    }
    d
}

/// What NBD_OPT_INFO/GO answered: (size, transmission flags, block sizes, other infos), or
/// the error reply type.
#[derive(Debug, Default)]
struct Info {
    size: u64,
    flags: u16,
    block: Option<(u32, u32, u32)>,
    name: Option<String>,
    description: Option<String>,
}

async fn info_or_go<S: Stream>(
    s: &mut S,
    opt: u32,
    name: &str,
    infos: &[u16],
) -> Result<Info, u32> {
    send_opt(s, opt, &info_data(name, infos)).await;
    let mut info = Info::default();
    let mut saw_export = false;
    loop {
        let (o, rep, d) = read_opt_reply(s).await;
        assert_eq!(o, opt);
        match rep {
            REP_ACK => break,
            REP_INFO => {
                let t = u16::from_be_bytes([d[0], d[1]]);
                match t {
                    INFO_EXPORT => {
                        assert_eq!(d.len(), 12);
                        info.size = u64::from_be_bytes(d[2..10].try_into().unwrap());
                        info.flags = u16::from_be_bytes([d[10], d[11]]);
                        saw_export = true;
                    }
                    INFO_BLOCK_SIZE => {
                        assert_eq!(d.len(), 14);
                        let g = |i: usize| u32::from_be_bytes(d[i..i + 4].try_into().unwrap());
                        info.block = Some((g(2), g(6), g(10)));
                    }
                    INFO_NAME => info.name = Some(String::from_utf8(d[2..].to_vec()).unwrap()),
                    INFO_DESCRIPTION => {
                        info.description = Some(String::from_utf8(d[2..].to_vec()).unwrap())
                    }
                    _ => panic!("unexpected info type {t}"),
                }
            }
            e => return Err(e),
        }
    }
    assert!(saw_export, "no NBD_INFO_EXPORT before ACK");
    Ok(info)
}

/// Handshake with NBD_OPT_GO; returns the export info.
async fn go<S: Stream>(s: &mut S, name: &str) -> Info {
    greet(s, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).await;
    info_or_go(s, OPT_GO, name, &[INFO_BLOCK_SIZE])
        .await
        .expect("NBD_OPT_GO succeeds")
}

async fn send_req<S: AsyncWrite + Unpin>(
    s: &mut S,
    kind: u16,
    flags: u16,
    cookie: u64,
    offset: u64,
    length: u32,
    payload: &[u8],
) {
    let r = Request {
        magic: REQUEST_MAGIC,
        flags,
        kind,
        cookie,
        offset,
        length,
    };
    let mut b = r.encode().to_vec();
    b.extend_from_slice(payload);
    s.write_all(&b).await.expect("send request");
}

/// Reads one simple reply; `reads` maps cookies of pending reads to their lengths.
async fn read_reply<S: AsyncRead + Unpin>(
    s: &mut S,
    reads: &HashMap<u64, u32>,
) -> (u64, u32, Vec<u8>) {
    let mut h = [0u8; SIMPLE_REPLY_LEN];
    s.read_exact(&mut h).await.expect("reply header");
    assert_eq!(
        u32::from_be_bytes(h[0..4].try_into().unwrap()),
        SIMPLE_REPLY_MAGIC
    );
    let error = u32::from_be_bytes(h[4..8].try_into().unwrap());
    let cookie = u64::from_be_bytes(h[8..16].try_into().unwrap());
    let mut data = Vec::new();
    if error == 0 {
        if let Some(&len) = reads.get(&cookie) {
            data = vec![0; len as usize];
            s.read_exact(&mut data).await.expect("read data");
        }
    }
    (cookie, error, data)
}

/// One request, one reply: (error, data).
async fn call<S: Stream>(
    s: &mut S,
    kind: u16,
    flags: u16,
    offset: u64,
    length: u32,
    payload: &[u8],
) -> (u32, Vec<u8>) {
    send_req(s, kind, flags, 77, offset, length, payload).await;
    let reads: HashMap<u64, u32> = if kind == CMD_READ {
        [(77, length)].into()
    } else {
        HashMap::new()
    };
    let (cookie, e, d) = read_reply(s, &reads).await;
    assert_eq!(cookie, 77);
    (e, d)
}

async fn read_at<S: Stream>(s: &mut S, offset: u64, len: u32) -> Vec<u8> {
    let (e, d) = call(s, CMD_READ, 0, offset, len, &[]).await;
    assert_eq!(e, 0, "read {offset}+{len}");
    d
}

async fn write_at<S: Stream>(s: &mut S, offset: u64, data: &[u8], flags: u16) {
    let len = u32::try_from(data.len()).unwrap();
    let (e, _) = call(s, CMD_WRITE, flags, offset, len, data).await;
    assert_eq!(e, 0, "write {offset}+{len}");
}

async fn disconnect<S: Stream>(mut s: S) {
    send_req(&mut s, CMD_DISC, 0, 0, 0, 0, &[]).await;
    expect_closed(&mut s).await;
}

/// The server closes: EOF (or a reset) with no further bytes.
async fn expect_closed<S: Stream>(s: &mut S) {
    let mut rest = Vec::new();
    let r = guard("server closes", s.read_to_end(&mut rest)).await;
    assert!(
        rest.is_empty(),
        "{} unexpected bytes before close ({r:?})",
        rest.len()
    );
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
