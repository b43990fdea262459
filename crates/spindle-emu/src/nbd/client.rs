//! A small blocking NBD client: fixed-newstyle handshake, `NBD_OPT_GO` with an export name,
//! simple replies, one request at a time (READ, WRITE, FLUSH, DISC).
//!
//! It exists to time requests one by one (calibration, Q = 1), so it keeps no request in
//! flight behind another and sets `TCP_NODELAY`. URIs follow the NBD URI standard's two
//! common forms: `nbd://host[:port][/export]` and `nbd+unix:///export?socket=PATH`.
//!
//! Not implemented: TLS, structured replies, block status, `NBD_OPT_EXPORT_NAME` fallback
//! for servers without `NBD_OPT_GO`, oldstyle servers.

use super::proto::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

/// Where an NBD export is, parsed from a URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NbdAddr {
    Tcp { host: String, port: u16 },
    Unix { socket: PathBuf },
}

/// A parsed `nbd://` or `nbd+unix://` URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NbdUri {
    pub addr: NbdAddr,
    pub export: String,
}

/// The default NBD port.
pub const NBD_PORT: u16 = 10809;

impl NbdUri {
    /// Parses `nbd://host[:port][/export]` or `nbd+unix:///export?socket=PATH`.
    pub fn parse(s: &str) -> Result<NbdUri, String> {
        let u = url::Url::parse(s).map_err(|e| format!("{s}: not a URI: {e}"))?;
        let export = percent_decode(u.path().strip_prefix('/').unwrap_or(u.path()));
        match u.scheme() {
            "nbd" => {
                let host = u
                    .host_str()
                    .filter(|h| !h.is_empty())
                    .ok_or_else(|| format!("{s}: an nbd:// URI needs a host"))?;
                let host = host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string();
                let port = u.port().unwrap_or(NBD_PORT);
                Ok(NbdUri {
                    addr: NbdAddr::Tcp { host, port },
                    export,
                })
            }
            "nbd+unix" => {
                let socket = u
                    .query_pairs()
                    .find(|(k, _)| k == "socket")
                    .map(|(_, v)| PathBuf::from(v.into_owned()))
                    .ok_or_else(|| format!("{s}: an nbd+unix:// URI needs ?socket=PATH"))?;
                Ok(NbdUri {
                    addr: NbdAddr::Unix { socket },
                    export,
                })
            }
            other => Err(format!(
                "{s}: scheme {other:?} is not nbd or nbd+unix (TLS schemes are not supported)"
            )),
        }
    }
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// An error of the client: the connection failed, the server refused, or it broke the
/// protocol. A command the server answers with an error is [`NbdError::Command`].
#[derive(Debug, thiserror::Error)]
pub enum NbdError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("server broke the protocol: {0}")]
    Protocol(String),
    #[error("server refused the export: {0}")]
    Refused(String),
    #[error("{what} at byte {offset} ({len} bytes) failed: errno {errno}")]
    Command {
        what: &'static str,
        offset: u64,
        len: u32,
        errno: u32,
    },
}

/// One connection to one export.
pub struct NbdClient {
    stream: Box<dyn Stream>,
    size: u64,
    flags: u16,
    block_min: u32,
    cookie: u64,
}

impl NbdClient {
    /// Connects and negotiates the export `uri` names.
    pub fn connect(uri: &NbdUri) -> Result<NbdClient, NbdError> {
        let stream: Box<dyn Stream> = match &uri.addr {
            NbdAddr::Tcp { host, port } => {
                let s = TcpStream::connect((host.as_str(), *port))?;
                // Q = 1 timing: a request must leave at once, not wait for Nagle.
                s.set_nodelay(true)?;
                Box::new(s)
            }
            NbdAddr::Unix { socket } => Box::new(UnixStream::connect(socket)?),
        };
        let mut c = NbdClient {
            stream,
            size: 0,
            flags: 0,
            block_min: 1,
            cookie: 0,
        };
        c.handshake(&uri.export)?;
        Ok(c)
    }

    /// Export size, bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The server's minimum block size (1 when it sent none).
    pub fn block_min(&self) -> u32 {
        self.block_min
    }

    pub fn read_only(&self) -> bool {
        self.flags & FLAG_READ_ONLY != 0
    }

    pub fn rotational(&self) -> bool {
        self.flags & FLAG_ROTATIONAL != 0
    }

    fn read_u16(&mut self) -> Result<u16, NbdError> {
        let mut b = [0u8; 2];
        self.stream.read_exact(&mut b)?;
        Ok(u16::from_be_bytes(b))
    }

    fn read_u32(&mut self) -> Result<u32, NbdError> {
        let mut b = [0u8; 4];
        self.stream.read_exact(&mut b)?;
        Ok(u32::from_be_bytes(b))
    }

    fn read_u64(&mut self) -> Result<u64, NbdError> {
        let mut b = [0u8; 8];
        self.stream.read_exact(&mut b)?;
        Ok(u64::from_be_bytes(b))
    }

    fn handshake(&mut self, export: &str) -> Result<(), NbdError> {
        if self.read_u64()? != NBDMAGIC || self.read_u64()? != IHAVEOPT {
            return Err(NbdError::Protocol(
                "not an NBD newstyle server (bad magic)".into(),
            ));
        }
        let hflags = self.read_u16()?;
        if hflags & FLAG_FIXED_NEWSTYLE == 0 {
            return Err(NbdError::Protocol("server is not fixed newstyle".into()));
        }
        let mut cflags = FLAG_C_FIXED_NEWSTYLE;
        if hflags & FLAG_NO_ZEROES != 0 {
            cflags |= FLAG_C_NO_ZEROES;
        }
        self.stream.write_all(&cflags.to_be_bytes())?;
        // NBD_OPT_GO: name length, name, then the information requests (block size).
        let name = export.as_bytes();
        if name.len() > STRING_LEN_MAX {
            return Err(NbdError::Refused(format!(
                "export name of {} bytes is too long",
                name.len()
            )));
        }
        let mut data = Vec::with_capacity(name.len() + 8);
        data.extend_from_slice(&(name.len() as u32).to_be_bytes());
        data.extend_from_slice(name);
        data.extend_from_slice(&1u16.to_be_bytes());
        data.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        let mut opt = Vec::with_capacity(16 + data.len());
        opt.extend_from_slice(&IHAVEOPT.to_be_bytes());
        opt.extend_from_slice(&OPT_GO.to_be_bytes());
        opt.extend_from_slice(&(data.len() as u32).to_be_bytes());
        opt.extend_from_slice(&data);
        self.stream.write_all(&opt)?;
        let mut got_export = false;
        loop {
            if self.read_u64()? != OPT_REPLY_MAGIC {
                return Err(NbdError::Protocol("bad option reply magic".into()));
            }
            let option = self.read_u32()?;
            let reply = self.read_u32()?;
            let len = self.read_u32()?;
            if option != OPT_GO {
                return Err(NbdError::Protocol(format!(
                    "reply to option {option}, expected GO"
                )));
            }
            if len > OPTION_LEN_MAX * 16 {
                return Err(NbdError::Protocol(format!("option reply of {len} bytes")));
            }
            let mut body = vec![0u8; len as usize];
            self.stream.read_exact(&mut body)?;
            match reply {
                REP_ACK => break,
                REP_INFO => self.info(&body, &mut got_export)?,
                r if r & (1 << 31) != 0 => {
                    let msg = String::from_utf8_lossy(&body).into_owned();
                    let why = match r {
                        REP_ERR_UNKNOWN => format!("no export named {export:?}"),
                        REP_ERR_UNSUP => "the server does not support NBD_OPT_GO".into(),
                        REP_ERR_POLICY => "refused by the server's policy".into(),
                        _ => format!("error reply {r:#x}"),
                    };
                    return Err(NbdError::Refused(match msg.is_empty() {
                        true => why,
                        false => format!("{why}: {msg}"),
                    }));
                }
                _ => {} // unknown informational replies are skipped, as the protocol says
            }
        }
        if !got_export {
            return Err(NbdError::Protocol(
                "GO acknowledged without NBD_INFO_EXPORT".into(),
            ));
        }
        Ok(())
    }

    fn info(&mut self, body: &[u8], got_export: &mut bool) -> Result<(), NbdError> {
        let short = || NbdError::Protocol("short NBD_REP_INFO".into());
        let kind = u16::from_be_bytes(body.get(0..2).ok_or_else(short)?.try_into().expect("2"));
        match kind {
            INFO_EXPORT => {
                let b = body.get(2..12).ok_or_else(short)?;
                self.size = u64::from_be_bytes(b[0..8].try_into().expect("8"));
                self.flags = u16::from_be_bytes(b[8..10].try_into().expect("2"));
                *got_export = true;
            }
            INFO_BLOCK_SIZE => {
                let b = body.get(2..6).ok_or_else(short)?;
                self.block_min = u32::from_be_bytes(b.try_into().expect("4")).max(1);
            }
            _ => {}
        }
        Ok(())
    }

    fn command(
        &mut self,
        kind: u16,
        offset: u64,
        len: u32,
        payload: Option<&[u8]>,
    ) -> Result<(), NbdError> {
        self.cookie += 1;
        let req = Request {
            magic: REQUEST_MAGIC,
            flags: 0,
            kind,
            cookie: self.cookie,
            offset,
            length: len,
        };
        match payload {
            // One write for header and payload: one segment on the wire when it fits.
            Some(p) => {
                let mut b = Vec::with_capacity(REQUEST_LEN + p.len());
                b.extend_from_slice(&req.encode());
                b.extend_from_slice(p);
                self.stream.write_all(&b)?;
            }
            None => self.stream.write_all(&req.encode())?,
        }
        Ok(())
    }

    fn reply(&mut self, what: &'static str, offset: u64, len: u32) -> Result<(), NbdError> {
        let mut h = [0u8; SIMPLE_REPLY_LEN];
        self.stream.read_exact(&mut h)?;
        let magic = u32::from_be_bytes(h[0..4].try_into().expect("4"));
        let errno = u32::from_be_bytes(h[4..8].try_into().expect("4"));
        let cookie = u64::from_be_bytes(h[8..16].try_into().expect("8"));
        if magic != SIMPLE_REPLY_MAGIC {
            return Err(NbdError::Protocol(format!("reply magic {magic:#x}")));
        }
        if cookie != self.cookie {
            return Err(NbdError::Protocol(format!(
                "reply to cookie {cookie}, expected {}",
                self.cookie
            )));
        }
        if errno != 0 {
            return Err(NbdError::Command {
                what,
                offset,
                len,
                errno,
            });
        }
        Ok(())
    }

    fn check_range(&self, offset: u64, len: usize) -> Result<u32, NbdError> {
        let len32 = u32::try_from(len)
            .ok()
            .filter(|&l| l > 0 && l <= PAYLOAD_MAX)
            .ok_or_else(|| NbdError::Protocol(format!("request of {len} bytes")))?;
        if offset
            .checked_add(len as u64)
            .map_or(true, |e| e > self.size)
        {
            return Err(NbdError::Protocol(format!(
                "request at {offset} of {len} bytes beyond the export's {} bytes",
                self.size
            )));
        }
        Ok(len32)
    }

    /// Reads `buf.len()` bytes at `offset`.
    pub fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), NbdError> {
        self.read_timed(offset, buf).map(|_| ())
    }

    /// [`NbdClient::read`], returning when the reply's header arrived: the server's answer
    /// instant, before the payload's copy (whose time grows with its length).
    pub fn read_timed(
        &mut self,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<std::time::Instant, NbdError> {
        let len = self.check_range(offset, buf.len())?;
        self.command(CMD_READ, offset, len, None)?;
        self.reply("read", offset, len)?;
        let at = std::time::Instant::now();
        self.stream.read_exact(buf)?;
        Ok(at)
    }

    /// Writes `buf` at `offset`.
    pub fn write(&mut self, offset: u64, buf: &[u8]) -> Result<(), NbdError> {
        let len = self.check_range(offset, buf.len())?;
        self.command(CMD_WRITE, offset, len, Some(buf))?;
        self.reply("write", offset, len)
    }

    /// [`NbdClient::write`], returning when the reply arrived (a write's reply has no
    /// payload: the server's answer instant).
    pub fn write_timed(&mut self, offset: u64, buf: &[u8]) -> Result<std::time::Instant, NbdError> {
        self.write(offset, buf)?;
        Ok(std::time::Instant::now())
    }

    pub fn flush(&mut self) -> Result<(), NbdError> {
        self.command(CMD_FLUSH, 0, 0, None)?;
        self.reply("flush", 0, 0)
    }

    /// Ends the session (`NBD_CMD_DISC`: the server sends no reply).
    pub fn disconnect(mut self) -> Result<(), NbdError> {
        self.command(CMD_DISC, 0, 0, None)?;
        self.stream.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn uris_parse() {
        let u = NbdUri::parse("nbd://127.0.0.1:10810/spindle").unwrap();
        assert_eq!(
            u.addr,
            NbdAddr::Tcp {
                host: "127.0.0.1".into(),
                port: 10810
            }
        );
        assert_eq!(u.export, "spindle");
        let u = NbdUri::parse("nbd://localhost").unwrap();
        assert_eq!(u.export, "");
        assert_eq!(
            u.addr,
            NbdAddr::Tcp {
                host: "localhost".into(),
                port: NBD_PORT
            }
        );
        let u = NbdUri::parse("nbd+unix:///a%20b?socket=/tmp/s.sock").unwrap();
        assert_eq!(u.export, "a b");
        assert_eq!(
            u.addr,
            NbdAddr::Unix {
                socket: "/tmp/s.sock".into()
            }
        );
        assert!(NbdUri::parse("nbd+unix:///x")
            .unwrap_err()
            .contains("socket"));
        assert!(NbdUri::parse("nbds://h/x").unwrap_err().contains("scheme"));
        assert!(NbdUri::parse("/dev/sda").is_err());
    }
}
