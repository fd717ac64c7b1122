#!/usr/bin/env bash
# ensure-postgres.sh — print a usable PostgreSQL URL on stdout.
#
# Order of preference:
#   1. $DATABASE_URL, when set (printed as is);
#   2. the machine's server at $TRAINYARD_PG_SYSTEM_HOST:$TRAINYARD_PG_SYSTEM_PORT
#      (127.0.0.1:5432) when it answers and lets user postgres in;
#   3. a throwaway cluster under $TRAINYARD_DATA_DIR/postgres (./.data/postgres)
#      on 127.0.0.1:$TRAINYARD_PG_PORT (55432), created with initdb and started
#      with pg_ctl as the postgres system user, reused when already there.
#      Debian's postgresql package is installed first when no binaries exist.
# In cases 2 and 3 the URL names $TRAINYARD_PG_DATABASE, created if missing
# (with trainyard_test). By default that is trainyard in the throwaway cluster,
# and on the machine's server a database of this data dir's own, named in
# $TRAINYARD_DATA_DIR/postgres-database (trainyard_<random hex>): the data dir
# holds the objects the database's rows point at, so a fresh checkout, or one
# after `make clean`, must not meet the rows of another.
#
# Diagnostics go to stderr so callers can write URL=$(scripts/ensure-postgres.sh).
# Running it again (or twice at once) is safe.
#
# `ensure-postgres.sh --stop` stops the throwaway cluster, if one runs;
# `--clean` also drops the data dir's own database on the machine's server
# (make clean).
set -euo pipefail

log() { printf 'ensure-postgres: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

stop_only=false
clean=false
case "${1:-}" in
--stop) stop_only=true ;;
--clean) stop_only=true clean=true ;;
"") ;;
*) die "unknown argument $1 (only --stop and --clean are accepted)" ;;
esac

if [[ -n "${DATABASE_URL:-}" ]] && ! $stop_only; then
	log "using DATABASE_URL from the environment"
	printf '%s\n' "$DATABASE_URL"
	exit 0
fi

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data_dir="${TRAINYARD_DATA_DIR:-$repo_root/.data}"
[[ "$data_dir" = /* ]] || data_dir="$repo_root/$data_dir"
system_host="${TRAINYARD_PG_SYSTEM_HOST:-127.0.0.1}"
system_port="${TRAINYARD_PG_SYSTEM_PORT:-5432}"
local_port="${TRAINYARD_PG_PORT:-55432}"
database="${TRAINYARD_PG_DATABASE:-trainyard}"
db_file="$data_dir/postgres-database"

# psql_at HOST PORT ARGS... runs psql as user postgres against database postgres.
psql_at() {
	local host=$1 port=$2
	shift 2
	PGCONNECT_TIMEOUT=3 psql "postgresql://postgres@$host:$port/postgres?sslmode=disable" \
		-X -q -v ON_ERROR_STOP=1 "$@"
}

# ensure_databases HOST PORT creates $database and trainyard_test if missing.
ensure_databases() {
	local host=$1 port=$2 db
	for db in $(printf '%s\n' "$database" trainyard_test | sort -u); do
		if [[ "$(psql_at "$host" "$port" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]]; then
			log "creating database $db on $host:$port"
			# A concurrent run may win the race; only fail if it is still missing.
			psql_at "$host" "$port" -c "CREATE DATABASE \"$db\"" >/dev/null 2>&1 ||
				[[ "$(psql_at "$host" "$port" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" == 1 ]] ||
				die "cannot create database $db on $host:$port"
		fi
	done
}

print_url() { printf 'postgres://postgres@%s:%s/%s?sslmode=disable\n' "$1" "$2" "$database"; }

# answers HOST PORT succeeds when a server there accepts user postgres.
answers() {
	command -v psql >/dev/null 2>&1 || return 1
	psql_at "$1" "$2" -tAc 'SELECT 1' >/dev/null 2>&1
}

if $clean && [[ -z "${TRAINYARD_PG_DATABASE:-}" && -f "$db_file" ]] && answers "$system_host" "$system_port"; then
	own="$(<"$db_file")"
	log "dropping database $own on $system_host:$system_port"
	psql_at "$system_host" "$system_port" -c "DROP DATABASE IF EXISTS \"$own\"" >/dev/null ||
		log "could not drop database $own (is trainyard still running?)"
fi
if ! $stop_only && answers "$system_host" "$system_port"; then
	log "using the PostgreSQL server at $system_host:$system_port"
	if [[ -z "${TRAINYARD_PG_DATABASE:-}" ]]; then
		# Created once, atomically (noclobber), so concurrent runs agree.
		mkdir -p "$data_dir"
		(set -C && printf 'trainyard_%s\n' "$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')" >"$db_file") 2>/dev/null || true
		database="$(<"$db_file")"
	fi
	ensure_databases "$system_host" "$system_port"
	print_url "$system_host" "$system_port"
	exit 0
fi
$stop_only || log "no usable server at $system_host:$system_port; using a throwaway cluster"

# find_bindir prints the directory holding initdb and pg_ctl, newest version first.
find_bindir() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4,4nr); do
		[[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && { echo "$d"; return 0; }
	done
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v initdb)")"
		return 0
	fi
	return 1
}

if $stop_only && [[ ! -d "$data_dir" ]]; then
	exit 0 # no data dir, so no cluster of ours
fi
if ! bindir="$(find_bindir)"; then
	$stop_only && exit 0 # no binaries, so no cluster of ours can be running
	[[ "$(id -u)" == 0 ]] || die "no PostgreSQL binaries found; install Debian's postgresql package"
	log "installing Debian's postgresql package"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq postgresql >&2
	bindir="$(find_bindir)" || die "postgresql installed but initdb/pg_ctl not found"
fi

# run_pg CMD... runs a PostgreSQL tool as the postgres system user when we
# are root (initdb and postgres refuse to run as root).
# fd 9 (the lock) is closed for it: a server started by pg_ctl would
# otherwise inherit it and hold the lock for its whole life. It runs from /,
# since the postgres user may not be allowed into the caller's directory.
run_pg() {
	if [[ "$(id -u)" == 0 ]]; then
		(cd / && runuser -u postgres -- "$@" 9>&-)
	else
		"$@" 9>&-
	fi
}

if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
	useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi

cluster="$data_dir/postgres"
$stop_only || mkdir -p "$data_dir"
if [[ "$(id -u)" == 0 ]] && ! runuser -u postgres -- test -x "$data_dir"; then
	# The postgres user cannot reach the data dir (e.g. a checkout inside a
	# 0700 directory); keep the cluster in a per-checkout place it can reach.
	cluster="/var/tmp/trainyard-postgres-$(printf '%s' "$data_dir" | sha256sum | cut -c1-12)"
	log "the postgres user cannot reach $data_dir; using $cluster instead"
fi
if $stop_only; then
	# pg_ctl status, not the pid file: a stale one (a killed machine) would
	# make stop fail, and `make clean` with it.
	if run_pg "$bindir/pg_ctl" -D "$cluster/data" status >/dev/null 2>&1; then
		log "stopping the cluster in $cluster/data"
		run_pg "$bindir/pg_ctl" -D "$cluster/data" -m fast -w stop >&2
	fi
	exit 0
fi
mkdir -p "$cluster"
[[ "$(id -u)" == 0 ]] && chown postgres: "$cluster"
pgdata="$cluster/data"
sockdir="$cluster/run"
logfile="$cluster/postgres.log"

# One run at a time per cluster: initdb and pg_ctl start are not idempotent
# under concurrency.
exec 9>"$cluster/.lock"
flock 9

if [[ ! -f "$pgdata/PG_VERSION" ]]; then
	log "initialising a cluster in $pgdata"
	run_pg mkdir -p "$pgdata" "$sockdir"
	run_pg "$bindir/initdb" -D "$pgdata" -U postgres --auth=trust --encoding=UTF8 --no-instructions >"$cluster/initdb.log" 2>&1 ||
		die "initdb failed; see $cluster/initdb.log"
fi
run_pg mkdir -p "$sockdir"

if run_pg "$bindir/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; then
	# Line 4 of postmaster.pid is the port the running server listens on,
	# which wins over a different TRAINYARD_PG_PORT given this time.
	local_port="$(sed -n 4p "$pgdata/postmaster.pid")"
	log "reusing the running cluster in $pgdata (port $local_port)"
else
	log "starting the cluster in $pgdata on 127.0.0.1:$local_port"
	run_pg "$bindir/pg_ctl" -D "$pgdata" -l "$logfile" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $local_port -k $sockdir" start >&2 ||
		die "pg_ctl start failed; see $logfile"
fi

answers 127.0.0.1 "$local_port" || die "the cluster in $pgdata does not answer on 127.0.0.1:$local_port (port used by another server?)"
ensure_databases 127.0.0.1 "$local_port"
print_url 127.0.0.1 "$local_port"
