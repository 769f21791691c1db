#!/bin/bash
# What only a GPU machine can check, as one short script: the AlphaProof trainer with the network on
# CUDA (one process, then actor processes feeding the GPU's inference service), a resume on the GPU,
# a DDP learner over the GPUs under torchrun (NCCL; needs 2 or more), a GPU checkpoint proving on
# CPU, and the distributed benchmark's scaling and batch fill with the network off the actors' cores.
#
#   bash scripts/device_check.sh [OUT_DIR]            # on the GPU machine (OUT_DIR: /tmp/device-check)
#   BENCH=0 bash scripts/device_check.sh OUT_DIR      # the checks alone (about 2 minutes on a GPU node)
#   BENCH=only bash scripts/device_check.sh OUT_DIR   # the benchmark alone (at most 5 minutes)
#   DEVICE=cpu BENCH=0 bash scripts/device_check.sh   # the same steps on CPU (gloo): checks the script
#
# Each step's log is OUT_DIR/<step>.log; a failed step is reported and the next one still runs; a step
# past its time limit is killed. The exit status is the number of failed steps.
set -uo pipefail
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-cuda}
BENCH=${BENCH:-1}
OUT=${1:-/tmp/device-check}
mkdir -p "$OUT"
GPUS=$(python -c "import torch; print(torch.cuda.device_count())" || echo 0)
RANKS=$([ "$DEVICE" = cpu ] || [ "$GPUS" -ge 2 ] && echo 2 || echo 0)  # (the DDP check's ranks; 0: skipped)
TINY=(--actors 16 --sims 4 --lean-calls 16 --eval-lean-calls 16 --num-tactics 2 --batch-size 8 --learn-steps 2
      --warmup-steps 60 --warmup-theorems 64 --eval-size 8 --eval-every 2 --iterations 2 --replay-size 2000
      --max-tactic-tokens 16 --no-progress --logdir "" --seed 0 --device "$DEVICE" --overwrite)
failed=0

step() {  # step NAME SECONDS COMMAND...: run it, say how it ended
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    if timeout -k 15 "$limit" "$@" > "$OUT/$name.log" 2>&1; then
        echo "ok      $name ($((SECONDS - t0)) s)"
    else
        echo "FAILED  $name (exit $?, $((SECONDS - t0)) s): last lines of $OUT/$name.log"
        tail -n 15 "$OUT/$name.log" | sed 's/^/    /'
        failed=$((failed + 1))
        return 1
    fi
}

prove_on_cpu() {  # a GPU run's checkpoint proving on CPU: it loads and searches (found or "no proof found")
    python -m agents.alphaproof.prove --checkpoint "$OUT/actors" --device cpu --lean-calls 32 \
        --theorem 'theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry' 2>&1 | tee "$OUT/prove.txt"
    local code=${PIPESTATUS[0]}
    [ "$code" -eq 0 ] || { [ "$code" -eq 1 ] && grep -q "^-- no proof found" "$OUT/prove.txt"; }
}
export -f prove_on_cpu
export OUT

python -c "import torch; print('torch', torch.__version__, '| cuda', torch.version.cuda, '| GPUs', \
torch.cuda.device_count(), [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])"
echo "device $DEVICE, DDP check over $RANKS rank(s), $(nproc) cores, logs in $OUT"

if [ "$BENCH" != only ]; then
    step single 120 python -m agents.alphaproof.train "${TINY[@]}" --actor-procs 0 --checkpoint-dir "$OUT/single"
    step actors 120 python -m agents.alphaproof.train "${TINY[@]}" --actor-procs 2 --checkpoint-dir "$OUT/actors"
    step resume 90 python -m agents.alphaproof.train --resume "$OUT/actors" --iterations 3 --no-progress
    if [ "$RANKS" -ge 2 ]; then
        step ddp 150 torchrun --standalone --nproc_per_node=2 -m agents.alphaproof.train "${TINY[@]}" --actor-procs 2 \
            --checkpoint-dir "$OUT/ddp" &&
            { grep -q "inference on 2 rank(s)" "$OUT/ddp.log" || { echo "FAILED  ddp: not 2 inference ranks"; failed=$((failed + 1)); }; }
    else
        echo "skipped ddp: $GPUS GPU(s); NCCL takes one rank per GPU, so a DDP check needs 2"
    fi
    step prove-on-cpu 60 bash -c prove_on_cpu
fi
if [ "$BENCH" != 0 ]; then
    step bench 300 python benchmarks/bench_distributed.py --only scaling --device "$DEVICE" --per-proc 64 \
        --procs 1 2 4 --fill-searches 256 --fill-procs 4 --iterations 3 --sims 8 --lean-calls 24 \
        --warmup-steps 50 --out "$OUT/distributed_$DEVICE.md"
    [ -f "$OUT/distributed_$DEVICE.md" ] && cat "$OUT/distributed_$DEVICE.md"
fi
for run in single actors resume ddp; do  # the held-out line each run printed
    [ -f "$OUT/$run.log" ] && grep -h "^held-out solve rate:" "$OUT/$run.log" | sed "s/^/$run: /"
done
echo "$failed step(s) failed"
exit "$failed"
