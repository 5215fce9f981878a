"""The module docstring's example runs as written, and the client finds
its token, names its batches and types its results as documented."""

import math
import os
import textwrap

import pytest

import seam_client
from seam_client import Client, SeamError, content_batch_id, find_token, find_url

from conftest import ROOT


def read(name):
    with open(os.path.join(ROOT, "core", "examples", name)) as f:
        return f.read()


def setup_orders(c):
    """shop.orders v1 and what it needs, whether or not another test made them."""
    try:
        c.create_namespace("customer", {"legacy-int": "int", "uuid": "uuid", "crm-code": "string"})
    except SeamError as e:
        assert e.code == "ALREADY_EXISTS", e
    c.register_canonical_model(read("commerce_order.yaml"))
    try:
        c.register_contract(read("shop_orders_v1.yaml"))
    except SeamError as e:  # a later version is registered already
        assert e.code in ("ALREADY_EXISTS", "FAILED_PRECONDITION"), e


def docstring_example():
    lines = seam_client.__doc__.split("\n\n")[1]
    return textwrap.dedent(lines)


def test_docstring_example_runs(fresh_seam, monkeypatch, capsys):
    base, _, data = fresh_seam
    monkeypatch.setenv("SEAM_URL", base)
    monkeypatch.delenv("SEAM_TOKEN", raising=False)
    monkeypatch.setenv("SEAM_DATA_DIR", data)
    setup_orders(Client())
    code = docstring_example()
    assert "Client()" in code and "seam.ingest(" in code
    exec(compile(code, "seam_client docstring", "exec"), {})
    out = capsys.readouterr().out.split("\n")
    accepted, quarantined, status = out[0].split()
    assert (accepted, quarantined, status) == ("1", "0", "ACCEPTED")
    verdict, n, policies = out[1].split(" ", 2)
    assert verdict in ("PASSED", "PASSED_WITH_ALERTS") and n == "1"  # one partition: no baseline yet
    assert "POLICY_" not in policies


def test_token_found_as_the_cli_finds_it(seam, monkeypatch, tmp_path):
    base, token, data = seam
    monkeypatch.setenv("SEAM_TOKEN", token)
    assert find_token(str(tmp_path)) == token  # SEAM_TOKEN first
    monkeypatch.delenv("SEAM_TOKEN")
    assert find_token(data) == token  # then the data dir's admin.token
    monkeypatch.setenv("SEAM_DATA_DIR", data)
    assert Client(base).subjects() is not None
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SEAM_DATA_DIR")
    with pytest.raises(SeamError) as e:
        find_token()
    assert "SEAM_TOKEN" in str(e.value) and "seam-data" in str(e.value)


def test_batch_id_from_content(fresh_seam):
    base, token, _ = fresh_seam
    c = Client(base, token)
    setup_orders(c)
    rec = [{"order_id": "ORD-0000000201", "customer_id": 1001, "amount": 5, "currency": "EUR", "status": "paid",
            "created_at": "2026-04-01T09:00:00Z", "country": "DE", "items": 1}]
    assert content_batch_id("shop.orders", "2026-04-01", rec) == content_batch_id("shop.orders", "2026-04-01", [dict(rec[0])])
    assert content_batch_id("shop.orders", "2026-04-01", rec) != content_batch_id("shop.orders", "2026-04-02", rec)
    first = c.ingest("shop.orders", rec, partition="2026-04-01")
    again = c.ingest("shop.orders", rec, partition="2026-04-01")
    assert first.batch_id == again.batch_id and first.batch_id.startswith("py-")
    assert (first.accepted, again.accepted, again.retried) == (1, 1, True)
    v = c.partition("shop.orders", "2026-04-01")
    assert v.counts["received"] == 1  # the retry was written once


def test_typed_results(fresh_seam):
    base, token, _ = fresh_seam
    c = Client(base, token)
    setup_orders(c)
    bad = [{"order_id": "ORD-0000000301", "customer_id": 1001, "amount": -5, "currency": "EUR", "status": "paid",
            "created_at": "2026-05-01T09:00:00Z", "country": "DE", "items": 1}]
    res = c.ingest("shop.orders", bad, partition="2026-05-01", seal=True)
    assert isinstance(res.quarantined, int) and res.quarantined == 1
    assert res.records[0]["status"] == "QUARANTINED"
    assert {r["code"] for r in res.records[0]["reasons"]} >= {"OUT_OF_RANGE"}
    v = res.partition
    assert v is not None and v.sealed and v.verdict in ("PASSED_WITH_ALERTS", "BLOCKED", "PASSED")
    assert v.checks, v.raw
    for ch in v.checks:
        assert isinstance(ch.get("failures", 0), int) and isinstance(ch.get("rows", 0), int), ch
        assert not str(ch.get("policy", "")).startswith("POLICY_"), ch
        for k in ("observed", "baseline"):
            if k in ch:
                assert ch[k] is None or (isinstance(ch[k], float) and not math.isnan(ch[k])), ch
    failing = [ch for ch in v.checks if ch.get("failures")]
    assert failing and failing[0]["failures"] == 1 and failing[0]["policy"] in ("QUARANTINE", "BLOCK", "ALERT")


def test_url_found_as_the_cli_finds_it(seam, monkeypatch, tmp_path):
    base, token, data = seam
    monkeypatch.setenv("SEAM_TOKEN", token)
    monkeypatch.delenv("SEAM_URL", raising=False)
    assert find_url(data) == base  # the address seam up wrote, on its free port
    monkeypatch.setenv("SEAM_DATA_DIR", data)
    assert Client().subjects() is not None
    monkeypatch.setenv("SEAM_URL", "http://127.0.0.1:1")
    assert find_url(data) == "http://127.0.0.1:1"  # SEAM_URL first
    monkeypatch.delenv("SEAM_URL")
    monkeypatch.delenv("SEAM_DATA_DIR")
    monkeypatch.chdir(tmp_path)
    assert find_url() == "http://127.0.0.1:8080"  # no seam up here
    (tmp_path / "seam-data").mkdir()
    (tmp_path / "seam-data" / "addresses.json").write_text('{"grpc": ')
    with pytest.raises(SeamError) as e:
        find_url()
    assert "addresses.json" in str(e.value)
