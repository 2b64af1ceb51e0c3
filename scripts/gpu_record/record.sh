#!/usr/bin/env bash
# Record what the product's box-side programs print on a real NVIDIA GPU (run by the
# device tool, in the repository root, after scripts/gpu_record/prepare.py .devrec here).
# Everything lands verbatim in $OUT/h200.tar.gz; tests/fixtures/h200/SOURCES.txt says
# which file came from which command.
set -u
D=.devrec R=$OUT/rec
mkdir -p "$R"
export HOME=/tmp/rgthome PYTHONUNBUFFERED=1
mkdir -p "$HOME"
GF=$(cat $D/gpu_fields) AF=$(cat $D/app_fields)
step() { echo "== $(date -u +%T) $*" >&2; }
agent() { # NAME PYTHON-FLAGS AGENT-ARGS...
    local name=$1 flags=$2
    shift 2
    python3 $flags -u - --interval 1 --count 4 --mount / --mount /tmp "$@" <$D/agent.py >"$R/$name.jsonl" 2>"$R/$name.err"
    echo "rc=$?" >>"$R/$name.err"
}
smi() { # NAME ARGS...
    local name=$1
    shift
    nvidia-smi "$@" >"$R/$name" 2>&1
    echo "rc=$?" >"$R/$name.rc"
}
step machine
{ date -u; uname -a; head -3 /etc/os-release; python3 -V; nproc; } >"$R/machine.txt" 2>&1
step idle
smi smi_version.txt --version
smi smi_table_idle.txt
smi idle_query_gpu.csv --query-gpu="$GF" --format=csv,noheader,nounits
smi idle_query_gpu_header.csv --query-gpu="$GF" --format=csv
smi idle_query_compute_apps.csv --query-compute-apps="$AF" --format=csv,noheader,nounits
smi smi_old_reasons_field.txt --query-gpu=index,clocks_throttle_reasons.active --format=csv,noheader,nounits
smi smi_bad_field.txt --query-gpu=index,no.such.field --format=csv,noheader,nounits
agent agent_nvml_idle ""
agent agent_smi_idle "-S" --smi-every 1 --proc-every 1
step preflight
python3 - <rgt_tui/scripts/preflight_check.py >"$R/preflight_check.txt" 2>&1
python3 -c 'import json,torch; print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda, "arch_list": torch.cuda.get_arch_list(), "name": torch.cuda.get_device_name(0), "capability": list(torch.cuda.get_device_capability(0))}))' >"$R/torch_arch.json" 2>&1
step load
python3 -c '
import torch, time
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
hold = torch.empty(40 * 2**30, dtype=torch.uint8, device="cuda")
t = time.time()
while time.time() - t < 45:
    a @ a
    torch.cuda.synchronize()
' &
load=$!
sleep 10
smi load_query_gpu.csv --query-gpu="$GF" --format=csv,noheader,nounits
smi load_query_compute_apps.csv --query-compute-apps="$AF" --format=csv,noheader,nounits
smi smi_table_load.txt
agent agent_nvml_load "" --proc-every 1
agent agent_smi_load "-S" --smi-every 1 --proc-every 1
step vram
bash -c "$(cat $D/vram_list.cmd)" >"$R/vram_list_load.txt" 2>&1
echo "load pid $load" >>"$R/vram_list_load.txt.pid"
kill "$load"
wait "$load"
bash -c "$(cat $D/vram_list.cmd)" >"$R/vram_list_idle.txt" 2>&1
step smoke
bash -c "$(cat $D/smoke_fits.cmd)" <$D/smoke.stdin >"$R/smoke_fits.txt" 2>&1
bash -c "$(cat $D/smoke_oom.cmd)" <$D/smoke.stdin >"$R/smoke_oom.txt" 2>&1
cp "$HOME"/.rgt/smoke/cells/smoke.* "$R/" 2>/dev/null
step oom-direct
python3 -c 'import torch; m=torch.nn.Linear(65536,65536).cuda(); x=torch.randn(262144,65536,device="cuda"); m(x).sum().backward()' >"$R/cuda_oom_direct.txt" 2>&1
step done
tar -czf "$OUT/h200.tar.gz" -C "$OUT" rec && rm -rf "$R"
