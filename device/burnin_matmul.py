"""A real GPU load for nodegate's burn-in: bf16 matrix products on every visible GPU for N seconds.

Used as the ``command`` load by device/burnin.sh (``burnin.command: python3 device/burnin_matmul.py
--seconds {seconds}``). One thread per GPU (CUDA kernels release the GIL); prints one progress line
per GPU every 10 s and a summary; exit 0 when every GPU ran the whole time, 1 on any CUDA error.
Writes nothing to disk.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time


def burn(dev: int, seconds: float, n: int, out: dict) -> None:
    import torch

    try:
        torch.cuda.set_device(dev)
        a = torch.randn(n, n, device=f"cuda:{dev}", dtype=torch.bfloat16)
        b = torch.randn(n, n, device=f"cuda:{dev}", dtype=torch.bfloat16)
        c = torch.empty(n, n, device=f"cuda:{dev}", dtype=torch.bfloat16)
        end = time.monotonic() + seconds
        last = time.monotonic()
        iters = 0
        while time.monotonic() < end:
            for _ in range(20):
                torch.matmul(a, b, out=c)
            torch.cuda.synchronize(dev)
            iters += 20
            now = time.monotonic()
            if now - last >= 10:
                tflops = 2 * n ** 3 * iters / (now - (end - seconds)) / 1e12
                print(f"gpu{dev}: {iters} matmuls {tflops:.1f} TFLOP/s", flush=True)
                last = now
        out[dev] = ("ok", iters, 2 * n ** 3 * iters / seconds / 1e12)
    except Exception as e:  # noqa: BLE001 - reported per GPU, exit 1
        out[dev] = ("error", 0, f"{type(e).__name__}: {e}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--n", type=int, default=8192, help="matrix size (n x n bf16)")
    a = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device visible to torch", flush=True)
        return 2
    count = torch.cuda.device_count()
    print(f"burning {count} GPU(s) for {a.seconds:g}s with {a.n}x{a.n} bf16 matmuls", flush=True)
    out: dict = {}
    threads = [threading.Thread(target=burn, args=(d, a.seconds, a.n, out), daemon=True) for d in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = 0
    for d in range(count):
        st = out.get(d, ("error", 0, "thread died"))
        print(f"gpu{d}: {st[0]} {st[1]} matmuls {st[2] if st[0] == 'error' else f'{st[2]:.1f} TFLOP/s avg'}", flush=True)
        bad += st[0] != "ok"
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
