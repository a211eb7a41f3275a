"""Performance tool shims for the simulated fleet (issue 29): nvbandwidth, all_reduce_perf, dcgmi,
gpu_burn and ib_write_bw printing the real formats (../shared/perf samples: nvbandwidth v0.6
text, nccl-tests 2.17 with #wrong and OK/FAILED, DCGM 4.x JSON, gpu_burn progress and verdicts,
perftest with --report_gbits), plus the nvidia-smi answers the perf script samples with, and the
burn-in's samples (so ``--perf --burn-in`` runs on a perf node: tests/perf/test_perf_burnin.py).

Profile key ``perf`` (all optional; values are the healthy figures of an 8x H200 node)::

    perf:
      h2d: 55.2, d2h: 55.1, p2p: 372.0, allreduce: 478.0, gflops: 52000, ib: 392.0
      per_gpu: {3: {h2d: 35.0}}         # one slow GPU
      cells: {"1-5": 200.0}             # one bad NVLink pair (row GPU 1 -> column GPU 5)
      hca: {mlx5_1: 196.0}              # an HCA at half rate
      nccl_wrong: 0                     # #wrong at the largest size
      gpu_burn_zero: [2]                # 'OK' with 0 Gflop/s (init error)
      throttle: [4]                     # HW slowdown + HW thermal during every test
      apps: {6: "4242, python3"}        # another compute process on a GPU
      hang: [nvbandwidth]               # never returns (the deadline stops it)
      ib_read: 390.0, ib_send: 391.0    # the other perftest bandwidths, Gb/s
      lat: {write: [1.65, 1.92], read: [2.55, 2.90], send: [1.70, 1.98]}   # typical, p99 usec
      hca_lat: {mlx5_1: {write: [4.1, 6.0]}}    # one HCA's latency
      proftester: {1004: 650000, 1006: 45000, 1007: 50000, 1008: 100000}   # gflops per test id
      drift: {factor: -0.03}            # memory of earlier runs: run k reports every figure x (1 + factor)^k
                                        # (latencies / (1 + factor)^k), the shim counting its calls
      tool_seconds: {nvbandwidth: 5, all_reduce_perf: 10, ib_write_bw: 2, dcgmi: 0, gpu_burn: arg}
                                        # how long each shim runs before it answers (TOOL_SECONDS)

``tools_absent`` removes a tool (``all_reduce_perf`` ...): its test is ERROR naming it.
"""

from __future__ import annotations

import json
import re

from nodegate.burnin.script import template as burnin_template
from nodegate.perf.script import APPS_QUERY, STATE_FIELDS
from nodegate.perf.spec import PROFTESTER_DEFAULT

from .profile import gpu_bus
from .shimtable import Invocation
from .smi_xml import bus_id_smi

DEFAULTS = {"h2d": 55.2, "d2h": 55.1, "p2p": 372.0, "allreduce": 478.0, "gflops": 52000.0, "ib": 392.0,
            "ib_read": 390.0, "ib_send": 391.0}
#: typical and 99th-percentile latency (usec) of 2-byte messages per verb on NDR (ngc_multinode_perf
#: passes send/write at 2.5 us, read at 4.5 us)
LAT = {"write": (1.65, 1.92), "read": (2.55, 2.90), "send": (1.70, 1.98)}
#: dcgmproftester gflops per test id on an H200 (DCGM diag-skus.yaml.in: "-t 1007 measures ~50000")
PROFTESTER = {1004: 650000.0, 1006: 45000.0, 1007: 50000.0, 1008: 100000.0}
#: how many successive answers a drifting node's shims hold (later calls repeat the last)
DRIFT_RUNS = 8
NCCL_SIZES = [1 << 30, 1 << 31, 1 << 32, 1 << 33, 1 << 34]
BIN = "/usr/local/bin"

#: Seconds each shim runs before it answers, as the real tool does with the spec's default arguments
#: on an 8x H200 node (the shims sleep: no CPU). A profile's ``perf.tool_seconds`` overrides any of
#: them (the test profiles use 0: tests/perf stays fast; bench/perf_row.py keeps these).
#: - gpu_burn: "arg", the duration on its command line, like the real gpu_burn (wilicc/gpu-burn runs
#:   for its last argument's seconds; ../shared/perf/351's "Summary at" lines tick through that
#:   time), i.e. the spec's ``gpu_burn_seconds`` (default 60).
#: - all_reduce_perf: 10 s. The spec's sweep is -b 1G -e 16G -f 2 (5 sizes); nccl-tests' time column
#:   is the microseconds of one iteration: at the shim's 478 GB/s busbw (algbw = busbw * n/(2(n-1))
#:   = 273 GB/s on 8 GPUs) 1G..16G take 3.9+7.9+15.7+31.5+63 = 122 ms per iteration (../shared/perf/
#:   304, 8x2 H100: 4607.6 us at 1 GiB, 17286 us at 4 GiB, the same order); times 21-25 runs (-n 20,
#:   nccl-tests' default, plus 1 warm-up by default, 5 in 301/302/307's headers) times 2 (out-of-place
#:   and in-place) = 5.1-6.1 s, plus NCCL's communicator set-up and the 16 GiB buffers' allocation and
#:   initialisation (a few seconds; no sample prints it).
#: - ib_write_bw: 2 s per HCA. 5000 iterations of 8 MiB (the spec's -s 8388608 -n 5000) at 392 Gb/s
#:   is 0.86 s of transfer (../shared/perf/361: 20000 x 8 MiB at 24056.72 MB/s = 6.97 s, the same
#:   arithmetic), plus the loopback server/client connection set-up (~1 s).
#: - nvbandwidth: 5 s. The copies are short (its defaults: 512 MiB buffer, 3 samples: 8 GPUs x 3 x
#:   9.7 ms per host<->device direction at 55 GB/s, 56 pairs x 3 x 1.4 ms for the 372 GB/s read
#:   matrix: under 1 s in all, by ../shared/perf/323's figures); CUDA context creation on 8 GPUs
#:   and the per-test set-up make up the rest (an estimate: no published output prints its time).
#: - dcgmi: 0 (not in the perf-healthy tests; a level-3 diag takes tens of minutes, not simulated).
TOOL_SECONDS = {"nvbandwidth": 5.0, "all_reduce_perf": 10.0, "ib_write_bw": 2.0, "dcgmi": 0.0, "gpu_burn": "arg",
                "ib_read_bw": 2.0, "ib_send_bw": 2.0, "ib_write_lat": 1.0, "ib_read_lat": 1.0, "ib_send_lat": 1.0,
                "dcgmproftester12": 0.0}


def _g(cfg: dict, gpu: int, key: str) -> float:
    return float(((cfg.get("per_gpu") or {}).get(gpu) or {}).get(key, cfg.get(key, DEFAULTS[key])))


def nvbandwidth_text(cfg: dict, n: int, name: str) -> str:
    out = ["nvbandwidth Version: v0.6", "Built from Git version: v0.6", "",
           "CUDA Runtime Version: 12080", "CUDA Driver Version: 12080", "Driver Version: 580.95.05", ""]
    out += [f"Device {i}: {name} (00000000:{0x19 + i:02x}:00)" for i in range(n)] + [""]
    for test, key, arrow in (("host_to_device_memcpy_ce", "h2d", "->"), ("device_to_host_memcpy_ce", "d2h", "<-")):
        vals = [_g(cfg, i, key) for i in range(n)]
        out += [f"Running {test}.", f"memcpy CE CPU(row) {arrow} GPU(column) bandwidth (GB/s)",
                "           " + "".join(f"{i:>10}" for i in range(n)),
                " 0" + "".join(f"{v:10.2f}" for v in vals), "", f"SUM {test} {sum(vals):.2f}", ""]
    cells = cfg.get("cells") or {}
    rows = []
    total = 0.0
    for r in range(n):
        row = []
        for c in range(n):
            if r == c:
                row.append(f"{'N/A':>10}")
                continue
            v = float(cells.get(f"{r}-{c}", min(_g(cfg, r, "p2p"), _g(cfg, c, "p2p"))))
            total += v
            row.append(f"{v:10.2f}")
        rows.append(f" {r}" + "".join(row))
    out += ["Running device_to_device_memcpy_read_ce.", "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)",
            "           " + "".join(f"{i:>10}" for i in range(n))] + rows
    out += ["", f"SUM device_to_device_memcpy_read_ce {total:.2f}", "",
            "NOTE: The reported results may not reflect the full capabilities of the platform.",
            "Performance can vary with software drivers, hardware clocks, and system topology.", ""]
    return "\n".join(out)


def nccl_text(cfg: dict, n: int, name: str, host: str) -> str:
    wrong = int(cfg.get("nccl_wrong", 0))
    plateau = float(cfg.get("allreduce", DEFAULTS["allreduce"]))
    out = ["# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703",
           f"# Collective test starting: all_reduce_perf",
           f"# nThread 1 nGpus {n} minBytes 1073741824 maxBytes 17179869184 step: 2(factor) warmup iters: 1 "
           "iters: 20 agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    out += [f"#  Rank {i:2d} Group  0 Pid   4242 on {host} device {i:2d} [0000:{0x19 + i:02x}:00] {name}"
            for i in range(n)]
    out += ["#", "#                                                              out-of-place                       "
                 "in-place          ",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw "
            "  busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s) "
            " (GB/s)       "]
    factor = 2 * (n - 1) / n if n > 1 else 1.0
    for k, size in enumerate(NCCL_SIZES):
        bus = plateau * (0.90 + 0.025 * k)
        alg = bus / factor
        t = size / (alg * 1e3)
        w = wrong if size == NCCL_SIZES[-1] else 0
        out.append(f"{size:12d}  {size // 4:12d}     float     sum      -1  {t:7.0f}  {alg:6.2f}  {bus:6.2f}  {w:5d}"
                   f"  {t:7.0f}  {alg:6.2f}  {bus:6.2f}  {w:5d}")
    out += [f"# Out of bounds values : {wrong} {'FAILED' if wrong else 'OK'}",
            f"# Avg bus bandwidth    : {plateau * 0.95:.4f} ", "#", "# Collective test concluded: all_reduce_perf", ""]
    return "\n".join(out)


def gpu_burn_text(cfg: dict, n: int, name: str, uuids: list[str]) -> str:
    zero = set(cfg.get("gpu_burn_zero") or [])
    out = [f"GPU {i}: {name} (UUID: {uuids[i]})" for i in range(n)]
    recs = []
    for pct in (50.0, 100.0):
        gf = " - ".join(f"{2000 if i not in zero else 0} ({0 if i in zero else int(_g(cfg, i, 'gflops'))} Gflop/s)"
                        for i in range(n))
        recs.append(f"{pct:.1f}%  proc'd: {gf}   errors: {' - '.join('0' for _ in range(n))}   temps: "
                    + " - ".join("62 C" for _ in range(n)) + " ")
    out.append("\r".join(recs))
    out += ["\tSummary at:   Wed Dec  2 08:00:00 UTC 2026", "", "Killing processes.. done", "",
            f"Tested {n} GPUs:"] + [f"\tGPU {i}: OK" for i in range(n)]
    return "\n".join(out) + "\n"


def scaled(cfg: dict, f: float) -> dict:
    """``cfg`` with every figure x ``f`` (latencies / ``f``): one run of a drifting node."""
    out = dict(cfg)
    for k in DEFAULTS:
        out[k] = float(cfg.get(k, DEFAULTS[k])) * f
    out["per_gpu"] = {g: {k: float(v) * f for k, v in d.items()} for g, d in (cfg.get("per_gpu") or {}).items()}
    out["cells"] = {c: float(v) * f for c, v in (cfg.get("cells") or {}).items()}
    out["hca"] = {h: float(v) * f for h, v in (cfg.get("hca") or {}).items()}
    out["lat"] = {vb: [x / f for x in v] for vb, v in {**LAT, **(cfg.get("lat") or {})}.items()}
    out["hca_lat"] = {h: {vb: [x / f for x in v] for vb, v in d.items()} for h, d in (cfg.get("hca_lat") or {}).items()}
    out["proftester"] = {int(t): float(v) * f for t, v in {**PROFTESTER, **(cfg.get("proftester") or {})}.items()}
    return out


def ib_lat_text(dev: str, verb: str, typical: float, p99: float) -> str:
    """perftest latency output (perftest_parameters.h RESULT_FMT_LAT / REPORT_FMT_LAT)."""
    title = {"write": "RDMA_Write", "read": "RDMA_Read", "send": "Send"}[verb]
    rule = "---------------------------------------------------------------------------------------"
    return "\n".join([rule, f"                    {title} Latency Test", f" Dual-port       : OFF\t\tDevice         : {dev}",
                      " Number of qps   : 1\t\tTransport type : IB", " Connection type : RC\t\tUsing SRQ      : OFF",
                      " Mtu             : 4096[B]", " Link type       : IB", rule,
                      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                      "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ",
                      f" 2       10000          {typical * 0.97:.2f}           {p99 * 2.1:.2f}         {typical:.2f}     "
                      f"\t       {typical * 1.01:.2f}        \t0.04\t\t{p99:.2f} \t\t{p99 * 2.1:.2f}   ", rule]) + "\n"


def proftester_text(n: int, tid: int, gflops: float) -> str:
    """dcgmproftester 4.x with --cublas (DCGM dcgmproftester/PhysicalGpu.cpp: ``{:#.3}`` gflops)."""
    label = {1004: "TensorEngineActive", 1006: "Fp64EngineActive", 1007: "Fp32EngineActive",
             1008: "Fp16EngineActive"}[tid]
    out = ["Skipping CreateDcgmGroups() since DCGM validation is disabled"]
    for g in range(n):
        out += [f"Worker {g}:0 [{tid}]: {label}:  generated ???, dcgm 0 ({format(gflops * x, '#.3')} gflops)."
                for x in (0.99, 1.0, 1.0)]
    out += [f"GPU {g}, TestField {tid} test PASSED." for g in range(n)] + ["All Tests Passed."]
    return "\n".join(out) + "\n"


def ib_text(dev: str, gbits: float, title: str = "RDMA_Write BW Test") -> str:
    head = ["---------------------------------------------------------------------------------------",
            f"                    {title}",
            f" Dual-port       : OFF\t\tDevice         : {dev}",
            " Number of qps   : 1\t\tTransport type : IB", " Connection type : RC\t\tUsing SRQ      : OFF",
            " TX depth        : 128", " CQ Moderation   : 100", " Mtu             : 4096[B]",
            " Link type       : IB", "---------------------------------------------------------------------------------------",
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
            f" 8388608    5000             {gbits + 0.3:.2f}             {gbits:.2f}  \t\t   {gbits / 67.1:.6f}",
            "---------------------------------------------------------------------------------------"]
    return "\n".join(head) + "\n"


def dcgmi_json(n: int) -> str:
    tests = [{"name": t, "results": [{"entity_group": "GPU", "entity_id": i, "status": "Pass"} for i in range(n)]}
             for t in ("memory_bandwidth", "targeted_stress", "targeted_power")]
    return json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "Stress", "tests": tests}],
                                           "metadata": {"DCGM Version": "4.2.3"}}}, indent=2) + "\n"


def burnin_fields() -> list[str]:
    """The burn-in's sample fields as its first call asks for them: the first alternative of each
    ``NG_WANT`` entry (nodegate/burnin/burnin.sh ng_f_fields), read from the script itself so the
    answer below cannot drift from what the script asks."""
    m = re.search(r"^NG_WANT='([^']*)'", burnin_template(), re.M)
    if m is None:
        raise RuntimeError("nodegate/burnin/burnin.sh: NG_WANT not found")
    return [g.split("|")[0] for g in m.group(1).split()]


def burnin_row(k: int, bus: str, pc: dict, mask: int, fields: list[str]) -> str:
    """One GPU's row of a burn-in sample: busy (P0, no GpuIdle) at the perf rows' figures, link at
    its max, no ECC error, no remap, clocks event reason counters 0 (tests/burnin/shims.py BUSY)."""
    v = {"timestamp": "2026/12/02 08:00:00.000", "index": str(k), "pci.bus_id": bus, "pstate": "P0",
         "clocks_event_reasons.active": f"0x{mask:016x}", "pcie.link.gen.current": str(pc["max_gen"]),
         "pcie.link.width.current": str(pc["max_width"]), "temperature.gpu": "88" if mask else "62",
         "temperature.gpu.tlimit": "3" if mask else "25", "power.draw": "650.10",
         "clocks.sm": "1410" if mask else "1980", "utilization.gpu": "100", "remapped_rows.pending": "No"}
    return ", ".join(v.get(f, "0") for f in fields) + "\n"


def render_perf(r) -> None:
    """Add the perf shims and the sampled nvidia-smi answers to a node being rendered."""
    cfg = r.d.get("perf") or {}
    n = len(r.present)
    from .models import GPU_MODELS
    name = GPU_MODELS[r.d["gpus"]["model"]]["product_name"]
    hang = set(cfg.get("hang") or [])
    throttle = set(cfg.get("throttle") or [])
    rows, apps, brows = [], [], []
    bfields = burnin_fields()
    for k, i in enumerate(r.present):
        st = r.states[i]
        pc = st["pcie"]
        mask = 0x48 if k in throttle else 0   # HW slowdown + HW thermal slowdown
        bus = bus_id_smi(*gpu_bus(r.d, i))
        rows.append(f"{k}, {bus}, 0x{mask:016x}, {pc['max_gen']}, {pc['max_gen']}, {pc['max_width']}, "
                    f"{pc['max_width']}, {1410 if mask else 1980}, 650.10, 700.00, {88 if mask else 62}, 100\n")
        brows.append(burnin_row(k, bus, pc, mask, bfields))
        if k in (cfg.get("apps") or {}):
            apps.append(f"{bus}, {cfg['apps'][k]}\n")
    # a GPU node's userland has util-linux setsid: the perf script stops a tool's whole session with it
    r.t.link("/usr/bin/setsid", "busybox")
    smi = r.tools["nvidia-smi"]
    smi.cases[f"--query-gpu={STATE_FIELDS} --format=csv,noheader,nounits"] = Invocation(out="".join(rows))
    smi.cases[APPS_QUERY] = Invocation(out="".join(apps))
    # the burn-in's samples (one call with every field: a 580 driver accepts them all), so that
    # `--perf --burn-in` (perf before and after the soak, docs/perf.md) runs on a perf node; without
    # it nvidia-smi's "Invalid combination" answer left the burn-in with no field and no load
    smi.cases[f"--query-gpu={','.join(bfields)} --format=csv,noheader,nounits"] = Invocation(out="".join(brows))
    uuids = [r.states[i]["uuid"] for i in r.present]
    host = r.d["node"]["hostname"]

    secs = {**TOOL_SECONDS, **(cfg.get("tool_seconds") or {})}
    for k, v in secs.items():
        if not (v == "arg" or (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 7200)):
            raise ValueError(f"perf.tool_seconds.{k}: {v!r} is neither seconds (0..7200) nor 'arg'")

    def tool(tname: str, inv: Invocation, key: str | None = None):
        t = r.tools.get(tname) or r.tool(tname, f"{BIN}/{tname}", Invocation(err=f"{tname}: unsupported arguments\n", rc=2))
        if tname in hang:
            inv = Invocation(hang=True)
        elif secs.get(tname) not in (None, 0, 0.0, "0"):
            inv.sleep = secs[tname]
        if key is None:
            t.default = inv
        else:
            t.cases[key] = inv
        return t

    # memory of earlier runs: a drifting node's shims answer run k with every figure x (1 + factor)^k
    drift = cfg.get("drift") or {}
    factor = float(drift.get("factor", 0.0))
    if not -0.5 < factor < 0.5:
        raise ValueError(f"perf.drift.factor {factor!r}: a drift of at most 50 % a run")
    runs = [scaled(cfg, (1 + factor) ** k) for k in range(DRIFT_RUNS if drift else 1)]

    def answer(render, calls: int = 1) -> Invocation:
        """``calls``: the shim's calls in one run (perftest: the server and the client, nodegate/perf/perf.sh
        ng_ib_tests), so that both calls of run k answer run k."""
        outs = tuple(render(c) for c in runs for _ in range(calls))
        return Invocation(out=outs[0], seq=outs if drift else ())

    tool("nvbandwidth", answer(lambda c: nvbandwidth_text(c, n, name)))
    tool("all_reduce_perf", answer(lambda c: nccl_text(c, n, name, host)))
    tool("gpu_burn", answer(lambda c: gpu_burn_text(c, n, name, uuids)))
    tool("dcgmi", Invocation(out=dcgmi_json(n), rc=0), "diag *")
    for tid in PROFTESTER:
        # the spec's default arguments (nodegate/perf/spec.py PROFTESTER_DEFAULT), then -t <id>
        tool("dcgmproftester12", answer(lambda c, t=tid: proftester_text(n, t, c["proftester"][t])),
             " ".join([*PROFTESTER_DEFAULT, "-t", str(tid)]))
    for tname, key, title in (("ib_write_bw", "ib", "RDMA_Write BW Test"), ("ib_read_bw", "ib_read", "RDMA_Read BW Test"),
                              ("ib_send_bw", "ib_send", "Send BW Test")):
        ib = r.tool(tname, f"{BIN}/{tname}", Invocation(err=f"{tname}: no such device\n", rc=1))
        for dev in r.d["infiniband"]:
            def bw(c, d=dev, k=key, t=title):
                v = c["hca"].get(d, c[k]) if k == "ib" else c[k]
                return ib_text(d, float(v), t)
            inv = Invocation(hang=True) if tname in hang else answer(bw, calls=2)
            if not inv.hang:
                inv.sleep = secs.get(tname) or None
            ib.cases[f"-d {dev} *"] = inv
    for verb in ("write", "read", "send"):
        tname = f"ib_{verb}_lat"
        lat = r.tool(tname, f"{BIN}/{tname}", Invocation(err=f"{tname}: no such device\n", rc=1))
        for dev in r.d["infiniband"]:
            def lt(c, d=dev, vb=verb):
                typ, p99 = (c["hca_lat"].get(d) or {}).get(vb, c["lat"][vb])
                return ib_lat_text(d, vb, float(typ), float(p99))
            inv = Invocation(hang=True) if tname in hang else answer(lt, calls=2)
            if not inv.hang:
                inv.sleep = secs.get(tname) or None
            lat.cases[f"-d {dev} *"] = inv
