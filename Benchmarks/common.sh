# Benchmarks/common.sh: what every benchmark script shares. Sourced, not run.
#
#   bench_prepare              Debian packages and wrk; builds attest (release) into $attest
#                              (ATTEST_BIN=PATH runs that binary instead: two builds
#                              alternated by hand in a script without COMPARE)
#   bench_cluster SETTINGS…    a throwaway PostgreSQL cluster with normal durability, database
#                              `attest`; sets $dir, $bin, $psql, DATABASE_URL (the owner's) and
#                              $server_url (the server's login, only a member of attest_app);
#                              PG_SETTINGS (e.g. "-c shared_buffers=6GB") overrides any setting
#   bench_members CAMPUS N     N members with a session token each, tokens in $dir/tokens.txt
#   bench_serve PORT ARGS…     starts `attest serve` and waits until it is ready; sets $server_pid
#                              and $start_ms, how long it took from starting to a 200 from /readyz
#   bench_reference PORT METHOD CLIENTS SECONDS  the bare Hummingbird route (Benchmarks/Reference)
#                              under wrk, warmed up; sets $reference_result and $reference_cpu
#   bench_stop_server          stops it; sets $peak_mb, its peak resident memory (VmHWM)
#   bench_wrk N SECONDS URL VAR=VALUE…  wrk, N connections, with Benchmarks/load.lua; prints its RESULT line
#   bench_value NAME LINE      a field of a RESULT line
#   bench_cpu                  CPU counters now (machine, the cluster, the server), for bench_cpu_per
#   bench_cpu_per N BEFORE AFTER  ms of CPU per operation between two bench_cpu samples
#   bench_statements N         PostgreSQL's execution time per operation by statement (pg_stat_statements)
#   bench_ceiling CPU          operations/s a server using no CPU could reach, from a bench_cpu_per line
#   bench_perf_start SECONDS   with PERF=1, perf records the server for SECONDS (PERF_RECORD
#                              replaces perf's options); with PERF_EVENTS=E1,E2, perf stat
#                              counts those events in it; both in the background
#   bench_perf_report N WHAT   waits for them and prints where the server's CPU went, and each
#                              counted event per operation (N operations of WHAT); PERF_KEEP=FILE
#                              keeps the profile
#   calc FORMAT EXPRESSION     arithmetic through awk
#   bench_result KEY=VALUE…    appends one line to $BENCH_RESULTS, when set (for Benchmarks/run)

bench_prepare() {
  scripts/install-deps
  if ! command -v wrk >/dev/null; then
    echo "Installing wrk…"
    { apt-get update && apt-get install -y wrk; } >/dev/null
  fi
  echo "Building attest and attest-bench-reference (release)…"
  swift build -c release --product attest >/dev/null
  swift build -c release --product attest-bench-reference >/dev/null
  attest=${ATTEST_BIN:-$PWD/.build/release/attest}
  reference=$PWD/.build/release/attest-bench-reference
}

server_pid=
dir=
bench_cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  if [ -n "$dir" ]; then
    "${as_server[@]}" "$bin/pg_ctl" stop -D "$dir/data" -m fast -w >/dev/null 2>&1 || true
    rm -rf "$dir"
  fi
}
trap bench_cleanup EXIT

bench_cluster() {  # extra postgres settings, e.g. -c max_wal_size=4GB
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  dir=$(mktemp -d /tmp/attest-bench.XXXXXX)
  as_server=()
  if [ "$(id -u)" -eq 0 ]; then
    chmod 755 "$dir"
    chown postgres: "$dir"
    # In the cluster's own directory: the postgres user may not enter the one this runs from.
    as_server=(runuser -u postgres -- env -C "$dir")
  fi
  "${as_server[@]}" "$bin/initdb" -D "$dir/data" -U postgres -E UTF8 --locale=C \
    --auth-local=trust --auth-host=reject --no-instructions >/dev/null
  "${as_server[@]}" "$bin/pg_ctl" start -w -D "$dir/data" -l "$dir/postgres.log" \
    -o "-c listen_addresses='' -k $dir -c max_connections=200 -c shared_buffers=1GB -c shared_preload_libraries=pg_stat_statements $* ${PG_SETTINGS:-}" >/dev/null
  psql=(psql -X -q -v ON_ERROR_STOP=1 -h "$dir" -U postgres)
  "${psql[@]}" -d postgres -c "CREATE DATABASE attest"
  export DATABASE_URL="postgresql:///attest?host=$dir&user=postgres"
  # The key-encryption key this run's badge keys are sealed with (serve and campus create need it).
  ATTEST_KEK=$("$attest" keys new-kek 2>/dev/null)
  export ATTEST_KEK
  "$attest" migrate --log-level warning >/dev/null
  "${psql[@]}" -d attest -c "CREATE ROLE attest_server LOGIN" -c "GRANT attest_app TO attest_server" \
    -c "CREATE EXTENSION pg_stat_statements"
  server_url="postgresql:///attest?host=$dir&user=attest_server"
}

# bench_members CAMPUS N: N members of an existing campus, each with a session token in the
# server's own format, seeded in SQL; the tokens go to $dir/tokens.txt in random order.
bench_members() {
  echo "Seeding $2 members with a session token each…"
  seed_start=$(date +%s.%N)
  "${psql[@]}" -d attest <<SQL
-- Counted in member_changes in the same statement, as the server's own inserts do.
WITH added AS (
  INSERT INTO users (campus_id, id, email, display_name)
  SELECT c.id, gen_random_uuid(), 'member' || g || '@bench.example.edu', 'Member ' || g
  FROM campuses c, generate_series(1, $2) AS g WHERE c.slug = '$1'
  RETURNING campus_id, created_at
)
INSERT INTO member_changes AS m (campus_id, local_date, change)
SELECT a.campus_id, (a.created_at AT TIME ZONE c.time_zone)::date, count(*) FROM added a JOIN campuses c ON c.id = a.campus_id
GROUP BY 1, 2 ON CONFLICT (campus_id, local_date) DO UPDATE SET change = m.change + EXCLUDED.change;
SQL
  bench_tokens "$1"
  echo "Seeded in $(calc %.1f "$(date +%s.%N) - $seed_start") s"
}

# bench_tokens CAMPUS: a session token for every member of the campus, in the server's own
# format, seeded in SQL; the tokens go to $dir/tokens.txt in random order.
bench_tokens() {
  "${psql[@]}" -d attest <<SQL
-- Tokens in the server's own format: 32 random bytes, base64url without padding.
CREATE TABLE bench_tokens AS
SELECT campus_id, id AS user_id,
       translate(encode(decode(md5(random()::text || id::text) || md5(id::text || random()::text), 'hex'), 'base64'), '+/=', '-_') AS token
FROM users WHERE campus_id = (SELECT id FROM campuses WHERE slug = '$1');
INSERT INTO sessions (campus_id, token_hash, user_id, expires_at)
SELECT campus_id, sha256(convert_to(token, 'UTF8')), user_id, now() + interval '1 day' FROM bench_tokens;
\copy (SELECT token FROM bench_tokens ORDER BY random()) TO '$dir/tokens.txt'
DROP TABLE bench_tokens;
VACUUM ANALYZE;
SQL
}

bench_wait_ready() {  # port
  for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  curl -fs "http://127.0.0.1:$1/readyz" >/dev/null || { cat "$dir/server.log"; echo "the server did not start"; exit 1; }
}

bench_serve() {  # port, then more `attest serve` arguments
  local port=$1; shift
  if curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
    echo "something already answers on port $port: stop it or set PORT"; exit 1
  fi
  local started; started=$(date +%s%N)
  DATABASE_URL="$server_url" "$attest" serve --port "$port" --log-level warning --log-format json "$@" > "$dir/server.log" 2>&1 &
  server_pid=$!
  # Asked every 10 ms (curl itself takes a few), so the time to ready is known to about that.
  for _ in $(seq 1 1000); do
    curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    sleep 0.01
  done
  start_ms=$(( ($(date +%s%N) - started) / 1000000 ))
  bench_wait_ready "$port"
}

bench_reference() {  # port, method (GET or POST), clients, seconds
  local port=$1 method=$2 clients=$3 seconds=$4 url="http://127.0.0.1:$1"
  "$reference" "$port" > "$dir/reference.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do curl -fs "$url/json" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fs "$url/json" >/dev/null || { cat "$dir/reference.log"; echo "the reference server did not start"; exit 1; }
  bench_wrk "$clients" 3 "$url" METHOD="$method" TARGET=/json >/dev/null
  local before; before=$(bench_cpu)
  reference_result=$(bench_wrk "$clients" "$seconds" "$url" METHOD="$method" TARGET=/json)
  reference_cpu=$(bench_cpu_per "$(bench_value requests "$reference_result")" "$before" "$(bench_cpu)")
  [ "$(bench_value not_2xx "$reference_result")" -eq 0 ] || { echo "the reference answered errors: $reference_result"; exit 1; }
  bench_stop_server
}

bench_stop_server() {  # sets peak_mb: the server's peak resident set in MB, read before it exits
  peak_mb=$(awk '$1 == "VmHWM:" { printf "%.0f", $2 / 1024 }' "/proc/$server_pid/status")
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
}

# bench_wrk CONNECTIONS SECONDS URL [VAR=VALUE…]: the variables are for Benchmarks/load.lua
# (METHOD, TARGET, TOKENS, BODY).
bench_wrk() {
  local connections=$1 seconds=$2 url=$3; shift 3
  env THREADS="${THREADS:-2}" "$@" wrk -t"${THREADS:-2}" -c"$connections" -d"$seconds"s --timeout 5s \
    -s Benchmarks/load.lua "$url" | grep '^RESULT'
}

# bench_ticks PID [CHILDREN]: a process's CPU time in clock ticks (utime and stime, fields 12
# and 13 of /proc/PID/stat after the command name), with CHILDREN=1 also that of its children
# that have exited (cutime and cstime, 14 and 15); 0 when it is gone.
bench_ticks() {
  { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null || echo; } | awk -v children="${2:-0}" '{ print $12 + $13 + (children ? $14 + $15 : 0) }'
}

# bench_cpu: one line of counters: the time in seconds, then in clock ticks the machine's busy
# and idle time, every process of the cluster (a backend that exited counts too: its time went
# to the postmaster's total for exited children), and $server_pid's when set.
bench_cpu() {
  local postmaster pg server=0
  postmaster=$(head -n 1 "$dir/data/postmaster.pid")
  pg=$( { bench_ticks "$postmaster" 1; for child in $(pgrep -P "$postmaster"); do bench_ticks "$child"; done; } \
        | awk '{ total += $1 } END { print total + 0 }')
  [ -n "$server_pid" ] && server=$(bench_ticks "$server_pid")
  echo "$(date +%s.%N) $(awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat) $pg $server"
}

# bench_cpu_per N BEFORE AFTER: CPU per operation for N operations between two bench_cpu
# samples, in ms: "server=… postgres=… rest=…", where rest is every other busy process (the
# load generator); then idle_cores=…, how many of the machine's cores stood idle on average.
bench_cpu_per() {
  echo "$2 $3" | awk -v n="$1" -v hz="$(getconf CLK_TCK)" '{
    busy = $7 - $2; idle = $8 - $3; pg = $9 - $4; server = $10 - $5
    ms = 1000 / hz / n
    printf "server=%.3f postgres=%.3f rest=%.3f idle_cores=%.2f\n", server * ms, pg * ms, (busy - pg - server) * ms,
      idle / hz / ($6 - $1)
  }'
}

# bench_ceiling CPU: from a bench_cpu_per line, the operations/s this machine's cores would
# allow at its PostgreSQL and load-generator cost per operation if the server cost no CPU
# and no core stood idle.
bench_ceiling() {
  calc %.0f "$(nproc) * 1000 / ($(bench_value postgres "$1") + $(bench_value rest "$1"))"
}

# bench_statements N: PostgreSQL's execution time per operation for N operations by
# statement since the last pg_stat_statements_reset(), the costliest first (pg_stat_statements
# is loaded in every benchmark cluster; it times execution, not parsing, commits or the WAL),
# with the pages it found in shared buffers and those it had to read in (from the kernel's
# page cache or the disk) per operation.
bench_statements() {
  "${psql[@]}" -d attest -At -F ' ' -c "
    SELECT to_char(total_exec_time * 1000 / $1, '9990.0') || ' µs', to_char(calls::numeric / $1, '0.00') || ' calls',
           to_char(shared_blks_hit::numeric / $1, '9990.0') || ' pages hit', to_char(shared_blks_read::numeric / $1, '9990.0') || ' read',
           left(regexp_replace(query, '\s+', ' ', 'g'), 100)
    FROM pg_stat_statements WHERE total_exec_time * 1000 / $1 >= 0.5 ORDER BY total_exec_time DESC LIMIT 8" \
  | sed 's/^/  /'
}

bench_value() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

calc() { awk "BEGIN { printf \"$1\", $2 }"; }

bench_result() {
  [ -n "${BENCH_RESULTS:-}" ] && echo "$*" >> "$BENCH_RESULTS"
  return 0
}

# bench_median FILE NAME: the median of a field (` NAME=value`) over the lines of FILE, one
# line a round (for an even count, the lower middle); bench_spread FILE NAME: its lowest and
# highest, as "low–high".
bench_median() {
  sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
bench_spread() {
  sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | sort -g | awk 'NR == 1 { low = $1 } { high = $1 } END { print low "–" high }'
}

perf_pid= stat_pid=
bench_perf_start() {  # seconds
  if [ "${PERF:-0}" = 1 ]; then
    command -v perf >/dev/null || { echo "PERF=1 needs perf: apt-get install linux-perf"; exit 2; }
    # perf's own cost shows in the figures. PERF_RECORD is split into perf's options on purpose.
    # shellcheck disable=SC2086
    perf record -q ${PERF_RECORD:--F 499 -g} -p "$server_pid" -o "$dir/perf.data" -- sleep "$1" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  if [ -n "${PERF_EVENTS:-}" ]; then
    perf stat -x, -e "$PERF_EVENTS" -p "$server_pid" -o "$dir/perf-stat.csv" -- sleep "$1" >/dev/null 2>&1 &
    stat_pid=$!
  fi
}

bench_perf_report() {  # operations, what one is
  if [ -n "$perf_pid" ]; then
    wait "$perf_pid" || true
    perf_pid=
    echo "Where the server's CPU went (perf, self time by library and by function, the top 40):"
    perf report -q -i "$dir/perf.data" --no-children --sort dso --percent-limit 1 --stdio -g none 2>/dev/null | grep -v '^$' | head -n 15
    perf report -q -i "$dir/perf.data" --no-children --sort sym --percent-limit 0.4 --stdio -g none 2>/dev/null | grep -v '^$' | head -n 40
    if [ -n "${PERF_KEEP:-}" ]; then cp "$dir/perf.data" "$PERF_KEEP" && echo "The profile is kept in $PERF_KEEP"; fi
  fi
  if [ -n "$stat_pid" ]; then
    wait "$stat_pid" || true
    stat_pid=
    echo "The server's events per $2 (perf stat, $1 of them):"
    grep -v '^#' "$dir/perf-stat.csv" | grep -v '^$' | while IFS=, read -r count _ event _; do
      # perf writes "<not counted>" or "<not supported>" for an event it could not count.
      case "$count" in
        '' | *[!0-9.]*) printf '  %-60s %s\n' "$event" "${count:-?} (perf could not count it: is the probe made?)" ;;
        *) printf '  %-60s %s\n' "$event" "$(calc %.1f "$count / $1")" ;;
      esac
    done
  fi
}
