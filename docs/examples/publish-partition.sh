#!/bin/sh
# publish-partition.sh SUBJECT PARTITION FILE PUBLISH_DIR
#
# Write, audit, publish: send FILE through Seam's gate as PARTITION of
# SUBJECT, stage the canonical records the gate accepted, seal the
# partition so the gate judges it whole, and publish the staged records
# to PUBLISH_DIR/PARTITION.ndjson only when the verdict is not BLOCKED.
# A BLOCKED partition is dropped (and an earlier published copy removed):
# fix the records and run again with REPLACE=1, which sends the file as a
# replacement of everything sent for the partition before.
#
# The seam command is $SEAM (default: seam); it reads SEAM_ADDR and
# SEAM_TOKEN like every seam command. Exits 0 when published, 1 when
# dropped, 2 or 3 when seam could not run or the file is not valid.
set -u
[ $# -eq 4 ] || { echo "usage: $0 SUBJECT PARTITION FILE PUBLISH_DIR" >&2; exit 2; }
subject=$1 partition=$2 file=$3 publish=$4
seam=${SEAM:-seam}

staged=$(mktemp -d) || exit 2
trap 'rm -rf "$staged"' EXIT

# Write: stage what the gate accepts; the partition stays open (a pipeline
# with several files sends them all with --no-seal before the seal).
rc=0
$seam gate ingest "$subject" "$file" --partition "$partition" --no-seal \
	--out "$staged/records.ndjson" ${REPLACE:+--replace} || rc=$?

# Audit: seal, and the gate judges the whole partition. (A pipeline whose
# partitions are sealed elsewhere, say by the contract's watermark, runs
# "seam gate wait" here instead.) Exit 1 from ingest already means BLOCKED.
if [ "$rc" -eq 0 ]; then
	$seam gate seal "$subject" "$partition" || rc=$?
fi

# Publish or drop.
case $rc in
0)
	mkdir -p "$publish" || exit 2
	mv "$staged/records.ndjson" "$publish/$partition.ndjson" || exit 2
	echo "published $subject $partition: $(wc -l <"$publish/$partition.ndjson") records"
	;;
1)
	rm -f "$publish/$partition.ndjson"
	echo "dropped $subject $partition: BLOCKED; fix the records and resend with REPLACE=1" >&2
	exit 1
	;;
*)
	exit "$rc"
	;;
esac
