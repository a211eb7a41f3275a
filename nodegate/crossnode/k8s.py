"""The Kubernetes MPIJob (Kubeflow mpi-operator, ``kubeflow.org/v2beta1``) of one cross-node job,
for sites on Kubernetes: written as evidence and for ``kubectl apply``, never applied by nodegate.

One Worker per node, pinned to it (``kubernetes.io/hostname`` node affinity, one worker per
node by anti-affinity), ``slotsPerWorker`` = ranks per node, each worker asking for that many
``nvidia.com/gpu``; the Launcher runs ``mpirun`` over the operator's hostfile with the payload and
its environment (Azure's AKS NCCL MPIJob waits for the workers: ``launcherCreationPolicy:
WaitForWorkersReady``; ../shared/spec/cross-node-anchors.md 2.1). ``runPolicy`` bounds the job
(``activeDeadlineSeconds``: the job's deadline; ``backoffLimit: 0``: a failure is a result, not
a retry). Validated offline in tests/crossnode/test_k8s.py: the MPIJob against the CRD's schema
(kubeflow/mpi-operator deploy/v2beta1/mpi-operator.yaml), its pod templates against the
Kubernetes API schemas (kubernetes-validate).
"""

from __future__ import annotations

import re

_DNS = re.compile(r"[^a-z0-9-]+")


def k8s_name(s: str) -> str:
    """A DNS-1123 label from a job id (lower case, '-', at most 63 characters)."""
    n = _DNS.sub("-", s.lower()).strip("-")[:63].rstrip("-")
    return n or "nodegate-job"


def mpijob_manifest(job_id: str, nodes: list[str], ranks_per_node: int, argv: list[str], env: dict[str, str], *,
                    image: str, namespace: str = "nodegate", deadline_s: float = 240.0,
                    gpu_resource: str = "nvidia.com/gpu", rdma_resource: str | None = None) -> dict:
    """The MPIJob of one job over ``nodes`` (Kubernetes node names)."""
    name = k8s_name(f"nodegate-xn-{job_id}")
    labels = {"app.kubernetes.io/name": "nodegate-crossnode", "nodegate.io/job": name}
    n = len(nodes) * ranks_per_node
    mpirun = ["mpirun", "-np", str(n), "--map-by", f"ppr:{ranks_per_node}:node", "--bind-to", "none"]
    for k, v in sorted(env.items()):
        mpirun += ["-x", f"{k}={v}"]
    limits = {gpu_resource: ranks_per_node}
    if rdma_resource:
        limits[rdma_resource] = 1
    worker = {
        "replicas": len(nodes),
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "affinity": {
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": list(nodes)}]}]}},
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}]},
                },
                "containers": [{"name": "worker", "image": image, "command": ["/usr/sbin/sshd"], "args": ["-De"],
                                "resources": {"limits": limits},
                                "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}],
            },
        },
    }
    launcher = {
        "replicas": 1,
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "launcher", "image": image, "command": mpirun + list(argv),
                                     "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]},
        },
    }
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "slotsPerWorker": ranks_per_node,
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0,
                          "activeDeadlineSeconds": int(deadline_s)},
            "mpiReplicaSpecs": {"Launcher": launcher, "Worker": worker},
        },
    }
