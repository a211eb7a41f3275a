"""Issue 39.5: the NVLink domain of an NVL72 compute tray (GB200: NVLink switches outside the
node, skus.yaml nvswitches: external) is read (nvidia-smi -q fabric CliqueId / ClusterUUID; XML
fabric/cliqueId, fabric/clusterUuid as in the H200 capture's DTD v13 output) and judged: the
node's GPUs share one domain, and the spec can name it (fabric.cluster_uuid, fabric.clique_id)."""

from __future__ import annotations

from nodegate.facts import NA
from nodegate.outcomes import Outcome
from nodegate.parsers.smi_text import parse_smi_text

from .fakes import gpu, healthy, run, spec

UUID = "3a6f1b2c-7d4e-4f5a-9b8c-0d1e2f3a4b5c"


def tray(domains):
    gs = [gpu(index=i, bus=f"00{b}:01:00.0", name="NVIDIA GB200", pci_device_id="2941", architecture="Blackwell",
              fabric_state="Completed", fabric_status="Success", fabric_health="Healthy",
              fabric_cluster_uuid=u, fabric_clique_id=c)
          for i, (b, (u, c)) in enumerate(zip(("08", "09", "18", "19"), domains))]
    return healthy(gpus=gs, nvswitches=[])


def test_one_domain_passes_and_is_shown():
    r = run("NG-FAB-001", tray([(UUID, "32766")] * 4), gpu=0)
    assert r.outcome is Outcome.PASS, r
    assert f"NVLink domain {UUID} clique 32766" in r.observed


def test_a_gpu_in_another_domain_fails():
    f = tray([(UUID, "32766")] * 3 + [("9f9f9f9f-0000-4000-8000-000000000001", "32766")])
    assert run("NG-FAB-001", f, gpu=0).outcome is Outcome.PASS
    r = run("NG-FAB-001", f, gpu=3)
    assert r.outcome is Outcome.FAIL and "registered in different NVLink domains" in r.message


def test_the_spec_names_the_domain():
    f = tray([(UUID, "32766")] * 4)
    assert run("NG-FAB-001", f, spec(fabric={"cluster_uuid": UUID, "clique_id": "32766"}), gpu=1).outcome is Outcome.PASS
    r = run("NG-FAB-001", f, spec(fabric={"cluster_uuid": "00000000-1111-2222-3333-444444444444"}), gpu=1)
    assert r.outcome is Outcome.FAIL and "not fabric.cluster_uuid" in r.message
    r = run("NG-FAB-001", tray([(NA, NA)] * 4), spec(fabric={"cluster_uuid": UUID}), gpu=0)
    assert r.outcome is Outcome.ERROR and "reports no NVLink domain" in r.message


def test_the_text_form_reads_the_domain():
    text = f"""==============NVSMI LOG==============
Driver Version                            : 580.95.05
Attached GPUs                             : 1
GPU 00000018:01:00.0
    Product Name                          : NVIDIA GB200
    Fabric
        State                             : Completed
        Status                            : Success
        CliqueId                          : 32766
        ClusterUUID                       : {UUID}
        Health
            Summary                       : Healthy
"""
    (g,) = parse_smi_text(text).gpus
    assert (g.fabric_state, g.fabric_clique_id, g.fabric_cluster_uuid) == ("Completed", "32766", UUID)
    assert g.pci_bus_id == "0018:01:00.0"
