"""The Kubernetes MPIJob of a cross-node job, validated offline like examples/k8s (tests/k8s): the
MPIJob against the mpi-operator CRD's own schema (kubeflow/mpi-operator@caa3c47f
deploy/v2beta1/mpi-operator.yaml, its openAPIV3Schema with the pod templates cut out:
tests/crossnode/data/mpijob-v2beta1-schema.json), strictly (an unknown field is an error), and each
pod template against the Kubernetes API schemas (kubernetes-validate, as a Job's template)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from nodegate.crossnode.k8s import k8s_name, mpijob_manifest
from nodegate.crossnode.payloads import nccl_command
from nodegate.crossnode.spec import CrossnodeSpec

kv = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed (a test dependency "
                                                       "in pyproject.toml: `make venv`): the MPIJob is NOT validated")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed (kubernetes-validate's dependency)")

SCHEMA = json.loads((Path(__file__).resolve().parent / "data" / "mpijob-v2beta1-schema.json").read_text())


def strict(schema):
    """kubectl --validate=strict: an object with declared properties admits no other field."""
    s = copy.deepcopy(schema)

    def walk(o):
        if isinstance(o, dict):
            if o.get("type") == "object" and "properties" in o and "additionalProperties" not in o:
                o["additionalProperties"] = False
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(s)
    return s


def manifest():
    argv, env = nccl_command("all_reduce_perf", CrossnodeSpec(), 8)
    return mpijob_manifest("r01-screen-all_reduce_perf-1a2b3c4d5e", ["gpu01", "gpu02"], 8, argv, env,
                           image="nvcr.io/nvidia/pytorch:24.05-py3", rdma_resource="rdma/ib")


def test_the_mpijob_validates_against_the_crd_schema_strictly():
    jsonschema.validate(manifest(), strict(SCHEMA))


def test_the_validator_rejects_a_broken_mpijob():
    m = manifest()
    m["spec"]["slotsPerWorkr"] = 8
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(m, strict(SCHEMA))
    m = manifest()
    m["spec"]["slotsPerWorker"] = "8"                  # a string count
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(m, strict(SCHEMA))


@pytest.mark.parametrize("role", ["Launcher", "Worker"])
def test_pod_templates_validate_against_the_kubernetes_api(role):
    tmpl = manifest()["spec"]["mpiReplicaSpecs"][role]["template"]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "t"},
           "spec": {"template": dict(tmpl, spec=dict(tmpl["spec"], restartPolicy="Never"))}}
    version = kv.latest_version()
    assert kv.validate(job, version, strict=True)


def test_the_job_is_pinned_one_worker_per_node_and_bounded():
    m = manifest()
    w = m["spec"]["mpiReplicaSpecs"]["Worker"]
    assert w["replicas"] == 2 and m["spec"]["slotsPerWorker"] == 8
    terms = w["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["gpu01", "gpu02"]
    cmd = m["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert cmd[:3] == ["mpirun", "-np", "16"] and "NCCL_ALGO=RING" in cmd and "all_reduce_perf" in cmd
    assert m["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 0, "activeDeadlineSeconds": 240}
    assert m["metadata"]["name"] == k8s_name("nodegate-xn-r01-screen-all_reduce_perf-1a2b3c4d5e")
    assert len(k8s_name("x" * 100)) <= 63 and k8s_name("R01_Screen") == "r01-screen"
