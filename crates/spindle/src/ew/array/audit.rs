//! Test-only shadow of what each physical block holds, to check that reads return data at
//! least as new as the last write acknowledged before they arrived, and that the map
//! rebuilt after a crash points at the latest acknowledged data.

use super::BlockId;
use std::collections::BTreeMap;

#[derive(Default)]
pub(crate) struct Audit {
    /// (disk, physical block) → (logical block, version) last written there. Absent: the
    /// initial data (version 0).
    pub(crate) contents: BTreeMap<(usize, BlockId), (u32, u64)>,
    /// Reads in flight: per block, the acknowledged version at arrival.
    must_see: BTreeMap<u64, Vec<u64>>,
    pub(crate) reads_checked: u64,
    /// Spares installed: what they hold is only what was written since.
    blank: Vec<usize>,
}

impl Audit {
    pub(crate) fn wrote(&mut self, disk: usize, slot: BlockId, block: u32, version: u64) {
        self.contents.insert((disk, slot), (block, version));
    }

    /// Disk `disk` is replaced by an empty spare.
    pub(crate) fn install_spare(&mut self, disk: usize) {
        self.contents.retain(|&(d, _), _| d != disk);
        self.blank.push(disk);
    }

    /// A rebuild copied `block` from `from` on disk `src` to `to` on disk `dst`.
    pub(crate) fn copied(
        &mut self,
        src: usize,
        from: BlockId,
        dst: usize,
        to: BlockId,
        block: u32,
    ) {
        assert!(
            !self.blank.contains(&src),
            "the rebuild read disk {src}, a spare"
        );
        let v = self
            .contents
            .get(&(src, from))
            .copied()
            .unwrap_or((block, 0));
        assert_eq!(
            v.0, block,
            "disk {src} block {from} holds another block's data"
        );
        self.contents.insert((dst, to), v);
    }

    pub(crate) fn read_issued(&mut self, seq: u64, acked: Vec<u64>) {
        self.must_see.insert(seq, acked);
    }

    /// A read of `blocks` physical blocks from `slot` on `disk` for logical `block..`.
    pub(crate) fn check_read(&mut self, disk: usize, slot: BlockId, block: u32, seq: u64) {
        let must = self.must_see.remove(&seq).expect("a read was issued");
        for (i, &v) in must.iter().enumerate() {
            let at = (disk, slot + i as u32);
            match self.contents.get(&at) {
                Some(&(b, got)) => {
                    assert_eq!(
                        b,
                        block + i as u32,
                        "disk {disk} block {} holds another block's data",
                        at.1
                    );
                    assert!(
                        got >= v,
                        "read of block {b} saw version {got}, older than acknowledged {v}"
                    );
                }
                None if self.blank.contains(&disk) => panic!(
                    "read of block {} from disk {disk} block {}: a spare's block nothing wrote",
                    block + i as u32,
                    at.1
                ),
                None => assert_eq!(
                    v,
                    0,
                    "read of block {} saw the initial data after write {v} was acknowledged",
                    block + i as u32
                ),
            }
        }
        self.reads_checked += 1;
    }
}
