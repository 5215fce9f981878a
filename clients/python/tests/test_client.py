"""The walkthrough of docs/walkthrough.md, over REST, through the Python client, against
a real seam up."""

import json
import os
import subprocess
import sys
import urllib.request

import pytest

from seam_client import Client, SeamError

from conftest import ROOT

EXAMPLES = os.path.join(ROOT, "core", "examples")


def read(name):
    with open(os.path.join(EXAMPLES, name)) as f:
        return f.read()


DAY1 = [
    {"order_id": "ORD-0000000001", "customer_id": 1001, "amount": 85.5, "currency": "EUR", "status": "paid", "created_at": "2026-03-01T09:12:00Z", "country": "DE", "items": 2},
    {"order_id": "ORD-0000000002", "customer_id": 1002, "amount": 19.9, "currency": "EUR", "status": "placed", "created_at": "2026-03-01T09:15:00Z", "country": "DE", "items": 1},
    {"order_id": "ORD-0000000003", "customer_id": 1003, "amount": 42, "currency": "XXX", "status": "paid", "created_at": "2026-03-01T09:20:00Z", "country": "FR", "items": 1},
]
DAY2 = [
    {"order_id": "ORD-0000000004", "customer_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "amount": 61, "currency": "EUR", "status": "paid", "created_at": "2026-03-02T08:01:00Z", "country": "DE", "items": 1},
    {"order_id": "ORD-0000000005", "customer_id": "0b9e5c8e-3f0d-4a4e-9d43-1f3c2a6f6b01", "amount": 12.5, "currency": "GBP", "status": "paid", "created_at": "2026-03-02T08:03:00Z", "country": "GB", "items": 3},
]


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_walkthrough(seam, tmp_path):
    """The walkthrough (docs/walkthrough.md), step by step, through the client only: the
    id namespace and its tables, the contracts, a consumer, two days of
    data, containment, v2 with its migration, the replay that releases the
    held records in canonical form, and the rerun order it announces."""
    base, token, _ = seam
    c = Client(base, token)
    ns = c.create_namespace("customer", {"legacy-int": "int", "uuid": "uuid", "crm-code": "string"})
    assert [f["kind"] for f in ns["formats"]] == ["FORMAT_KIND_INT", "FORMAT_KIND_UUID", "FORMAT_KIND_STRING"]
    customers = write(tmp_path, "customers.csv", "legacy_int,crm_code\n1001,CRM-00001001\n1002,CRM-00001002\n1003,CRM-00001003\n")
    imp = c.import_csv("customer", customers, "legacy-int", "crm-code")
    assert (imp.received, imp.inserted, imp.committed, imp.table_size, imp.generation) == (3, 3, True, 3, 1)
    assert c.import_csv("customer", customers, "legacy-int", "crm-code").unchanged == 3  # idempotent

    model = c.register_canonical_model(read("commerce_order.yaml"))
    assert model["version"]["name"] == "commerce.order"
    v1 = c.register_contract(read("shop_orders_v1.yaml"))
    assert v1["version"]["version"] == 1 and v1["version"]["status"] == "VERSION_STATUS_ACTIVE"
    c.register_consumer({"name": "features.customer_ltv", "owner": "team-ml", "produces": ["features.customer_ltv"],
                         "inputs": [{"subject": "shop.orders", "fields": ["customer_id", "amount"], "usage": "JOIN_KEY"}]})

    day1 = c.ingest("shop.orders", DAY1, partition="2026-03-01", batch_id="day1")
    assert (day1.status, day1.received, day1.accepted, day1.quarantined) == ("PARTIAL", 3, 2, 1)
    again = c.ingest("shop.orders", DAY1, partition="2026-03-01", batch_id="day1")
    assert again.retried and again.accepted == 2
    assert c.seal("shop.orders", "2026-03-01").publishable

    # Partition checks (the match rate among them) are judged at the seal,
    # as `seam gate ingest` seals after a file's last chunk.
    day2 = c.ingest("shop.orders", DAY2, partition="2026-03-02", batch_id="day2", seal=True)
    assert (day2.status, day2.quarantined) == ("QUARANTINED", 2)
    assert any("match_rate" in json.dumps(a).lower() for a in c.alerts("shop.orders"))
    c.contain("shop.orders", "INC-8: customer_id arrives as UUIDs")

    # v2 as it stands: owes notice, and idmap cannot run its migration yet.
    check = c.check_contract(read("shop_orders_v2.yaml"))
    assert check["verdict"] == "VERDICT_REFUSED" and check["notice_owed"]
    assert [a["consumer"] for a in check["affected_consumers"]] == ["features.customer_ltv"]
    assert [m.get("ready", False) for m in check["migration"]] == [False]
    with pytest.raises(SeamError) as e:
        c.register_contract(read("shop_orders_v2.yaml"), override_reason="INC-8: the source already sends UUIDs")
    assert e.value.status == 400 and "MIGRATION_NOT_READY" in json.dumps(e.value.details)

    # The one-time sync of UUIDs to integers, then v2 with the notice waived.
    uuids = write(tmp_path, "uuids.csv", "uuid,legacy_int\n7c9e6679-7425-40de-944b-e07fc1f90ae7,1001\n0b9e5c8e-3f0d-4a4e-9d43-1f3c2a6f6b01,1002\n")
    assert c.import_csv("customer", uuids, "uuid", "legacy-int").inserted == 2
    check = c.check_contract(read("shop_orders_v2.yaml"), override_reason="INC-8: the source already sends UUIDs")
    assert check["verdict"] == "VERDICT_BREAKING_SCHEDULABLE" and [m.get("ready", False) for m in check["migration"]] == [True]
    v2 = c.register_contract(read("shop_orders_v2.yaml"), override_reason="INC-8: the source already sends UUIDs")
    assert v2["version"]["version"] == 2 and v2["version"]["status"] == "VERSION_STATUS_ACTIVE"
    assert [a["consumer"] for a in v2["affected_consumers"]] == ["features.customer_ltv"]
    c.release("shop.orders", "v2 maps UUIDs back to legacy-int")

    plan = c.plan_replay("shop.orders", "2026-03-02", "2026-03-02")
    assert (_n(plan, "held"), _n(plan, "would_release"), _n(plan, "would_remain")) == (2, 2, 0)
    rep = c.replay("shop.orders", "2026-03-02", "2026-03-02", replay_id="py-replay-1", reason="v2 maps UUIDs back")
    assert (rep.replay_id, rep.held, rep.released, rep.remaining) == ("py-replay-1", 2, 2, 0)
    assert rep.rerun == ["features.customer_ltv"]
    first = rep.records[0]
    assert first["object"]["customer_id"] == 1001 and first["provenance"]["partition"] == "2026-03-02"
    assert len(first["record_id"]) == 64
    # The same replay again sends the same records and releases nothing twice.
    retry = c.replay("shop.orders", "2026-03-02", "2026-03-02", replay_id="py-replay-1")
    assert sorted(r["record_id"] for r in retry.records) == sorted(r["record_id"] for r in rep.records)
    assert c.replay("shop.orders", "2026-03-02", "2026-03-02", replay_id="py-replay-2").released == 0

    monitor = {p["partition"]: p for p in c.monitor("shop.orders")}
    assert list(monitor) == ["2026-03-01", "2026-03-02"] and _n(monitor["2026-03-02"], "released") == 2
    events = c.events(subjects=["shop.orders"], types=["CHANGE_ANNOUNCED", "BACKFILL_COMPLETED"])  # short enum names in a query
    assert [e["type"] for e in events] == ["EVENT_TYPE_CHANGE_ANNOUNCED", "EVENT_TYPE_BACKFILL_COMPLETED"]
    assert events[1]["consumers"] == ["features.customer_ltv"]
    assert c.rerun_order("shop.orders") == ["features.customer_ltv"]

    # Over REST, a UUID now arrives as the canonical integer.
    day3 = c.ingest("shop.orders", [{"order_id": "ORD-0000000006", "customer_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                                     "amount": 30, "currency": "EUR", "status": "paid", "created_at": "2026-03-03T10:00:00Z",
                                     "items": 1}], partition="2026-03-03", batch_id="rest-1")
    assert (day3.status, day3.contract_version) == ("ACCEPTED", 2)
    assert day3.records[0]["record"]["object"]["customer_id"] == 1001


def _n(j, key):
    return int(j.get(key) or 0)


def test_import_conflicts(seam, tmp_path):
    """An import that would map one id to two commits nothing by default,
    and the clean pairs with on_conflict="skip"; a bad file is refused
    before anything is sent."""
    base, token, _ = seam
    c = Client(base, token)
    c.create_namespace("account", {"acc-ref": "string", "iban": "string"})
    ok = c.import_pairs("account", [("ACC-00000001", "DE44500105175407324931")], "acc-ref", "iban")
    assert ok.committed and ok.inserted == 1
    clash = [("ACC-00000002", "DE44500105175407324931"), ("ACC-00000003", "DE89370400440532013000")]
    failed = c.import_pairs("account", clash, "acc-ref", "iban")
    assert not failed.committed and len(failed.conflicts) == 1 and failed.inserted == 0
    skipped = c.import_pairs("account", clash, "acc-ref", "iban", on_conflict="skip")
    assert skipped.committed and skipped.inserted == 1 and len(skipped.conflicts) == 1
    bad = write(tmp_path, "bad.csv", "acc,iban\nACC-00000004\n")
    with pytest.raises(ValueError):
        c.import_csv("account", bad, "acc-ref", "iban")
    with pytest.raises(SeamError) as e:
        c.import_pairs("no-such", [("a", "b")], "acc-ref", "iban")
    assert e.value.status == 404


def test_over_rest_record_shape(seam):
    """The walkthrough's `Over REST` ingest, with short enum names accepted."""
    base, token, _ = seam
    c = Client(base, token)
    c.register_canonical_model({"name": "bank.payment", "owner": "team-bank", "fields": [
        {"name": "payment_id", "type": "UUID", "required": True}, {"name": "amount_cents", "type": "INT64"}]})
    c.register_contract({"subject": "bank.payments", "owner": "team-bank", "compatibility": "BACKWARD",
                         "mapping": {"canonical": "bank.payment", "fields": {"payment_id": {"from": "payment_id"}, "amount_cents": {"from": "amount_cents"}}},
                         "fields": [{"name": "payment_id", "type": "UUID", "required": True, "key": True},
                                    {"name": "account_ref", "type": "STRING", "required": True, "pattern": "^[A-Z]{2}[0-9]{2}"},
                                    {"name": "amount_cents", "type": "INT64", "required": True, "min": 0}]})
    res = c.ingest("bank.payments", [
        {"payment_id": "0b9e5c8e-3f0d-4a4e-9d43-1f3c2a6f6b01", "account_ref": "DE44500105175407324931", "amount_cents": 9007199254740993},
        {"payment_id": "not-a-uuid", "account_ref": "DE44", "amount_cents": -1},
    ], partition="2026-03-03", batch_id="rest-1")
    assert (res.accepted, res.quarantined) == (1, 1)
    reasons = {r["code"] for r in res.records[1]["reasons"]}
    assert "TYPE_MISMATCH" in reasons and "OUT_OF_RANGE" in reasons


def test_errors_and_openapi(seam):
    base, token, _ = seam
    with pytest.raises(SeamError) as e:
        Client(base, "wrong").subjects()
    assert e.value.status == 401 and e.value.code == "UNAUTHENTICATED"
    with pytest.raises(SeamError) as e:
        Client(base, token).contract("no.such")
    assert e.value.status == 404
    with urllib.request.urlopen(base + "/openapi.json") as resp:
        doc = json.load(resp)
    assert doc["openapi"].startswith("3.") and doc["info"]["title"] == "Seam API"
    assert "bearerAuth" in doc["components"]["securitySchemes"]


def test_odcs_document_and_lineage(seam):
    base, token, _ = seam
    c = Client(base, token)
    odcs = """apiVersion: v3.1.0
kind: DataContract
id: shipments
version: 1.0.0
status: active
team: {name: team-logistics}
schema:
  - name: shipments
    customProperties: [{property: seamSubject, value: logistics.shipments}]
    properties:
      - {name: shipment_id, logicalType: string, primaryKey: true, required: true}
      - {name: weight_kg, logicalType: number, logicalTypeOptions: {minimum: 0}}
"""
    reg = c.register_contract(odcs, "ODCS")
    assert reg["version"]["subject"] == "logistics.shipments"
    outcomes = c.record_lineage({
        "eventType": "COMPLETE", "eventTime": "2026-03-01T10:00:00Z", "producer": "https://example.com/airflow",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "0195b0d6-0000-7000-8000-00000000000a"}, "job": {"namespace": "airflow", "name": "daily_freight"},
        "inputs": [{"namespace": "kafka://broker:9092", "name": "logistics.shipments"}],
        "outputs": [{"namespace": "postgres://dwh:5432", "name": "dwh.public.freight_daily"}]})
    assert outcomes[0]["action"] == "LINEAGE_ACTION_CREATED"
    assert [a["consumer"] for a in c.blast_radius("logistics.shipments")] == ["airflow/daily_freight"]


def test_pip_install(tmp_path):
    """pip builds and installs the client offline, with no build dependency."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--quiet", "--target", str(target),
                    os.path.join(ROOT, "clients", "python")], check=True)
    out = subprocess.run([sys.executable, "-c", "import seam_client; print(seam_client.Client.__name__)"],
                         env={**os.environ, "PYTHONPATH": str(target)}, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "Client"


# LAB_FIELDS are the fields the lab model and the lab contract share.
LAB_FIELDS = """owner: team-lab
fields:
  - {name: sample_id, type: STRING, required: true, key: true}
  - {name: site, type: STRING}
  - {name: value, type: DOUBLE, required: true}
"""

LAB_MODEL = "name: lab.sample\n" + LAB_FIELDS

LAB_CONTRACT = "subject: lab.samples\n" + LAB_FIELDS + """checks:
  - {name: site_present, rule: required(site), policy: BLOCK}
mapping:
  canonical: lab.sample
  fields:
    sample_id: {from: sample_id}
    site: {from: site}
    value: {from: value}
"""


def test_partitions_write_audit_publish(seam):
    """Write, audit, publish through the client: a day with a record
    missing a BLOCK field is sealed BLOCKED whole; the corrected day sent
    as a replacement is publishable and counted once; a plain resend of
    accepted keys is quarantined as duplicates; wait_for_verdict answers at
    the seal and times out on an open partition."""
    base, token, _ = seam
    c = Client(base, token)
    c.register_canonical_model(LAB_MODEL)
    c.register_contract(LAB_CONTRACT)
    good = [{"sample_id": f"S-{i}", "site": "A", "value": i} for i in range(10)]
    bad = [dict(r) for r in good]
    del bad[4]["site"]

    first = c.ingest("lab.samples", bad[:5], "2026-05-01", batch_id="part-1", summary_only=True)
    assert first.raw["partition"]["status"] == "PARTITION_STATUS_OPEN"
    with pytest.raises(TimeoutError):
        c.wait_for_verdict("lab.samples", "2026-05-01", timeout=0.3)
    c.ingest("lab.samples", bad[5:], "2026-05-01", batch_id="part-2", summary_only=True)
    v = c.seal("lab.samples", "2026-05-01")
    assert (v.state, v.verdict, v.blocked, v.publishable) == ("SEALED", "BLOCKED", True, False)
    assert v.counts["received"] == 10 and v.counts["batches"] == 2
    assert [ch["check"] for ch in v.checks if ch.get("exceeded")] == ["site_present"]

    fixed = c.ingest("lab.samples", good, "2026-05-01", batch_id="fixed", replace=True, seal=True)
    assert fixed.accepted == 10 and len(fixed.records) == 10
    v = c.wait_for_verdict("lab.samples", "2026-05-01", timeout=10)
    assert (v.verdict, v.publishable, v.attempt, v.counts["accepted"]) == ("PASSED", True, 2, 10)

    again = c.ingest("lab.samples", good, "2026-05-01", batch_id="again", summary_only=True)
    assert again.raw["summary"].get("duplicates") in (10, "10") and again.accepted == 0
    assert c.partition("lab.samples", "2026-05-01", amendment=0).counts["accepted"] == 10
