#!/usr/bin/env bash
# The turbulent channel at Re_tau 180 (Lee & Moser's viscosity, the Moser-Kim-Mansour box 4 pi x 2 x 4 pi/3) on one
# GPU within a time budget: a spin-up on a coarse grid, a restart on the preset's 129 x 128 x 128 grid (--resume
# with another --n: the spectra are zero-padded), statistics once the refined flow has settled.
#
# Usage (from the repository root, on a machine with a GPU):
#   bash benchmarks/gpu_channel.sh [OUTDIR] [SPINUP_SECONDS] [REFINED_SECONDS]     # defaults: benchmarks/results/channel_gpu 150 270
#
# SMOKE=1: tiny grids (a check of this script on a machine without a GPU).
#
# Each phase ends on SIGTERM from `timeout` at its budget: the main job then stops at its next segment with its last
# checkpoint, statistics and plots written (nothing is lost), and the next phase resumes from it. The outputs
# (run.json, diagnostics.csv, statistics.csv/.h5/.png, the plots) are packed into OUTDIR.tgz; OUTDIR/run keeps the
# checkpoints, so that a longer average continues with `python -m solvers run channel --preset re-tau-180 --resume
# --out OUTDIR/run`.
set -u
out=${1:-benchmarks/results/channel_gpu}
spinup=${2:-150}
refined=${3:-270}
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_MEM_FRACTION=${MEM:-.95}
py=${PYTHON:-python3}
run="$out/run"
coarse=(65 64 64) fine=()
[[ ${SMOKE:-} == 1 ]] && coarse=(17 16 8) fine=(--n 25 16 8)
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; date; uptime
  $py -c 'import jax; print("jax", jax.__version__, jax.devices())'; } > "$out/info.txt" 2>&1
cat "$out/info.txt"

echo "== spin-up on ${coarse[*]} ($(date +%T), $spinup s)"
timeout -s TERM -k 60 "$spinup" $py -m solvers run channel --preset re-tau-180 --n "${coarse[@]}" --stats-every 0 \
    --diag-every 50 --checkpoint-every 1000 --no-progress --out "$run" --overwrite > "$out/spinup.log" 2>&1
echo "exit $?"; tail -n 3 "$out/spinup.log"
cp "$run/diagnostics.csv" "$out/spinup_diagnostics.csv" 2>/dev/null
t0=$($py -c "import json; print(json.load(open('$run/run.json'))['t'])" 2>/dev/null || echo 0)

echo "== refined on the preset's grid from t = $t0 ($(date +%T), $refined s)"
start=$($py -c "print(float('$t0') + 20)")  # the statistics leave out the refined flow's first 20 time units
timeout -s TERM -k 90 "$refined" $py -m solvers run channel --preset re-tau-180 "${fine[@]}" --resume --stats-start "$start" \
    --diag-every 50 --checkpoint-every 2000 --no-progress --out "$run" > "$out/refined.log" 2>&1
echo "exit $?"; tail -n 4 "$out/refined.log"
cp "$run"/run.json "$run"/diagnostics.csv "$run"/statistics.* "$run"/*.png "$out"/ 2>/dev/null
# the run directory (its checkpoints: continue with --resume) stays; its outputs are already copied beside it
tar czf "${PACK:-$out.tgz}" --exclude="$(basename "$out")/run" -C "$(dirname "$out")" "$(basename "$out")"
ls -la "$out"
