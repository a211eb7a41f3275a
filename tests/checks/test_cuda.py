"""NG-CUDA-001 (CUDA toolkit minimum) and NG-CUDA-002 (the SKU's minimum driver)."""

import pytest

from nodegate.errors import SpecError
from nodegate.outcomes import Outcome
from nodegate.spec.cuda import at_least, minor_version_minimum, toolkit_minimum

from .fakes import covers, gpu, healthy, run, spec

P, F, S, E = Outcome.PASS, Outcome.FAIL, Outcome.SKIP, Outcome.ERROR


def drv(version, **kw):
    return healthy(nvidia_module_version=version, **kw)


def test_table_values_from_the_release_notes():
    assert toolkit_minimum("12.8") == "570.26" and toolkit_minimum("12.8.0") == "570.26"
    assert toolkit_minimum("12.8.1") == "570.124.06" and toolkit_minimum("13.0") == "580.65.06"
    assert minor_version_minimum(12) == "525.60.13"
    assert at_least("570.124.06", "570.26") and not at_least("535.161.08", "570.26")
    assert at_least("580.95.05", "550") and not at_least("545.29.06", "550")


@covers("NG-CUDA-001")
def test_cuda_unset_skips_naming_the_key():
    r = run("NG-CUDA-001", healthy())
    assert r.outcome is S and r.message.startswith("cuda not set")


@covers("NG-CUDA-001")
def test_cuda_12_8_on_535_fails_and_on_570_passes():
    r = run("NG-CUDA-001", drv("535.161.08"), spec(cuda="12.8"))
    assert r.outcome is F
    assert r.message.startswith("driver 535.161.08 is below CUDA 12.8's minimum 570.26; CUDA 12.x minor version "
                                "compatibility starts at 525.60.13")
    assert run("NG-CUDA-001", drv("570.133.20"), spec(cuda="12.8")).outcome is P
    assert run("NG-CUDA-001", drv("570.86.10"), spec(cuda="12.8.1")).outcome is F


@covers("NG-CUDA-001")
def test_minor_version_compatibility_on_request():
    sp = spec(cuda={"toolkit": "12.8", "compatibility": "minor_version"})
    r = run("NG-CUDA-001", drv("535.161.08"), sp)
    assert r.outcome is P and "minor version compatibility" in r.observed
    assert run("NG-CUDA-001", drv("520.61.05"), sp).outcome is F     # 11.x driver, 12.x toolkit


@covers("NG-CUDA-001")
def test_unknown_toolkit_is_error_and_unquoted_version_is_a_spec_error():
    r = run("NG-CUDA-001", healthy(), spec(cuda="12.7"))
    assert r.outcome is E and "not in nodegate/data/cuda.yaml" in r.message
    with pytest.raises(SpecError, match="quote the version"):
        spec(cuda=12.8)


@covers("NG-CUDA-002")
def test_driver_meets_each_gpus_minimum():
    assert run("NG-CUDA-002", healthy()).outcome is P          # H200 (Hopper) >= 520.61.05
    b300 = healthy(gpus=[gpu(0, name="NVIDIA B300 SXM6 AC", pci_device_id="3182", architecture="Blackwell")],
                   driver_gpus=[])
    r = run("NG-CUDA-002", b300.but(nvidia_module_version="580.95.05"))
    assert r.outcome is F and "needs 600 (SKU profile 3182 (B300 SXM6 AC))" in r.message
    assert run("NG-CUDA-002", b300.but(nvidia_module_version="610.57.04")).outcome is P
    b200 = b300.but(gpus=[gpu(0, name="NVIDIA B200", pci_device_id="2901", architecture="Blackwell")],
                    nvidia_module_version="545.29.06")
    assert run("NG-CUDA-002", b200).outcome is F
    assert run("NG-CUDA-002", b200.but(nvidia_module_version="550.54.15")).outcome is P


@covers("NG-CUDA-002")
def test_unknown_architecture_is_error():
    f = healthy(gpus=[gpu(0, name="X", pci_device_id="9999", architecture="Maxwell")], driver_gpus=[])
    r = run("NG-CUDA-002", f)
    assert r.outcome is E and "no minimum driver known for Maxwell" in r.message
