//! The paged disk's [`Engine`] side: the driver's calls, and recovery from the NVRAM image
//! and the map log regions.

use super::*;

impl PagedArray {
    /// Rebuilds every disk's page map from the NVRAM image and the log regions.
    fn recover_from(
        &mut self,
        nvram: &[u8],
        read: &mut DiskReader<'_>,
    ) -> Result<Vec<DataMove>, RecoverError> {
        let e = |m: String| RecoverError(m);
        let nv = MapLog::nvram_bytes(self.cfg.log_nvram_records) as usize;
        let sb = self.drive.geometry().sector_bytes() as usize;
        for d in 0..self.disks.len() {
            let img = nvram
                .get(d * nv..((d + 1) * nv).min(nvram.len()))
                .unwrap_or(&[]);
            let Some(img) = log::parse_image(img, self.cfg.log_nvram_records)
                .map_err(|m| e(format!("disk {d}: {m}")))?
            else {
                continue;
            };
            let region = self.disks[d].log.region;
            let mut map = PageMap::new(self.cut.clone());
            if img.ckpt != 0 {
                let sectors = u32::try_from(region.ckpt_sectors)
                    .map_err(|_| e("checkpoint too large".into()))?;
                let mut buf = vec![0u8; sectors as usize * sb];
                read(
                    d,
                    &[Run {
                        lba: region.ckpt_lba(img.ckpt),
                        sectors,
                    }],
                    &mut buf,
                )
                .map_err(|m| e(format!("disk {d}: reading checkpoint: {m}")))?;
                // A checkpoint holds every state: applied over an empty map.
                map = PageMap::from_states(self.cut.clone(), &buf)
                    .map_err(|m| e(format!("disk {d}: checkpoint: {m}")))?;
            }
            if img.durable_sectors > region.log_sectors {
                return Err(e(format!(
                    "disk {d}: {} durable log sectors beyond the region",
                    img.durable_sectors
                )));
            }
            if img.durable_sectors > 0 {
                let sectors =
                    u32::try_from(img.durable_sectors).map_err(|_| e("log too large".into()))?;
                let mut buf = vec![0u8; sectors as usize * sb];
                read(
                    d,
                    &[Run {
                        lba: region.log_lba(),
                        sectors,
                    }],
                    &mut buf,
                )
                .map_err(|m| e(format!("disk {d}: reading the map log: {m}")))?;
                for (p, s) in log::parse_log(&buf) {
                    map.apply_record(p, s)
                        .map_err(|m| e(format!("disk {d}: log: {m}")))?;
                }
            }
            for &(p, s) in &img.records {
                map.apply_record(p, s)
                    .map_err(|m| e(format!("disk {d}: nvram: {m}")))?;
            }
            self.disks[d].map = map;
            self.disks[d].log.restore(&img);
        }
        for disk in &mut self.disks {
            disk.log.emit_image();
        }
        Ok(Vec::new())
    }
}

impl Engine for PagedArray {
    fn handle(&mut self, now: Nanos, ev: Event) {
        self.out.advance(now);
        match ev {
            Event::Host(req) => self.accept(now, req),
            Event::DiskDone { disk } => self.finish(now, disk),
            Event::Wake => {
                for d in 0..self.disks.len() {
                    if self.disks[d].busy.is_none() {
                        self.out.mark_for_dispatch(d);
                    }
                }
            }
        }
    }

    fn poll_action(&mut self) -> Option<Action> {
        if let Some(due) = self.out.due() {
            let now = self.out.now();
            for &d in &due {
                if self.disks[d].busy.is_none() {
                    self.start_next(now, d);
                }
            }
            self.out.dispatched(due);
        }
        self.out.pop()
    }

    fn outstanding(&self) -> usize {
        self.host.outstanding()
    }

    fn capacity_sectors(&self) -> u64 {
        self.capacity()
    }

    fn disk_count(&self) -> usize {
        self.disks.len()
    }

    fn sector_bytes(&self) -> u32 {
        self.drive.geometry().sector_bytes()
    }

    fn io_align_bytes(&self) -> u32 {
        u32::try_from(self.cfg.page_bytes).unwrap_or(u32::MAX)
    }

    fn busy(&self, disk: usize, t: Nanos) -> Busy {
        self.disks[disk].clock.busy(t)
    }

    fn power(&self, disk: usize, t: Nanos) -> Option<crate::drive::PowerTotals> {
        self.disks[disk].clock.power(t)
    }

    fn power_command(&mut self, now: Nanos, disk: usize, cmd: crate::drive::PowerCommand) {
        self.disks[disk].clock.command(now, cmd);
    }

    /// Deferred replica writes and map-log flushes pending, and the NVRAM records.
    fn backlog(&self) -> Backlog {
        let mut b = Backlog::default();
        let pb = self.cfg.page_bytes;
        for disk in &self.disks {
            b.nvram_entries += disk.log.pending();
            b.ops += disk.deferred.len() as u64;
            b.bytes += disk.deferred.len() as u64 * pb * u64::from(self.cfg.replicas - 1);
            if self.cfg.cleaner != CleanerPolicy::None {
                // The cleaner's pending work: every dirty page, a clean each.
                let n = disk.clean.pending() + disk.clean.in_progress();
                b.ops += n;
                b.bytes += n * pb;
            }
            if let Some(f) = &disk.busy {
                match &f.place {
                    Place::Clean(_) => {
                        b.ops += 1;
                        b.bytes += pb;
                    }
                    Place::Replicas(t) => {
                        b.ops += 1;
                        b.bytes += t.len() as u64 * pb;
                    }
                    Place::Flush(Flush::Log { bytes, .. } | Flush::Checkpoint { bytes, .. }) => {
                        b.ops += 1;
                        b.bytes += bytes.len() as u64;
                    }
                    _ => {}
                }
            }
        }
        b
    }

    fn paged(&self) -> Option<crate::engine::PagedStatus> {
        let mut s = crate::engine::PagedStatus::default();
        for d in &self.disks {
            s.tenants += d.map.tenants();
            s.thin += d.clean.thin_count(&d.map, self.cfg.replicas);
            s.cleaned += d.clean.cleaned;
        }
        s.unaligned = self.unaligned;
        s.page_bytes = self.cfg.page_bytes;
        Some(s)
    }

    fn counters(&self, disk: usize) -> DiskCounters {
        let d = &self.disks[disk];
        DiskCounters {
            ops: d.clock.ops(),
            propagations: d.counters.replica_ops,
            map_logging: d.clock.finished(Cause::MapLogging),
            sched: Default::default(),
        }
    }

    /// Reading disk 0's valid checkpoint and durable log sequentially (NVRAM replay is
    /// memory work, not timed).
    fn recovery_time(&self) -> Option<Span> {
        let log = &self.disks[0].log;
        let sectors = log.recovery_sectors();
        if sectors == 0 {
            return Some(Span::ZERO);
        }
        let head = HeadState {
            cylinder: 0,
            head: 0,
            phase_ns: self.disks[0].head.phase_ns,
        };
        let a = self.drive.access(
            Nanos::ZERO,
            &head,
            Transfer {
                op: Op::Read,
                lba: log.region.first_lba,
                sectors: u32::try_from(sectors.min(log.region.sectors())).unwrap_or(u32::MAX),
            },
            None,
            None::<&mut Pcg64Mcg>,
        );
        Some(a.service())
    }

    fn enable_data_moves(&mut self) -> bool {
        self.data = Some(DataState {
            moves: VecDeque::new(),
        });
        for d in &mut self.disks {
            d.log.emit = true;
        }
        true
    }

    fn poll_data(&mut self) -> Option<DataMove> {
        self.data.as_mut()?.moves.pop_front()
    }

    fn poll_nvram(&mut self) -> Option<NvramWrite> {
        for d in &mut self.disks {
            if let Some(w) = d.log.out.pop_front() {
                return Some(w);
            }
        }
        None
    }

    fn recover(
        &mut self,
        nvram: &[u8],
        read: &mut DiskReader<'_>,
    ) -> Result<Vec<DataMove>, RecoverError> {
        self.recover_from(nvram, read)
    }
}
