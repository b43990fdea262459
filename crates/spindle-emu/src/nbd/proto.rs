//! NBD wire constants and fixed-size message layouts (fixed newstyle, simple replies).
//!
//! Pure: no I/O. Every integer on the wire is big-endian. Names follow the protocol
//! document (`doc/proto.md` of the NetworkBlockDevice project) with the `NBD_` prefix
//! dropped.

/// `NBDMAGIC`, first 8 bytes the server sends.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: second server magic and the prefix of every option request.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Magic of every fixed-newstyle option reply.
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic of a transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

// Handshake flags (server, 16 bits).
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
pub const FLAG_NO_ZEROES: u16 = 1 << 1;

// Client flags (32 bits).
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

// Transmission flags (16 bits).
pub const FLAG_HAS_FLAGS: u16 = 1 << 0;
pub const FLAG_READ_ONLY: u16 = 1 << 1;
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
pub const FLAG_SEND_FUA: u16 = 1 << 3;
pub const FLAG_ROTATIONAL: u16 = 1 << 4;
pub const FLAG_SEND_TRIM: u16 = 1 << 5;
pub const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const FLAG_CAN_MULTI_CONN: u16 = 1 << 8;

// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_STARTTLS: u32 = 5;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;

// Option reply types.
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
const REP_ERR: u32 = 1 << 31;
pub const REP_ERR_UNSUP: u32 = REP_ERR + 1;
pub const REP_ERR_POLICY: u32 = REP_ERR + 2;
pub const REP_ERR_INVALID: u32 = REP_ERR + 3;
pub const REP_ERR_UNKNOWN: u32 = REP_ERR + 6;
pub const REP_ERR_SHUTDOWN: u32 = REP_ERR + 7;

// Information types (NBD_OPT_INFO / NBD_OPT_GO).
pub const INFO_EXPORT: u16 = 0;
pub const INFO_NAME: u16 = 1;
pub const INFO_DESCRIPTION: u16 = 2;
pub const INFO_BLOCK_SIZE: u16 = 3;

// Commands.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_CACHE: u16 = 5;
pub const CMD_WRITE_ZEROES: u16 = 6;
pub const CMD_BLOCK_STATUS: u16 = 7;

// Command flags.
pub const CMD_FLAG_FUA: u16 = 1 << 0;
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;

// Error values (Linux errno numbers, as the protocol fixes them).
pub const EPERM: u32 = 1;
pub const EIO: u32 = 5;
pub const ENOMEM: u32 = 12;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;
pub const EOVERFLOW: u32 = 75;
pub const ENOTSUP: u32 = 95;
pub const ESHUTDOWN: u32 = 108;

/// Advertised minimum block size, bytes.
pub const BLOCK_SIZE_MIN: u32 = 512;
/// Advertised preferred block size, bytes.
pub const BLOCK_SIZE_PREFERRED: u32 = 4096;
/// Advertised maximum block size and the largest READ/WRITE payload accepted, bytes.
pub const PAYLOAD_MAX: u32 = 32 * 1024 * 1024;
/// Largest option payload the server reads; a longer option closes the connection.
pub const OPTION_LEN_MAX: u32 = 4096;
/// Longest export name or description accepted by [`crate::nbd::Server::new`] (the
/// protocol's string limit).
pub const STRING_LEN_MAX: usize = 4096;

/// Length of a transmission request header, bytes.
pub const REQUEST_LEN: usize = 28;
/// Length of a simple reply header, bytes.
pub const SIMPLE_REPLY_LEN: usize = 16;

/// A decoded transmission request header (the payload of a WRITE follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub magic: u32,
    pub flags: u16,
    pub kind: u16,
    pub cookie: u64,
    pub offset: u64,
    pub length: u32,
}

impl Request {
    /// Decodes a header; the magic is returned as read, not checked.
    #[must_use]
    pub fn decode(b: &[u8; REQUEST_LEN]) -> Request {
        Request {
            magic: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            flags: u16::from_be_bytes([b[4], b[5]]),
            kind: u16::from_be_bytes([b[6], b[7]]),
            cookie: u64::from_be_bytes(b[8..16].try_into().expect("8 bytes")),
            offset: u64::from_be_bytes(b[16..24].try_into().expect("8 bytes")),
            length: u32::from_be_bytes(b[24..28].try_into().expect("4 bytes")),
        }
    }

    #[must_use]
    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut b = [0u8; REQUEST_LEN];
        b[0..4].copy_from_slice(&self.magic.to_be_bytes());
        b[4..6].copy_from_slice(&self.flags.to_be_bytes());
        b[6..8].copy_from_slice(&self.kind.to_be_bytes());
        b[8..16].copy_from_slice(&self.cookie.to_be_bytes());
        b[16..24].copy_from_slice(&self.offset.to_be_bytes());
        b[24..28].copy_from_slice(&self.length.to_be_bytes());
        b
    }
}

/// Encodes a simple reply header (data of a successful READ follows it).
#[must_use]
pub fn encode_simple_reply(error: u32, cookie: u64) -> [u8; SIMPLE_REPLY_LEN] {
    let mut b = [0u8; SIMPLE_REPLY_LEN];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    b
}

/// Encodes an option reply header followed by `data`.
#[must_use]
pub fn encode_option_reply(option: u32, reply: u32, data: &[u8]) -> Vec<u8> {
    let len = u32::try_from(data.len()).expect("option reply data fits u32");
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&reply.to_be_bytes());
    b.extend_from_slice(&len.to_be_bytes());
    b.extend_from_slice(data);
    b
}

/// A name for a command type, for logs and errors.
#[must_use]
pub fn command_name(kind: u16) -> &'static str {
    match kind {
        CMD_READ => "read",
        CMD_WRITE => "write",
        CMD_DISC => "disc",
        CMD_FLUSH => "flush",
        CMD_TRIM => "trim",
        CMD_CACHE => "cache",
        CMD_WRITE_ZEROES => "write_zeroes",
        CMD_BLOCK_STATUS => "block_status",
        _ => "unknown",
    }
}

/// A name for an option, for logs and errors.
#[must_use]
pub fn option_name(option: u32) -> &'static str {
    match option {
        OPT_EXPORT_NAME => "export_name",
        OPT_ABORT => "abort",
        OPT_LIST => "list",
        OPT_STARTTLS => "starttls",
        OPT_INFO => "info",
        OPT_GO => "go",
        OPT_STRUCTURED_REPLY => "structured_reply",
        _ => "unknown",
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn request_round_trips() {
        let r = Request {
            magic: REQUEST_MAGIC,
            flags: CMD_FLAG_FUA,
            kind: CMD_WRITE,
            cookie: 0x0102_0304_0506_0708,
            offset: 0x1122_3344_5566_7788,
            length: 0x9abc_def0,
        };
        let b = r.encode();
        assert_eq!(&b[0..4], &[0x25, 0x60, 0x95, 0x13]);
        assert_eq!(Request::decode(&b), r);
    }

    #[test]
    fn reply_layouts() {
        let b = encode_simple_reply(EINVAL, 7);
        assert_eq!(&b[0..4], &[0x67, 0x44, 0x66, 0x98]);
        assert_eq!(u32::from_be_bytes(b[4..8].try_into().unwrap()), 22);
        assert_eq!(u64::from_be_bytes(b[8..16].try_into().unwrap()), 7);
        let o = encode_option_reply(OPT_LIST, REP_ACK, b"xy");
        assert_eq!(o.len(), 22);
        assert_eq!(&o[0..8], &[0, 0x03, 0xe8, 0x89, 0x04, 0x55, 0x65, 0xa9]);
        assert_eq!(&o[20..], b"xy");
        assert_eq!(REP_ERR_UNSUP, 0x8000_0001);
        assert_eq!(REP_ERR_UNKNOWN, 0x8000_0006);
    }
}
