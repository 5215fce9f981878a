#!/bin/sh
# idmap-one-more-pair.sh [PAIRS]
#
# What one more pair costs once a large lookup table is loaded, measured
# from the client with process start included: start a `seam up` on a
# fresh data directory, import PAIRS (default 2,000,000) uuid→legacy-int
# pairs with `seam idmap import`, then import a file of one new pair, and
# print both times and their ratio (docs/idmap-tables.md, target: the
# one-pair import under 5% of the whole import).
#
# The seam command is $SEAM (default: seam); the gRPC port is $PORT
# (default 17070). Exits 0 when the ratio is under 5%, 1 otherwise.
set -eu
pairs=${1:-2000000}
seam=${SEAM:-seam}
port=${PORT:-17070}
dir=$(mktemp -d)
trap 'kill "$up" 2>/dev/null; wait "$up" 2>/dev/null; rm -rf "$dir"' EXIT

$seam up --data-dir "$dir/data" --grpc-addr "127.0.0.1:$port" --http-addr "" >"$dir/up.log" 2>&1 &
up=$!
c() { $seam --timeout 0 --addr "127.0.0.1:$port" --data-dir "$dir/data" "$@"; }
i=0
until c idmap namespace list >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 300 ] || { cat "$dir/up.log" >&2; exit 2; }
	sleep 0.2
done
c idmap namespace create customer --format legacy-int:int --format uuid:uuid >/dev/null

# uuid(i),i for i in 1..PAIRS, then one more pair after them.
awk -v n="$pairs" 'BEGIN { print "uuid,legacy-int"; for (i = 1; i <= n; i++) printf "00000000-0000-4000-8000-%012d,%d\n", i, i }' >"$dir/table.csv"
awk -v n="$pairs" 'BEGIN { print "uuid,legacy-int"; printf "00000000-0000-4000-8000-%012d,%d\n", n + 1, n + 1 }' >"$dir/one.csv"

now() { date +%s.%N; }
t0=$(now)
c idmap import customer "$dir/table.csv" --from uuid --to legacy-int >/dev/null 2>"$dir/import.err" || { cat "$dir/import.err" >&2; exit 2; }
t1=$(now)
c idmap import customer "$dir/one.csv" --from uuid --to legacy-int >/dev/null 2>"$dir/import.err" || { cat "$dir/import.err" >&2; exit 2; }
t2=$(now)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$pairs" 'BEGIN {
	whole = b - a; one = c - b
	printf "import of %d pairs: %.3f s\nimport of 1 more pair: %.3f s (%.2f%% of the whole import; target < 5%%)\n", n, whole, one, 100 * one / whole
	exit !(one < 0.05 * whole)
}'
