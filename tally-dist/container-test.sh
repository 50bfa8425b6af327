#!/usr/bin/env bash
# The container image, built and run here without a registry or a daemon: a Debian base made by
# debootstrap (with Java 17), the image built by podman from target/container, then run: it must
# answer /healthz, refuse a call without the token and count one with it.
#   tally-dist/container-test.sh        (after mvn package; as root on Debian; about 6 minutes
#                                        the first time, while debootstrap fetches the base)
# Podman runs the container with runc, the host's network and the host's limits: crun refuses
# cgroups in hybrid mode, and a sandbox may not raise RLIMIT_NOFILE/NPROC.
set -euo pipefail
cd "$(dirname "$0")"
for c in podman runc debootstrap curl; do
  command -v "$c" >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap curl; break; }
done
[ -f target/container/tally.jar ] || { echo "no target/container/tally.jar: run mvn package first" >&2; exit 2; }
version=$(sed -n 's:.*<version>\(.*\)</version>.*:\1:p' pom.xml | head -1)
base=localhost/tally-base:bookworm
run=(podman --runtime runc)
limits=(--ulimit "nofile=1024:1024" --ulimit "nproc=4096:4096" --network host)
if ! "${run[@]}" image exists "$base"; then
  rootfs=$(mktemp -d)
  debootstrap --variant=minbase --include=openjdk-17-jre-headless bookworm "$rootfs" \
    http://deb.debian.org/debian >/dev/null
  tar -C "$rootfs" -c . | "${run[@]}" import - "$base" >/dev/null
  rm -rf "$rootfs"
fi
"${run[@]}" build -q "${limits[@]}" --build-arg BASE="$base" -t "localhost/tally:$version" target/container >/dev/null
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
token=$(openssl rand -hex 24)
name=tally-container-test-$$
"${run[@]}" run -d --name "$name" "${limits[@]}" -e TALLY_TOKEN="$token" \
  "localhost/tally:$version" --store mem: --port "$port" >/dev/null
trap '"${run[@]}" rm -f -t 2 "$name" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 300); do
  curl -fs -m 2 "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.2
done
fail() { echo "FAIL: $*" >&2; "${run[@]}" logs "$name" >&2 || true; exit 1; }
health=$(curl -s "http://127.0.0.1:$port/healthz") || fail "no /healthz answer"
[[ $health == *'"status":"ok"'* ]] || fail "/healthz said $health"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/counters/c/incr")
[ "$code" = 401 ] || fail "a call without the token got $code, not 401"
value=$(curl -s -X POST -H "Authorization: Bearer $token" "http://127.0.0.1:$port/v1/counters/c/incr")
[ "$value" = '{"key":"c","value":1}' ] || fail "incr answered $value"
echo "PASS: localhost/tally:$version answered /healthz ($health), 401 without the token, and counted with it"
