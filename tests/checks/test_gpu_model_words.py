"""Issue 39.3: gpu.model matches by whole words against the known product names
(nodegate/data/gpu_products.yaml), and gpu.device_id pins the exact part.

Product names are the strings nvidia-smi prints (product_name), as seen in public outputs:
"NVIDIA GH200 480GB" (GH200 nodes, NVIDIA/open-gpu-kernel-modules#911 and the Grace Hopper sample
of this repository), "NVIDIA H200 NVL", "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL",
"NVIDIA B200", "NVIDIA GB200" (NVIDIA/dcgm-exporter#581), "NVIDIA RTX PRO 6000 Blackwell
Server Edition" / "... Workstation Edition" / "... Max-Q Workstation Edition".
"""

from __future__ import annotations

import pytest

from nodegate.errors import SpecError
from nodegate.outcomes import Outcome
from nodegate.spec.products import model_matches, resolve

from .fakes import gpu, healthy, run, spec

CASES = [
    # (gpu.model, product_name, accepts?)
    ("H200", "NVIDIA GH200 480GB", False),          # the case: a substring match accepted it
    ("H200", "NVIDIA H200 NVL", False),
    ("H200", "NVIDIA H200", True),
    ("H200 NVL", "NVIDIA H200 NVL", True),
    ("GH200", "NVIDIA GH200 480GB", True),
    ("GH200", "NVIDIA GH200 144G HBM3e", True),
    ("H100", "NVIDIA H100 80GB HBM3", True),
    ("H100", "NVIDIA H100 NVL", False),
    ("H100", "NVIDIA H100 PCIe", False),
    ("H100 80GB HBM3", "NVIDIA H100 80GB HBM3", True),
    ("H100 80GB HBM3", "NVIDIA H100 NVL", False),
    ("B200", "NVIDIA GB200", False),
    ("GB200", "NVIDIA GB200", True),
    ("B200", "NVIDIA B200", True),
    ("B300", "NVIDIA B300 SXM6 AC", True),
    ("RTX PRO 6000 Blackwell Server Edition", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", False),
    ("RTX PRO 6000 Blackwell Workstation Edition", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", False),
    ("RTX PRO 6000 Blackwell Server Edition", "NVIDIA RTX PRO 6000 Blackwell Server Edition", True),
    ("RTX PRO 6000", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", True),   # unlisted: its words
    ("a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB", True),
    ("A100", "NVIDIA A100-SXM4-40GB", True),
    ("L40", "NVIDIA L40S", False),
]


@pytest.mark.parametrize("model, product, ok", CASES, ids=[f"{m}|{p}" for m, p, _ in CASES])
def test_model_matches_by_whole_words(model, product, ok):
    assert model_matches(model, product) is ok
    r = run("NG-INV-002", healthy(gpus=[gpu(name=product)]), spec(gpu={"model": model}))
    assert r.outcome is (Outcome.PASS if ok else Outcome.FAIL), r


def test_a_refusal_names_the_product_it_is():
    r = run("NG-INV-002", healthy(gpus=[gpu(name="NVIDIA GH200 480GB")]), spec(gpu={"model": "H200"}))
    assert "model 'NVIDIA GH200 480GB' is not 'H200' (it is the GH200" in r.message
    assert resolve("NVIDIA H200 NVL") == "H200 NVL"


@pytest.mark.parametrize("want, dev, outcome", [
    ("0x2335", "2335", Outcome.PASS), ("2335", "2335", Outcome.PASS), (["0x233b", "0x2335"], "2335", Outcome.PASS),
    ("0x233b", "2335", Outcome.FAIL), ("0x2335", None, Outcome.ERROR), ("0x2335", "[REDACTED]", Outcome.ERROR),
])
def test_gpu_device_id_pins_the_exact_part(want, dev, outcome):
    r = run("NG-INV-002", healthy(gpus=[gpu(pci_device_id=dev)]), spec(gpu={"device_id": want}))
    assert r.outcome is outcome, r
    if outcome is Outcome.FAIL:
        assert "PCI device id 2335 is not gpu.device_id 233b" in r.message


@pytest.mark.parametrize("bad", ["23355", "zz12", [], ["0x2335", 7]])
def test_gpu_device_id_is_validated(bad):
    with pytest.raises((SpecError, ValueError)):
        spec(gpu={"device_id": bad})
