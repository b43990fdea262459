//! The emulated array as an NBD export: each NBD command becomes a host request to the
//! clock thread, answered when the core answers it.

use crate::driver::{EmuError, Handle, Reply, Request};
use crate::nbd::{Backend, BoxFuture, NbdError};
use tokio::sync::oneshot;

pub struct EmuExport {
    handle: Handle,
}

impl EmuExport {
    pub fn new(handle: Handle) -> EmuExport {
        EmuExport { handle }
    }
}

fn nbd_error(e: EmuError) -> NbdError {
    match e {
        EmuError::Invalid(_) => NbdError::Invalid,
        EmuError::Io(_) => NbdError::Io,
        EmuError::Shutdown => NbdError::Shutdown,
    }
}

async fn answer(rx: oneshot::Receiver<Reply>) -> Result<Vec<u8>, NbdError> {
    rx.await
        .unwrap_or(Err(EmuError::Shutdown))
        .map_err(nbd_error)
}

impl Backend for EmuExport {
    fn size_bytes(&self) -> u64 {
        self.handle.size_bytes
    }

    /// Every connection feeds the one array, and a FLUSH makes every write answered before
    /// it durable, whichever connection wrote it.
    fn multi_conn(&self) -> bool {
        true
    }

    /// The array's smallest request (the EW-Array's 4 KiB block, else the sector).
    fn block_size_min(&self) -> u32 {
        self.handle.align_bytes
    }

    /// An array of hard disks.
    fn rotational(&self) -> bool {
        true
    }

    fn read(&self, offset: u64, len: u32) -> BoxFuture<'static, Result<Vec<u8>, NbdError>> {
        Box::pin(answer(self.handle.submit(Request::Read { offset, len })))
    }

    fn write(
        &self,
        offset: u64,
        data: Vec<u8>,
        fua: bool,
    ) -> BoxFuture<'static, Result<(), NbdError>> {
        let rx = self.handle.submit(Request::Write { offset, data, fua });
        Box::pin(async move { answer(rx).await.map(drop) })
    }

    fn flush(&self) -> BoxFuture<'static, Result<(), NbdError>> {
        let rx = self.handle.submit(Request::Flush);
        Box::pin(async move { answer(rx).await.map(drop) })
    }

    fn trim(&self, offset: u64, len: u32, _fua: bool) -> BoxFuture<'static, Result<(), NbdError>> {
        let rx = self.handle.submit(Request::Trim { offset, len });
        Box::pin(async move { answer(rx).await.map(drop) })
    }

    fn write_zeroes(
        &self,
        offset: u64,
        len: u32,
        fua: bool,
    ) -> BoxFuture<'static, Result<(), NbdError>> {
        let rx = self
            .handle
            .submit(Request::WriteZeroes { offset, len, fua });
        Box::pin(async move { answer(rx).await.map(drop) })
    }
}
