#!/usr/bin/env bash
# Builds DiskSim 4.0 from ../shared/tools/disksim-4.0 into OUT_DIR as the differential oracle:
# the same tree and build.sh, plus one added line that prints every completed request
#
#   REQ <completed ms> <access ms> <blkno> <sectors> <R|W>
#
# on standard output when DISKSIM_REQLOG is set in the environment (off otherwise, so the
# binary still reproduces DiskSim's published validation figures). Nothing is copied into the
# repository: the source is copied into OUT_DIR/src-tree and built there.
#
#   scripts/build_disksim_oracle.sh OUT_DIR   ->  OUT_DIR/bin/disksim, OUT_DIR/bin/rms, OUT_DIR/statdefs
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: build_disksim_oracle.sh OUT_DIR}
SRC=${DISKSIM_SRC:-$here/../shared/tools/disksim-4.0}
[ -f "$SRC/build.sh" ] || { echo "build_disksim_oracle.sh: no DiskSim source at $SRC (set DISKSIM_SRC)" >&2; exit 1; }
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
if [ -x "$OUT/bin/disksim" ] && [ "$OUT/bin/disksim" -nt "$0" ]; then
  echo "DiskSim oracle already built: $OUT/bin/disksim"; exit 0
fi
rm -rf "$OUT/src-tree"; cp -r "$SRC" "$OUT/src-tree"; chmod -R u+w "$OUT/src-tree"
f="$OUT/src-tree/src/disksim_iodriver.c"
# Where the driver's queue hands back a completed request (iodriver_access_complete).
anchor='   req = ioqueue_physical_access_done(iodrivers[iodriverno]->devices[devno].queue, req);'
[ "$(grep -cF "$anchor" "$f")" = 1 ] || { echo "build_disksim_oracle.sh: anchor not found in $f" >&2; exit 1; }
python3 - "$f" "$anchor" <<'PY'
import sys
path, anchor = sys.argv[1], sys.argv[2]
text = open(path).read()
line = ('   if (getenv("DISKSIM_REQLOG")) { ioreq_event *r_; for (r_ = req; r_; r_ = r_->next) '
        'printf("REQ %.9f %.9f %d %d %c\\n", simtime, disksim->lastphystime, r_->blkno, '
        'r_->bcount, (r_->flags & READ) ? \'R\' : \'W\'); }\n')
i = text.index(anchor) + len(anchor) + 1
text = '#include <stdlib.h>\n' + text[:i] + line + text[i:]
open(path, 'w').write(text)
PY
"$OUT/src-tree/build.sh" "$OUT"
# DiskSim reads its statistics definitions from the working directory of each run.
statdefs=${DISKSIM_STATDEFS:-$here/../shared/validation/disksim/cheetah9LP/statdefs}
[ -f "$statdefs" ] || { echo "build_disksim_oracle.sh: no statdefs at $statdefs (set DISKSIM_STATDEFS)" >&2; exit 1; }
cp "$statdefs" "$OUT/statdefs"
