#!/usr/bin/env bash
# Downloads the Python KernelFoundry 0.5.0 and the packages its evaluation path needs as wheels into
# bench/wheels/ (pinned in bench/python_kf_requirements.txt), for bench/side_by_side.py to install
# offline on the GPU machine. Run from the repository root on a machine that reaches PyPI.
#   bash bench/fetch_python_kf.sh                       # wheels for CPython 3.12 (the GPU machine's),
#                                                       # 14 MiB
#   PYTHON_VERSIONS="3.12 3.11" bash bench/fetch_python_kf.sh   # compiled ones for 3.11 too (the pins
#                                                       # need >= 3.11: jiter 0.19 has no 3.10 wheel)
#   FULL=1 bash bench/fetch_python_kf.sh                # with boto3/botocore too (+16 MiB). Without
#                                                       # them (the default, to keep what the GPU
#                                                       # machine is sent small) side_by_side.py puts
#                                                       # empty modules in: 0.5.0 imports both (in
#                                                       # inference_server.py) and uses neither
set -euo pipefail
req=bench/python_kf_requirements.txt
dest=bench/wheels
versions=${PYTHON_VERSIONS:-3.12}
[ -f "$req" ] || { echo "run from the repository root ($req not found)" >&2; exit 1; }
mkdir -p "$dest"
pip=(python3 -m pip)
# Published as source archives only: built here into pure-Python wheels (py3-none-any).
sdist_only='^(pytest-dependency|antlr4-python3-runtime)=='
# Compiled: one wheel per CPython version. Everything else is py3-none-any (or abi3).
compiled='^(sqlalchemy|greenlet|pydantic-core|jiter)=='
slim='^(boto3|botocore|s3transfer|jmespath)=='
pins=$(grep -Ev '^\s*(#|$)' "$req")
[ "${FULL:-0}" = 1 ] || pins=$(grep -Ev "$slim" <<<"$pins")

"${pip[@]}" wheel -q --no-deps -w "$dest" $(grep -E "$sdist_only" <<<"$pins")
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64)
first=1
for v in $versions; do
  abi=cp${v/./}
  if [ $first = 1 ]; then sel=$(grep -Ev "$sdist_only" <<<"$pins"); else sel=$(grep -E "$compiled" <<<"$pins"); fi
  first=0
  "${pip[@]}" download -q --no-deps --only-binary=:all: --python-version "$v" --implementation cp \
    --abi "$abi" "${platforms[@]}" -d "$dest" $sel
done
# A wheel left from an earlier pin would make two versions of one package: keep only the pinned.
for f in "$dest"/*.whl; do
  name=$(basename "$f" | cut -d- -f1 | tr '_A-Z' '-a-z')
  ver=$(basename "$f" | cut -d- -f2)
  grep -qiE "^${name}==${ver}\$" <<<"$(tr '_A-Z' '-a-z' <<<"$pins")" || { echo "removing $f (not pinned)"; rm -f "$f"; }
done
ls "$dest" | wc -l | xargs echo "wheels:"
du -sh "$dest"
