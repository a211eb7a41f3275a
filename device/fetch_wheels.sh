#!/bin/sh
# Fetch, HERE (a machine with pip and network), the wheels device/run.sh installs on a GPU
# machine that has no network (the lent H200: Python 3.12, x86-64, nothing reachable).
# They land in .whl/ (ignored by git; name it in the device tool's `carry`). ~20 MiB.
# Versions are the ones this project is tested with (.venv); nvidia-ml-py, PyYAML, jinja2 and
# markupsafe are already in the H200 image (/work/.library/device/KINDS.md) and are not fetched.
set -eu
cd "$(dirname "$0")/.."
PYV=${PYV:-3.12}
PIP=${PIP:-python3 -m pip}
mkdir -p .whl
PLAT="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_34_x86_64"
# shellcheck disable=SC2086
$PIP download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp $PLAT -d .whl \
  pytest-testinfra==10.2.2 paramiko==5.1.0 bcrypt==5.0.0 cryptography==50.0.2 cffi==2.1.1 pycparser==3.12 \
  pynacl==1.6.2 invoke==3.0.3 pytest-html==4.2.0 pytest-metadata==3.1.1 defusedxml==0.7.1 \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  typing-extensions==4.16.0 pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.4 pygments==2.21.0 \
  pytest-xdist==3.8.0 execnet==2.1.2 ansible-core==2.19.14 resolvelib==1.2.1
ls -1 .whl
du -sh .whl
