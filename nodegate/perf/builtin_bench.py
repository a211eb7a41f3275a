"""nodegate's built-in measurement, run ON THE NODE by the spec'd interpreter (``perf.python``)
as ``python -c <this file's text> <seconds>``; it imports only the standard library and PyTorch.

Prints ONE JSON object (nodegate/parsers/perf_json.py schema) on its last line:
per GPU bf16 GEMM TFLOPS (8192^3 matmuls: 2*n^3 flop each), pinned host-to-device and
device-to-host copy bandwidth (256 MiB, GB/s = 10^9 B/s as nvbandwidth prints), device-local
copy bandwidth (1 GiB tensor copy, bytes read + written per second, the convention of DCGM's
memory bandwidth and BabelStream's copy), P2P copy bandwidth for every ordered GPU pair
(256 MiB), and a data check after each copy (a mismatch is reported as a data error). Never
changes a node setting (no clocks, no power limit); allocates and frees its own memory only.
"""

import json
import sys
import time


def _timed(fn, sync, seconds):
    fn()
    sync()
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        sync()
        dt = time.perf_counter() - t0
        if dt >= seconds or n >= 10000:
            return n, dt


def main(seconds):
    out = {"nodegate_perf": 1, "measurements": [], "errors": [], "invalid": []}
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - reported, not raised
        out["invalid"].append(f"PyTorch not importable: {type(e).__name__}: {e}")
        return out
    if not torch.cuda.is_available():
        out["invalid"].append("torch.cuda.is_available() is False")
        return out
    n = torch.cuda.device_count()
    out["torch"] = torch.__version__
    M = out["measurements"]
    for g in range(n):
        dev = torch.device("cuda", g)
        sync = lambda d=dev: torch.cuda.synchronize(d)  # noqa: E731
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        k, dt = _timed(lambda: torch.matmul(a, b), sync, seconds)
        M.append({"metric": "gemm_bf16", "value": round(2 * 8192 ** 3 * k / dt / 1e12, 2), "unit": "TFLOPS",
                  "gpu": g, "engine": "sm", "source": "torch.matmul bf16 8192^3"})
        del a, b
        size = 256 << 20
        host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        host.random_(0, 255)
        d = torch.empty(size, dtype=torch.uint8, device=dev)
        k, dt = _timed(lambda: d.copy_(host, non_blocking=True), sync, seconds)
        M.append({"metric": "h2d", "value": round(size * k / dt / 1e9, 2), "unit": "GB/s", "gpu": g,
                  "engine": "ce", "source": "pinned 256 MiB copy_"})
        back = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        k, dt = _timed(lambda: back.copy_(d, non_blocking=True), sync, seconds)
        M.append({"metric": "d2h", "value": round(size * k / dt / 1e9, 2), "unit": "GB/s", "gpu": g,
                  "engine": "ce", "source": "pinned 256 MiB copy_"})
        if not torch.equal(back, host):
            out["errors"].append({"gpu": g, "what": "host->device->host round trip changed the data"})
        big = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(big)
        k, dt = _timed(lambda: dst.copy_(big), sync, seconds)
        M.append({"metric": "local_copy", "value": round(2 * big.numel() * k / dt / 1e9, 1), "unit": "GB/s",
                  "gpu": g, "engine": "sm", "source": "1 GiB device copy_, read + write"})
        del big, dst, d, host, back
        torch.cuda.empty_cache()
    for s in range(n):
        for t in range(n):
            if s == t:
                continue
            size = 256 << 20
            src = torch.empty(size, dtype=torch.uint8, device=torch.device("cuda", s)).random_(0, 255)
            dst = torch.empty(size, dtype=torch.uint8, device=torch.device("cuda", t))

            def sync():
                torch.cuda.synchronize(s)
                torch.cuda.synchronize(t)
            k, dt = _timed(lambda: dst.copy_(src, non_blocking=True), sync, seconds / 2)
            M.append({"metric": "p2p", "value": round(size * k / dt / 1e9, 2), "unit": "GB/s", "gpu": s, "peer": t,
                      "engine": "ce", "source": "256 MiB copy_ GPU s -> GPU t"})
            if not torch.equal(dst.to(src.device), src):
                out["errors"].append({"gpu": t, "what": f"P2P copy GPU {s} -> GPU {t} changed the data"})
            del src, dst
    return out


if __name__ == "__main__":
    try:
        secs = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    except ValueError:
        secs = 2.0
    print(json.dumps(main(secs)), flush=True)
