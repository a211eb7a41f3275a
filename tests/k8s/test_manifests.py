"""examples/k8s/*.yaml validated against the Kubernetes API schemas by kubernetes-validate (PyPI; it
bundles the OpenAPI-derived JSON schemas of Kubernetes 1.25 onwards, so it runs offline), in strict
mode (an unknown field is an error, as ``kubectl apply --validate=strict`` makes it), for the oldest
and the newest Kubernetes it knows. What a schema cannot see is tested beside it: the objects the
manifests refer to exist, selectors select their own pods, the commands pass only real options.
"""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from nodegate.collect_cli import _parser
from tests.bench.helpers import ROOT
from tests.slurm.commands import help_options, invocations

kv = pytest.importorskip(
    "kubernetes_validate",
    reason="kubernetes-validate is not installed (a test dependency in pyproject.toml: `make venv`): "
           "the Kubernetes manifests are NOT validated against the API schemas")

K8S = ROOT / "examples" / "k8s"
FILES = sorted(K8S.glob("*.yaml"))
#: the oldest schema set kubernetes-validate bundles (1.25 in 1.37.0: Pod Security admission GA,
#: Indexed Jobs GA since 1.24) and its newest
VERSIONS = (kv.utils.all_versions()[0], kv.latest_version())


def _docs() -> list[tuple[str, dict]]:
    out = []
    for f in FILES:
        for d in yaml.safe_load_all(f.read_text()):
            if d is not None:
                out.append((f"{f.name}:{d['kind']}/{d['metadata']['name']}", d))
    return out


DOCS = _docs()
BY_KIND = {(d["kind"], d["metadata"]["name"]): d for _, d in DOCS}


def test_the_examples_are_the_expected_objects():
    assert [f.name for f in FILES] == ["collect-daemonset.yaml", "collect-job.yaml", "common.yaml"]
    assert sorted(BY_KIND) == [("ConfigMap", "nodegate-spec"), ("DaemonSet", "nodegate-collect"),
                               ("Job", "nodegate-collect"), ("Job", "nodegate-report"),
                               ("Namespace", "nodegate"), ("PersistentVolumeClaim", "nodegate-runs")]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name, doc", DOCS, ids=[n for n, _ in DOCS])
def test_manifest_validates_against_the_kubernetes_schema(name, doc, version):
    # validate() raises ValidationError on a violation; it returns the schema version it used
    assert kv.validate(doc, version, strict=True) == ".".join(version.split(".")[:2])


@pytest.mark.parametrize("break_it, field", [
    (lambda j: j["spec"].__setitem__("backofLimit", 0), "backofLimit"),                 # a typo
    (lambda j: j["spec"].__setitem__("completions", "64"), "'64' is not of type"),      # a string count
    (lambda j: j["spec"]["template"]["spec"]["containers"][0].pop("name"), "'name' is a required property"),
])
def test_the_validator_rejects_a_broken_job(break_it, field):
    """The schemas are really applied: the same Job with one mistake fails."""
    job = copy.deepcopy(BY_KIND[("Job", "nodegate-collect")])
    break_it(job)
    with pytest.raises(kv.ValidationError) as e:
        kv.validate(job, VERSIONS[-1], strict=True)
    assert field in str(e.value.message)


def test_every_object_lives_in_the_namespace_common_yaml_creates():
    for name, d in DOCS:
        if d["kind"] != "Namespace":
            assert d["metadata"].get("namespace") == "nodegate", name


def test_namespace_admits_privileged_pods():
    """The collect pods are privileged, hostPID, with a hostPath: Pod Security admission rejects
    them in a namespace enforcing baseline/restricted (a common cluster default)."""
    labels = BY_KIND[("Namespace", "nodegate")]["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"


def _pod_specs():
    for (kind, name), d in BY_KIND.items():
        if kind in ("Job", "DaemonSet"):
            yield f"{kind}/{name}", d["spec"]["template"]


def test_volumes_refer_to_the_configmap_and_claim_of_common_yaml():
    for name, tpl in _pod_specs():
        for v in tpl["spec"]["volumes"]:
            if "configMap" in v:
                assert ("ConfigMap", v["configMap"]["name"]) in BY_KIND, name
            if "persistentVolumeClaim" in v:
                assert ("PersistentVolumeClaim", v["persistentVolumeClaim"]["claimName"]) in BY_KIND, name
        mounts = {m["name"] for c in tpl["spec"]["containers"] for m in c["volumeMounts"]}
        assert mounts == {v["name"] for v in tpl["spec"]["volumes"]}, name


def test_configmap_spec_is_a_valid_nodegate_spec():
    from nodegate.spec import load_spec

    raw = yaml.safe_load(BY_KIND[("ConfigMap", "nodegate-spec")]["data"]["spec.yml"])
    spec = load_spec(raw["nodegate"], "examples/k8s/common.yaml")
    assert spec.gpu.count == 8


def test_selectors_select_their_own_pods():
    ds = BY_KIND[("DaemonSet", "nodegate-collect")]
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= labels.items()
    job = BY_KIND[("Job", "nodegate-collect")]
    term = job["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"][0]
    # one pod per node only if the anti-affinity matches the Job's own pods, per hostname
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= job["spec"]["template"]["metadata"]["labels"].items()
    assert job["spec"]["completions"] == job["spec"]["parallelism"]


def _shell(tpl) -> str:
    return "\n".join(" ".join(c.get("command", []) + c.get("args", [])) for c in tpl["spec"]["containers"])


def test_commands_pass_only_options_that_exist():
    collect_opts = help_options(_parser().format_help())
    r = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    pytest_opts = help_options(r.stdout)
    seen = {}
    for name, tpl in _pod_specs():
        sh = _shell(tpl)
        for opts in invocations(sh, "nodegate-collect"):
            assert set(opts) <= collect_opts, (name, opts)
            seen[name] = opts
        for opts in invocations(sh, "pytest suites"):
            assert set(opts) <= pytest_opts, (name, opts)
            seen[name] = opts
    assert seen == {
        "DaemonSet/nodegate-collect": ["--out", "--root", "--spec", "--command-timeout", "--probe-timeout"],
        "Job/nodegate-collect": ["--out", "--root", "--spec", "--command-timeout", "--probe-timeout"],
        "Job/nodegate-report": ["--tb", "--replay", "--reports-dir"],
    }


def test_collect_writes_where_the_report_job_replays():
    ds = _shell(BY_KIND[("DaemonSet", "nodegate-collect")]["spec"]["template"])
    job = _shell(BY_KIND[("Job", "nodegate-collect")]["spec"]["template"])
    rep = _shell(BY_KIND[("Job", "nodegate-report")]["spec"]["template"])
    for sh in (ds, job):
        assert '--out "/runs/$RUN_ID/bundles"' in sh
    assert '--replay "/runs/$RUN_ID/bundles"' in rep and '--reports-dir "/runs/$RUN_ID/reports"' in rep
