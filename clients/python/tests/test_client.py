"""The README's walkthrough, over REST, through the Python client, against
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


def test_walkthrough(seam):
    base, token, _ = seam
    c = Client(base, token)
    c.call("POST", "/v1/namespaces", {"name": "customer", "formats": [{"name": "legacy-int", "kind": "INT"}, {"name": "uuid", "kind": "UUID"}]})
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

    day2 = c.ingest("shop.orders", DAY2, partition="2026-03-02", batch_id="day2")
    assert (day2.status, day2.quarantined) == ("QUARANTINED", 2)
    c.contain("shop.orders", "INC-8: customer_id arrives as UUIDs")

    check = c.check_contract(read("shop_orders_v2.yaml"))
    assert check["verdict"] == "VERDICT_REFUSED"
    assert [a["consumer"] for a in check["affected_consumers"]] == ["features.customer_ltv"]
    v2 = c.register_contract(read("shop_orders_v2.yaml"), override_reason="INC-8: the source already sends UUIDs")
    assert v2["version"]["version"] == 2 and v2["version"]["status"] == "VERSION_STATUS_ACTIVE"
    c.release("shop.orders", "v2 maps UUIDs back to legacy-int")

    with pytest.raises(SeamError) as e:
        c.plan_replay("shop.orders", "2026-03-02", "2026-03-02")
    assert e.value.code == "FAILED_PRECONDITION"
    # Without the uuid→legacy-int table the replay is refused, naming it.
    with pytest.raises(SeamError) as e:
        c.replay("shop.orders", "2026-03-02", "2026-03-02", replay_id="py-replay-1")
    assert e.value.status == 400

    monitor = c.monitor("shop.orders")
    assert [p["partition"] for p in monitor] == ["2026-03-01", "2026-03-02"]
    assert any(a.get("kind", "").endswith("MATCH_RATE") or "match_rate" in json.dumps(a) for a in c.alerts("shop.orders"))
    types = {e["type"] for e in c.events(subjects=["shop.orders"])}
    assert "EVENT_TYPE_CHANGE_ANNOUNCED" in types and "EVENT_TYPE_SOURCE_CONTAINED" in types


def test_over_rest_record_shape(seam):
    """The README's `Over REST` ingest, with short enum names accepted."""
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
    assert "ERROR_CODE_TYPE_MISMATCH" in reasons and "ERROR_CODE_OUT_OF_RANGE" in reasons


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
