#!/usr/bin/env bash
# HTTP throughput of `tally serve`: POST /v1/counters/x/incr next to GET /ping (a route that does
# no store call and no JSON parsing), alternating in one run against one server process, with
# keep-alive, on loopback. Needs wrk (Debian: apt-get install wrk).
#
#   tally-server/bench/http-bench.sh [STORE_URI] [CONNECTIONS] [SECONDS] [ROUNDS]
#   tally-server/bench/http-bench.sh mem: 16 5 10
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
store="${1:-mem:}"; conns="${2:-16}"; secs="${3:-5}"; rounds="${4:-10}"
jar="$root/tally-server/target/tally.jar"
[ -f "$jar" ] || (cd "$root" && mvn -B -q -pl tally-server -am package -DskipTests)
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 2; }

work="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/incr.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"delta":1}'
wrk.headers["Content-Type"] = "application/json"
LUA

java ${TALLY_JAVA_OPTS:-} -jar "$jar" serve --store "$store" --port 0 ${TALLY_SERVE_OPTS:-} > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/out" 2>/dev/null && break; sleep 0.1; done
url="$(sed -n 's/^listening on //p' "$work/out")"
[ -n "$url" ] || { cat "$work/err" >&2; exit 1; }

rate() { sed -n 's/^Requests\/sec: *//p'; }
echo "server: $url  store: $store  wrk: 1 thread, $conns connections, ${secs}s x $rounds rounds each" >&2
wrk -t1 -c"$conns" -d5s "$url/ping" > /dev/null                       # warm-up
wrk -t1 -c"$conns" -d5s -s "$work/incr.lua" "$url/v1/counters/x/incr" > /dev/null
ping_total=0; incr_total=0; ratios=()
for r in $(seq "$rounds"); do
  # adjacent pairs, alternating which goes first, so drifting machine load hits both alike
  if (( r % 2 )); then
    p=$(wrk -t1 -c"$conns" -d"$secs"s "$url/ping" | rate)
    i=$(wrk -t1 -c"$conns" -d"$secs"s -s "$work/incr.lua" "$url/v1/counters/x/incr" | rate)
  else
    i=$(wrk -t1 -c"$conns" -d"$secs"s -s "$work/incr.lua" "$url/v1/counters/x/incr" | rate)
    p=$(wrk -t1 -c"$conns" -d"$secs"s "$url/ping" | rate)
  fi
  ratio=$(echo "100 * $i / $p" | bc -l)
  ratios+=("$ratio")
  printf 'round %2d: GET /ping %8.0f req/s   POST incr %8.0f req/s   incr/ping %5.1f %%\n' "$r" "$p" "$i" "$ratio" >&2
  ping_total=$(echo "$ping_total + $p" | bc -l); incr_total=$(echo "$incr_total + $i" | bc -l)
done
ping=$(echo "$ping_total / $rounds" | bc -l); incr=$(echo "$incr_total / $rounds" | bc -l)
median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
printf 'GET /ping                    %8.0f req/s (mean of %d rounds)\n' "$ping" "$rounds"
printf 'POST /v1/counters/x/incr     %8.0f req/s (mean of %d rounds)\n' "$incr" "$rounds"
printf 'incr / ping, ratio of means  %8.1f %%\n' "$(echo "100 * $incr / $ping" | bc -l)"
printf 'incr / ping, median of pairs %8.1f %%\n' "$median"
printf 'counter x after the run: %s\n' "$(curl -s "$url/v1/counters/x")"
