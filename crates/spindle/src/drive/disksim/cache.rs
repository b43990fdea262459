//! The `disksim_disk` block's buffer, controller-overhead and interface parameters, mapped
//! onto spindle's `[cache]` section.

use super::*;

impl Importer<'_> {
    pub(super) fn cache(
        &mut self,
        r: &mut Reader<'_>,
        bus_sector_ms: f64,
    ) -> Result<CacheSpec, DiskSimError> {
        let b = r.block;
        let flag = |this: &mut Self,
                    r: &mut Reader<'_>,
                    key: &str,
                    name: &str|
         -> Result<bool, DiskSimError> {
            let v = r.flag(name)?;
            this.cite(&format!("cache.{key}"), b, name, u8::from(v), "");
            Ok(v)
        };
        let segments = r.u32("Number of buffer segments")?;
        let segment_sectors = r.u32("Segment size (in blks)")?;
        let write_segments = r.u32("Maximum number of write segments")?;
        let enable_caching = r.int_in("Enable caching in buffer", 0, 2)? as u32;
        let continuous_read = r.int_in("Buffer continuous read", 0, 4)? as u32;
        let min_ra = r.u32("Minimum read-ahead (blks)")?;
        let max_ra = r.u32("Maximum read-ahead (blks)")?;
        let over = r.int_in("Read-ahead over requested", -1, 1)?;
        if over == -1 {
            return Err(r.err(
                "Read-ahead over requested",
                "-1 is not supported: [cache] carries 0 or 1",
            ));
        }
        let fast = r.int_in("Fast write level", 0, 2)? as u32;
        let imm_r = r.int_in("Immediate buffer read", 0, 2)?;
        let imm_w = r.int_in("Immediate buffer write", 0, 2)?;
        for (name, v) in [
            ("Immediate buffer read", imm_r),
            ("Immediate buffer write", imm_w),
        ] {
            if v == 2 {
                return Err(r.err(name, "2 is not supported: [cache] carries 0 or 1"));
            }
        }
        for (key, name, v) in [
            ("segments", "Number of buffer segments", f64::from(segments)),
            (
                "segment_sectors",
                "Segment size (in blks)",
                f64::from(segment_sectors),
            ),
            (
                "write_segments",
                "Maximum number of write segments",
                f64::from(write_segments),
            ),
            (
                "enable_caching",
                "Enable caching in buffer",
                f64::from(enable_caching),
            ),
            (
                "continuous_read",
                "Buffer continuous read",
                f64::from(continuous_read),
            ),
            (
                "min_read_ahead_sectors",
                "Minimum read-ahead (blks)",
                f64::from(min_ra),
            ),
            (
                "max_read_ahead_sectors",
                "Maximum read-ahead (blks)",
                f64::from(max_ra),
            ),
            (
                "read_ahead_over_requested",
                "Read-ahead over requested",
                over as f64,
            ),
            ("fast_write_level", "Fast write level", f64::from(fast)),
            (
                "immediate_buffer_read",
                "Immediate buffer read",
                imm_r as f64,
            ),
            (
                "immediate_buffer_write",
                "Immediate buffer write",
                imm_w as f64,
            ),
        ] {
            self.cite(&format!("cache.{key}"), b, name, v, "");
        }
        // DiskSim 4.0 stores it (disk.modspec: `INIT result->dedicatedwriteseg`) and gives
        // every write the first segment (`disk_buffer_select_write_segment`), which reads
        // never take; it refuses the setting with a single segment
        // (`disk_postpass_perdisk`).
        let separate_write_segment = r.flag("Use separate write segment")?;
        if separate_write_segment && segments <= 1 {
            return Err(r.err(
                "Use separate write segment",
                "1 needs more than one buffer segment (DiskSim: 'Must have more segments than dedicated write segments')",
            ));
        }
        self.cite(
            "cache.separate_write_segment",
            b,
            "Use separate write segment",
            u8::from(separate_write_segment),
            "",
        );
        let read_ahead_on_idle_hit =
            flag(self, r, "read_ahead_on_idle_hit", "Read-ahead on idle hit")?;
        let read_any_free_blocks = flag(self, r, "read_any_free_blocks", "Read any free blocks")?;
        let combine_seq_writes = flag(self, r, "combine_seq_writes", "Combine seq writes")?;
        let stop_prefetch_in_sector = flag(
            self,
            r,
            "stop_prefetch_in_sector",
            "Stop prefetch in sector",
        )?;
        let write_hit_stop_prefetch = flag(
            self,
            r,
            "write_hit_stop_prefetch",
            "Write hit stop prefetch",
        )?;
        let read_directly_to_buffer = flag(
            self,
            r,
            "read_directly_to_buffer",
            "Read directly to buffer",
        )?;
        let immediate_transfer_partial_hit = flag(
            self,
            r,
            "immediate_transfer_partial_hit",
            "Immed transfer partial hit",
        )?;
        let read_hits_on_write_data = flag(
            self,
            r,
            "read_hits_on_write_data",
            "Allow read hits on write data",
        )?;
        let hold_bus_read = flag(self, r, "hold_bus_read", "Hold bus entire read xfer")?;
        let hold_bus_write = flag(self, r, "hold_bus_write", "Hold bus entire write xfer")?;
        let never_disconnect = flag(self, r, "never_disconnect", "Never disconnect")?;
        let low = r.f64("Low (write) water mark")?;
        let high = r.f64("High (read) water mark")?;
        for (name, v) in [
            ("Low (write) water mark", low),
            ("High (read) water mark", high),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(r.err(name, format!("must be within 0..=1, got {v}")));
            }
        }
        self.cite("cache.low_water_mark", b, "Low (write) water mark", low, "");
        self.cite(
            "cache.high_water_mark",
            b,
            "High (read) water mark",
            high,
            "",
        );
        let by_reqsize = r.flag("Set watermark by reqsize")?;
        self.cite(
            "cache.watermark_by_request",
            b,
            "Set watermark by reqsize",
            u8::from(by_reqsize),
            "",
        );
        let ms = |this: &mut Self,
                  r: &mut Reader<'_>,
                  key: &str,
                  name: &str|
         -> Result<f64, DiskSimError> {
            let v = r.nonneg(name)?;
            this.cite(&format!("cache.{key}"), b, name, v, "");
            Ok(v)
        };
        let read_hit_after_read_ms = ms(
            self,
            r,
            "read_hit_after_read_ms",
            "Read hit over. after read",
        )?;
        let read_hit_after_write_ms = ms(
            self,
            r,
            "read_hit_after_write_ms",
            "Read hit over. after write",
        )?;
        let read_miss_after_read_ms = ms(
            self,
            r,
            "read_miss_after_read_ms",
            "Read miss over. after read",
        )?;
        let read_miss_after_write_ms = ms(
            self,
            r,
            "read_miss_after_write_ms",
            "Read miss over. after write",
        )?;
        let write_hit_after_read_ms = ms(
            self,
            r,
            "write_hit_after_read_ms",
            "Write hit over. after read",
        )?;
        let write_hit_after_write_ms = ms(
            self,
            r,
            "write_hit_after_write_ms",
            "Write hit over. after write",
        )?;
        let write_miss_after_read_ms = ms(
            self,
            r,
            "write_miss_after_read_ms",
            "Write miss over. after read",
        )?;
        let write_miss_after_write_ms = ms(
            self,
            r,
            "write_miss_after_write_ms",
            "Write miss over. after write",
        )?;
        let read_completion_ms = ms(self, r, "read_completion_ms", "Read completion overhead")?;
        let write_completion_ms = ms(self, r, "write_completion_ms", "Write completion overhead")?;
        let data_preparation_ms = ms(self, r, "data_preparation_ms", "Data preparation overhead")?;
        let first_reselect_ms = ms(self, r, "first_reselect_ms", "First reselect overhead")?;
        let other_reselect_ms = ms(self, r, "other_reselect_ms", "Other reselect overhead")?;
        let read_disconnect_after_read_ms = ms(
            self,
            r,
            "read_disconnect_after_read_ms",
            "Read disconnect afterread",
        )?;
        let read_disconnect_after_write_ms = ms(
            self,
            r,
            "read_disconnect_after_write_ms",
            "Read disconnect afterwrite",
        )?;
        let write_disconnect_ms = ms(self, r, "write_disconnect_ms", "Write disconnect overhead")?;
        let minimum_seek_ms = ms(self, r, "minimum_seek_ms", "Minimum seek delay")?;
        let extra = r.flag("Extra write disconnect")?;
        let names = [
            "Extradisc command overhead",
            "Extradisc disconnect overhead",
            "Extradisc inter-disconnect delay",
            "Extradisc 2nd disconnect overhead",
            "Extradisc seek delta",
        ];
        let mut vals = [0.0; 5];
        for (v, n) in vals.iter_mut().zip(names) {
            // Read (and checked) either way; they act only when the switch is on.
            *v = r.nonneg(n)?;
        }
        let extra_write_disconnect = extra.then(|| {
            for (k, (n, v)) in [
                "command_ms",
                "disconnect_ms",
                "inter_disconnect_delay_ms",
                "second_disconnect_ms",
                "seek_delta_ms",
            ]
            .iter()
            .zip(names.iter().zip(vals))
            {
                self.cite(&format!("cache.extra_write_disconnect.{k}"), b, n, v, "");
            }
            ExtraWriteDisconnect {
                command_ms: vals[0],
                disconnect_ms: vals[1],
                inter_disconnect_delay_ms: vals[2],
                second_disconnect_ms: vals[3],
                seek_delta_ms: vals[4],
            }
        });
        self.cite(
            "cache.extra_write_disconnect",
            b,
            "Extra write disconnect",
            u8::from(extra),
            "(0: the five Extradisc values do not act)",
        );
        Ok(CacheSpec {
            segments,
            segment_sectors,
            write_segments,
            separate_write_segment,
            enable_caching,
            continuous_read,
            min_read_ahead_sectors: min_ra,
            max_read_ahead_sectors: max_ra,
            read_ahead_over_requested: over == 1,
            read_ahead_on_idle_hit,
            read_any_free_blocks,
            free_blocks_before_request: true,
            fast_write_level: fast,
            immediate_buffer_read: imm_r == 1,
            immediate_buffer_write: imm_w == 1,
            combine_seq_writes,
            stop_prefetch_in_sector,
            write_hit_stop_prefetch,
            read_directly_to_buffer,
            immediate_transfer_partial_hit,
            read_hits_on_write_data,
            low_water_mark: low,
            high_water_mark: high,
            read_hit_after_read_ms,
            read_hit_after_write_ms,
            read_miss_after_read_ms,
            read_miss_after_write_ms,
            write_hit_after_read_ms,
            write_hit_after_write_ms,
            write_miss_after_read_ms,
            write_miss_after_write_ms,
            read_completion_ms,
            write_completion_ms,
            data_preparation_ms,
            first_reselect_ms,
            other_reselect_ms,
            read_disconnect_after_read_ms,
            read_disconnect_after_write_ms,
            write_disconnect_ms,
            bus_sector_ms,
            bus_sector_write_ms: None,
            watermark_by_request: by_reqsize,
            hold_bus_read,
            hold_bus_write,
            never_disconnect,
            extra_write_disconnect,
            minimum_seek_ms,
            per_request_ms: 0.0,
        })
    }
}
