"""device/run.sh step: compare the GPU facts of the NVML path and the nvidia-smi XML path.

Usage: python3 device/compare.py NVML_BUNDLE_DIR SMI_BUNDLE_DIR OUT_PREFIX

- Same bundle (the --gpu-source nvml run, which holds both nvml.json and smi.qx, read the same
  second): mapping (nodegate.nvml) vs XML parser (nodegate.parsers.smi_xml), field by field on
  every field both carry. A difference outside nodegate.nvml.compare.LIVE_FIELDS is a mapping
  mismatch.
- Across runs: NVML facts of run 1 vs XML facts of run 2 (seconds apart; live fields may move).
- Which source NodeFacts chose in each run (``gpu_source``: nvml / smi_xml).
Writes OUT_PREFIX.txt (for people) and OUT_PREFIX.json. Exit 0 no static mismatch, 1 static
mismatch, 2 NVML unusable or evidence missing. Read-only: reads bundle directories only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nodegate.bundle import Bundle, discover  # noqa: E402
from nodegate.collect import NodeFacts  # noqa: E402
from nodegate.errors import NodegateError  # noqa: E402
from nodegate.nvml import gpus_from_nvml_json, nvml_field_errors, nvml_status, nvml_system  # noqa: E402
from nodegate.nvml.compare import compare_gpu_facts, pair_by_bus_id  # noqa: E402
from nodegate.parsers.smi_xml import parse_smi_xml  # noqa: E402


def _bundle(d: str) -> Bundle:
    dirs = discover(Path(d))
    if len(dirs) != 1:
        raise SystemExit(f"compare: expected one node bundle under {d}, found {len(dirs)}")
    return Bundle.load(dirs[0])


def _source(b: Bundle) -> str:
    try:
        return NodeFacts(b).gpu_source
    except Exception as e:  # noqa: BLE001 - report, never crash the device run
        return f"error: {type(e).__name__}: {e}"


def _pairs(nv, smi, lines, out, label):
    static = 0
    for bus, a, b in pair_by_bus_id(nv, smi):
        if a is None or b is None:
            lines.append(f"[{label}] {bus}: only in {'smi' if a is None else 'nvml'}")
            static += 1
            out.append({"bus_id": bus, "missing_in": "nvml" if a is None else "smi"})
            continue
        compared, diffs = compare_gpu_facts(a, b)
        st = [d for d in diffs if not d.live]
        static += len(st)
        lines.append(f"[{label}] GPU {a.index} {bus} {a.name} serial {a.serial}: {len(compared)} fields "
                     f"compared, {len(st)} static mismatches, {len(diffs) - len(st)} live differences")
        for d in diffs:
            lines.append(f"    {'LIVE ' if d.live else 'DIFF '}{d.path}: nvml={d.left!r} smi={d.right!r}")
        out.append({"bus_id": bus, "compared": compared,
                    "diffs": [{"path": d.path, "nvml": repr(d.left), "smi": repr(d.right), "live": d.live}
                              for d in diffs]})
    return static


def main(argv: list[str]) -> int:
    nvml_dir, smi_dir, prefix = argv[1:4]
    b1, b2 = _bundle(nvml_dir), _bundle(smi_dir)
    lines: list[str] = []
    res: dict = {"gpu_source": {"nvml_run": _source(b1), "smi_run": _source(b2)}}
    lines.append(f"NodeFacts.gpu_source: --gpu-source nvml run -> {res['gpu_source']['nvml_run']}, "
                 f"--gpu-source smi run -> {res['gpu_source']['smi_run']}")
    lines.append(f"smi run has nvml.json: {b2.has('nvml.json')} (expected False)")
    rc = 0
    try:
        nv_text = b1.text("nvml.json")
        st = nvml_status(nv_text)
        res["nvml_status"] = {"kind": st.kind, "error": st.error, "message": st.message}
        lines.append(f"NVML status: {st.kind} {st.describe()}")
        if not st.usable:
            raise NodegateError(st.describe())
        sysv = nvml_system(nv_text)
        nv1 = gpus_from_nvml_json(nv_text)
        res["field_errors"] = {str(k): v for k, v in nvml_field_errors(nv_text).items()}
        smi1 = parse_smi_xml(b1.text("smi.qx"))
        smi2 = parse_smi_xml(b2.text("smi.qx"))
    except NodegateError as e:
        lines.append(f"cannot compare: {e}")
        res["error"] = str(e)
        rc = 2
    else:
        lines.append(f"driver: NVML {sysv.driver_version} (NVML {sysv.nvml_version}, CUDA "
                     f"{sysv.cuda_driver_version}, lib {sysv.library_version}, module "
                     f"{sysv.kernel_module_version}); nvidia-smi XML {smi1.driver_version}")
        lines.append(f"NVML field errors: {res['field_errors'] or 'none'}")
        res["driver_versions"] = {"nvml": sysv.driver_version, "smi_xml": smi1.driver_version}
        static = 0 if sysv.driver_version == smi1.driver_version else 1
        res["same_bundle"], res["across_runs"] = [], []
        static += _pairs(nv1, smi1.gpus, lines, res["same_bundle"], "same bundle")
        _pairs(nv1, smi2.gpus, lines, res["across_runs"], "across runs")
        res["static_mismatches_same_bundle"] = static
        lines.append(f"RESULT: {static} static mismatch(es) between NVML and nvidia-smi on the same bundle")
        rc = 1 if static else 0
    Path(prefix + ".txt").write_text("\n".join(lines) + "\n")
    Path(prefix + ".json").write_text(json.dumps(res, indent=1, sort_keys=True, default=str) + "\n")
    print("\n".join(lines))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
