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
total() { sed -n 's/^ *\([0-9]*\) requests in .*/\1/p'; }
# CPU seconds the server process has used (user + system): a cost per request that other load
# on the machine does not change, unlike the rate.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$pid/stat"; }
# one wrk run: prints "rate requests cpu_seconds"
measure() {
  local c0 out
  c0=$(cpu)
  out=$(wrk -t1 -c"$conns" -d"$secs"s "$@")
  echo "$(echo "$out" | rate) $(echo "$out" | total) $(echo "$(cpu) - $c0" | bc -l)"
}
echo "server: $url  store: $store  wrk: 1 thread, $conns connections, ${secs}s x $rounds rounds each; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
wrk -t1 -c"$conns" -d5s "$url/ping" > /dev/null                       # warm-up
wrk -t1 -c"$conns" -d5s -s "$work/incr.lua" "$url/v1/counters/x/incr" > /dev/null
ping_total=0; incr_total=0; ratios=(); ping_req=0; ping_cpu=0; incr_req=0; incr_cpu=0
for r in $(seq "$rounds"); do
  # adjacent pairs, alternating which goes first, so drifting machine load hits both alike
  if (( r % 2 )); then
    read -r p pn pc < <(measure "$url/ping")
    read -r i in ic < <(measure -s "$work/incr.lua" "$url/v1/counters/x/incr")
  else
    read -r i in ic < <(measure -s "$work/incr.lua" "$url/v1/counters/x/incr")
    read -r p pn pc < <(measure "$url/ping")
  fi
  ratio=$(echo "100 * $i / $p" | bc -l)
  ratios+=("$ratio")
  printf 'round %2d: GET /ping %8.0f req/s %5.1f us CPU/req   POST incr %8.0f req/s %5.1f us CPU/req   incr/ping %5.1f %%\n' \
    "$r" "$p" "$(echo "1000000 * $pc / $pn" | bc -l)" "$i" "$(echo "1000000 * $ic / $in" | bc -l)" "$ratio" >&2
  ping_total=$(echo "$ping_total + $p" | bc -l); incr_total=$(echo "$incr_total + $i" | bc -l)
  ping_req=$((ping_req + pn)); incr_req=$((incr_req + in))
  ping_cpu=$(echo "$ping_cpu + $pc" | bc -l); incr_cpu=$(echo "$incr_cpu + $ic" | bc -l)
done
ping=$(echo "$ping_total / $rounds" | bc -l); incr=$(echo "$incr_total / $rounds" | bc -l)
ping_us=$(echo "1000000 * $ping_cpu / $ping_req" | bc -l); incr_us=$(echo "1000000 * $incr_cpu / $incr_req" | bc -l)
median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
printf 'GET /ping                    %8.0f req/s  %5.1f us server CPU per request\n' "$ping" "$ping_us"
printf 'POST /v1/counters/x/incr     %8.0f req/s  %5.1f us server CPU per request\n' "$incr" "$incr_us"
printf 'incr / ping, ratio of mean rates     %5.1f %%\n' "$(echo "100 * $incr / $ping" | bc -l)"
printf 'incr / ping, median of paired rounds %5.1f %%\n' "$median"
printf 'incr / ping, by server CPU           %5.1f %%\n' "$(echo "100 * $ping_us / $incr_us" | bc -l)"
printf 'counter x after the run: %s\n' "$(curl -s "$url/v1/counters/x")"
