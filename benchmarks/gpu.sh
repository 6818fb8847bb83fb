#!/usr/bin/env bash
# Issue 18, item 6: every GPU measurement of the README's GPU sections in one run, for a lent GPU of limited time.
#
# Usage (from the repository root, on a machine with one or more GPUs):
#   bash benchmarks/gpu.sh [OUTDIR] [SECONDS]        # defaults: benchmarks/results/gpu, 480
#
# Steps, in order of importance; each has its own time limit and none runs past the whole budget (SECONDS), so a
# step that fails, runs out of memory or out of time is logged and the next one still runs:
#   info     the GPU, JAX and NCCL versions
#   ns       the Navier-Stokes step at 256^3 and 512^3 (ms, xfft3d units per stage, the GPU program's bytes/point)
#   fft      xfft3d/xrfft3d against jnp.fft at 256^3-1024^3, natural and transposed order
#   step     the main job against its bare step (32^3, 256^2), with the step program with a fixed dt, with CFL
#            control, with rows (--decompose: where the main job's time beyond the bare step goes), and the
#            step against exponax (1024^2, 256^3);
#            the exponax columns need `pip install exponax` (the driver columns do not)
#   ns1024   the 1024^3 float32 step on "one 80 GB card": JAX's memory pool capped at MEM80 (default .53) of the
#            GPU: on an H200 a bytes_limit of 79.6 GB (measured), less than the 95% of an 80 GB card that JAX
#            takes there
#   one/two  the multi-process NCCL path, two ranks sharing GPU 0 (NCCL 2.30 and later), against one process
#   ns1/ns2  the same for the main job (Navier-Stokes 128^3 float64 to t = 1)
# SMOKE=1 runs every step on tiny grids and CPU processes (a check of this script on a machine without a GPU).
# Results go to OUTDIR (JSON, PNG, one log per step) and are packed into OUTDIR.tgz (or $PACK) after every step;
# the last lines printed are a summary.
set -u
out=${1:-benchmarks/results/gpu}
budget=${2:-480}
pack=${PACK:-$out.tgz}
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
start=$(date +%s)
summary=()
if [[ ${SMOKE:-} == 1 ]]; then
    sizes=(32 48) ffts=(32 64) big=64 n2d=64 n3d=16 cube=16 nmp=32 launch=(--platform cpu) ptf=cpu
    driver=(--driver-steps 80 --repeats 2)  # the driver's grids are fixed (32^3, 256^2): fewer steps on CPUs
else
    sizes=(256 512) ffts=(256 512 1024) big=1024 n2d=1024 n3d=256 cube=64 nmp=128 launch=(--platform gpu
        --ranks-per-gpu 2) ptf=cuda driver=(--driver-steps 500 --repeats 9)
fi

step() {  # step NAME SECONDS COMMAND...: COMMAND under `timeout`, within what is left of the budget
    local name=$1 limit=$2
    shift 2
    local left=$((budget - ($(date +%s) - start)))
    ((limit > left)) && limit=$left
    if ((limit < 15)); then
        summary+=("$name: skipped (budget spent)")
        return
    fi
    echo "== $name ($(date +%T), limit $limit s)"
    local t0=$(date +%s)
    timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    summary+=("$name: exit $rc after $(($(date +%s) - t0)) s (limit $limit s)")
    tail -n 4 "$out/$name.log"
    tar czf "$pack" -C "$(dirname "$out")" "$(basename "$out")"
}

step info 40 bash -c "nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv;
    $py -c 'import jax; print(jax.__version__, jax.devices(), jax.devices()[0].memory_stats()[\"bytes_limit\"])';
    $py -m pip show nvidia-nccl-cu13 nvidia-nccl-cu12 2>/dev/null | grep -E '^(Name|Version)'; uptime"
step ns 150 "$py" benchmarks/navier_stokes.py --platform auto --sizes "${sizes[@]}" --tag _gpu --out "$out"
step fft 120 "$py" benchmarks/fft.py --platform auto --sizes "${ffts[@]}" --no-peer --no-backends --out "$out"
peer=--peer
"$py" -c "import exponax" 2>/dev/null || peer=
step step 200 env JAX_PLATFORMS=$ptf "$py" benchmarks/solver_step.py $peer --driver --decompose --n2d $n2d \
    --n3d $n3d "${driver[@]}" --tag _gpu --out "$out"
step ns1024 120 env XLA_PYTHON_CLIENT_MEM_FRACTION="${MEM80:-.53}" "$py" benchmarks/navier_stokes.py \
    --platform auto --sizes $big --integrators lsrk4 --repeats 6 --tag _gpu_1024 --out "$out"
runs=$(mktemp -d)
step one 50 "$py" slurm/xfft_check.py --n $cube $cube $cube --save "$runs/one.npz"
step two 70 "$py" -m xfft.launch -n 2 "${launch[@]}" --timeout 65 \
    slurm/xfft_check.py --n $cube $cube $cube --save "$runs/two.npz"
step ns1 70 "$py" -m solvers run navier-stokes --n $nmp --t-end 1 --dtype float64 --no-plots --no-progress \
    --out "$runs/ns1"
step ns2 90 "$py" -m xfft.launch -n 2 "${launch[@]}" --timeout 85 -m solvers run navier-stokes \
    --n $nmp --t-end 1 --dtype float64 --no-plots --no-progress --out "$runs/ns2"
step compare 30 "$py" -c "
import json, numpy as np, os
r = '$runs'
res = {}
if all(os.path.exists(f'{r}/{k}.npz') for k in ('one', 'two')):
    a, b = np.load(f'{r}/one.npz'), np.load(f'{r}/two.npz')
    res['spectra_max_abs_diff'] = {k: float(abs(a[k] - b[k]).max()) for k in a}
if all(os.path.exists(f'{r}/{d}/diagnostics.csv') for d in ('ns1', 'ns2')):
    a, b = (np.genfromtxt(f'{r}/{d}/diagnostics.csv', delimiter=',', names=True) for d in ('ns1', 'ns2'))
    res['steps'] = [len(a), len(b)]
    res['diagnostics_max_rel_diff'] = {k: float(abs(a[k] - b[k]).max() / abs(a[k]).max())
                                       for k in ('energy', 'enstrophy', 'cfl')}
    for d in ('ns1', 'ns2'):
        res[d] = {k: v for k, v in json.load(open(f'{r}/{d}/run.json')).items() if k in ('devices', 'mesh',
                  'processes', 'steps', 'wall_s', 'final')}
print(json.dumps(res, indent=1))
json.dump(res, open('$out/multiprocess.json', 'w'), indent=1)
"
rm -rf "$runs"
tar czf "$pack" -C "$(dirname "$out")" "$(basename "$out")"
echo "== summary ($(($(date +%s) - start)) s of $budget)"
printf '%s\n' "${summary[@]}"
