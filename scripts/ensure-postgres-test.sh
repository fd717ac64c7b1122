#!/usr/bin/env bash
# ensure-postgres-test.sh — exercises scripts/ensure-postgres.sh for real:
# DATABASE_URL passthrough, and the throwaway-cluster fallback (simulating
# "no server at 5432" by probing a port nothing listens on), including reuse
# of the running cluster, a restart after it was stopped, and the database a
# data dir owns on the machine's server. It cleans up the
# cluster it starts. Prints "N passed, N failed" at the end.
set -euo pipefail

script="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/ensure-postgres.sh"
work="$(mktemp -d)"
chmod 755 "$work" # the postgres user must reach the cluster under it
data="$work/data"
probe_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
local_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
passed=0
failed=0

cleanup() {
	local bindir
	if [[ -f "$data/postgres/data/postmaster.pid" ]]; then
		bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4,4nr | head -1)"
		bindir="${bindir:-$(dirname "$(readlink -f "$(command -v pg_ctl)")")}"
		if [[ "$(id -u)" == 0 ]]; then
			(cd / && runuser -u postgres -- "$bindir/pg_ctl" -D "$data/postgres/data" -m immediate stop >/dev/null 2>&1) || true
		else
			"$bindir/pg_ctl" -D "$data/postgres/data" -m immediate stop >/dev/null 2>&1 || true
		fi
	fi
	rm -rf "$work"
}
trap cleanup EXIT

check() {
	local name=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
		echo "ok   $name"
	else
		failed=$((failed + 1))
		echo "FAIL $name"
	fi
}

# fallback ARGS... runs the script with no DATABASE_URL and the system port
# pointing where nothing listens; variables set before the call pass through.
fallback() {
	env -u DATABASE_URL TRAINYARD_DATA_DIR="$data" TRAINYARD_PG_SYSTEM_PORT="$probe_port" \
		TRAINYARD_PG_PORT="$local_port" "$script" "$@" 2>>"$work/stderr.log"
}

url="$(DATABASE_URL=postgres://u@example.invalid:1/x "$script" 2>/dev/null)"
check "DATABASE_URL is printed as is" test "$url" = "postgres://u@example.invalid:1/x"

want="postgres://postgres@127.0.0.1:$local_port/trainyard?sslmode=disable"
url="$(fallback)"
check "fallback prints the throwaway cluster's URL" test "$url" = "$want"
check "fallback cluster lives under the data dir" test -f "$data/postgres/data/PG_VERSION"
check "fallback cluster answers queries" psql "$url" -XtAc 'SELECT 1' -o /dev/null
check "trainyard_test database exists" psql "${url/trainyard?/trainyard_test?}" -XtAc 'SELECT 1' -o /dev/null

pid_before="$(head -1 "$data/postgres/data/postmaster.pid")"
url="$(fallback)"
check "second run reuses the running cluster" test "$(head -1 "$data/postgres/data/postmaster.pid")" = "$pid_before"
check "second run prints the same URL" test "$url" = "$want"

url="$(TRAINYARD_PG_DATABASE=trainyard_test fallback)"
check "TRAINYARD_PG_DATABASE picks the database" test "$url" = "${want/trainyard?/trainyard_test?}"

# The machine's server, played by the running cluster: each data dir gets a
# database of its own, which --clean drops.
system() {
	local dir=$1
	shift
	env -u DATABASE_URL -u TRAINYARD_PG_DATABASE TRAINYARD_DATA_DIR="$dir" TRAINYARD_PG_SYSTEM_PORT="$local_port" \
		"$script" "$@" 2>>"$work/stderr.log"
}
url_a="$(system "$work/a")"
db_a="$(cat "$work/a/postgres-database")"
check "on the machine's server the URL names the data dir's database" \
	test "$url_a" = "postgres://postgres@127.0.0.1:$local_port/$db_a?sslmode=disable"
check "the data dir's database exists" psql "$url_a" -XtAc 'SELECT 1' -o /dev/null
check "the same data dir gets the same database" test "$(system "$work/a")" = "$url_a"
url_b="$(system "$work/b")"
check "another data dir gets another database" test "$url_b" != "$url_a"
system "$work/a" --clean
check "--clean drops the data dir's database" \
	test "$(psql "$want" -XtAc "SELECT count(*) FROM pg_database WHERE datname = '$db_a'")" = 0
check "--clean leaves other data dirs' databases" psql "$url_b" -XtAc 'SELECT 1' -o /dev/null

psql "$want" -XqAc 'CREATE TABLE IF NOT EXISTS survives (x int); INSERT INTO survives VALUES (42)'
bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4,4nr | head -1)"
bindir="${bindir:-$(dirname "$(readlink -f "$(command -v pg_ctl)")")}"
if [[ "$(id -u)" == 0 ]]; then stop=(runuser -u postgres --); else stop=(); fi
(cd / && "${stop[@]}" "$bindir/pg_ctl" -D "$data/postgres/data" -m fast stop >/dev/null)
url="$(fallback)"
check "a stopped cluster is started again" psql "$url" -XtAc 'SELECT 1' -o /dev/null
check "data survives the restart" test "$(psql "$url" -XtAc 'SELECT x FROM survives')" = 42

fallback --stop >/dev/null
check "--stop stops the throwaway cluster" test ! -f "$data/postgres/data/postmaster.pid"
# A pid file left by a killed server must not make --stop (and make clean) fail.
printf '999999\n%s\n' "$data/postgres/data" >"$data/postgres/data/postmaster.pid"
check "--stop ignores a stale pid file" fallback --stop
rm -f "$data/postgres/data/postmaster.pid"
url="$(fallback)"
check "a run after --stop starts it again" psql "$url" -XtAc 'SELECT 1' -o /dev/null

if [[ $failed -ne 0 ]]; then
	echo "--- ensure-postgres stderr:"
	cat "$work/stderr.log"
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
