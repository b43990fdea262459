//! spindle's real-time side: for now the NBD server ([`nbd`]) through which real clients
//! (the Linux kernel, qemu, libnbd tools, fio) reach an emulated array.
//!
//! It does not depend on the `spindle` core: a driver implements [`nbd::Backend`] on top of
//! the array.

pub mod nbd;
