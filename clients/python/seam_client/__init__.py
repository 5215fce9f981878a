"""A small typed client for Seam's REST API, with no dependency outside the
standard library (pandas is optional, for ingesting a DataFrame).

    from seam_client import Client
    seam = Client()  # SEAM_URL, SEAM_TOKEN or seam up's admin token, as the CLI finds them
    records = [{"order_id": "ORD-0000000101", "customer_id": 1001, "amount": 85.5, "currency": "EUR",
                "status": "paid", "created_at": "2026-03-01T09:12:00Z", "country": "DE", "items": 2}]
    result = seam.ingest("shop.orders", records, partition="2026-03-01")
    print(result.accepted, result.quarantined, result.status)
    verdict = seam.seal("shop.orders", "2026-03-01")
    print(verdict.verdict, verdict.counts["accepted"], [c["policy"] for c in verdict.checks])

Responses keep Seam's JSON as dictionaries; the results callers branch on
(ingest, replay, partition verdicts) are dataclasses. Their counts are
ints, measures floats (None where Seam has no figure, NaN on the wire)
and enum values their short names (PASSED, QUARANTINE, TYPE_MISMATCH);
raw keeps the JSON as Seam sent it. The token and the address are found
as the seam CLI finds them: the arguments, else SEAM_TOKEN and SEAM_URL,
else the admin token and the address seam up wrote into its data
directory (data_dir, else SEAM_DATA_DIR, else ./seam-data).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = ["Client", "SeamError", "IngestResult", "ImportResult", "ReplayResult", "PartitionVerdict", "find_token", "find_url",
           "content_batch_id"]

Record = Mapping[str, Any]
JSON = Dict[str, Any]


class SeamError(Exception):
    """A call Seam answered with an error: the HTTP status, the gRPC code
    name, the message, and the details (field violations, reasons)."""

    def __init__(self, status: int, code: str, message: str, details: Optional[List[Any]] = None):
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status, self.code, self.message, self.details = status, code, message, details or []


def _int(v: Any) -> int:
    # int64 fields travel as JSON strings so no digit is lost.
    return int(v) if v not in (None, "") else 0


# Prefixes of Seam's enum value names, longest first; typed results drop them.
_ENUM_PREFIXES = sorted([
    "POLICY_", "CHECK_KIND_", "ERROR_CODE_", "BATCH_STATUS_", "PARTITION_VERDICT_", "PARTITION_STATUS_",
    "RECORD_STATUS_", "SEAL_CAUSE_", "ALERT_KIND_", "ALERT_STATE_", "SEVERITY_", "FIELD_TYPE_", "VERSION_STATUS_",
    "EVENT_TYPE_", "VERDICT_", "REASON_", "FORMAT_KIND_", "USAGE_",
], key=len, reverse=True)
_INT_RE = re.compile(r"-?[0-9]+")
_ENUM_RE = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+")
_NO_FIGURE = {"NaN": None, "Infinity": float("inf"), "-Infinity": float("-inf")}
# Keys whose values are measures: floats, None where Seam has no figure.
_MEASURES = {"observed", "baseline", "expected", "threshold", "rate", "match_rate", "sealed_match_rate", "value",
             "min", "max", "mean", "stddev", "null_rate", "deviation"}


def _typed(v: Any, key: str = "") -> Any:
    """Seam's JSON as Python values: int64 strings as ints, measures as
    floats (NaN as None), enum names without their prefix. Records (the
    data itself) are left as sent."""
    if isinstance(v, dict):
        return {k: (x if k in ("record", "object", "json", "raw") else _typed(x, k)) for k, x in v.items()}
    if isinstance(v, list):
        return [_typed(x, key) for x in v]
    if isinstance(v, str):
        if v in _NO_FIGURE and (key in _MEASURES or key == ""):
            return _NO_FIGURE[v]
        if key in _MEASURES:
            try:
                return float(v)
            except ValueError:
                return v
        if _INT_RE.fullmatch(v) and key not in ("partition", "message", "subject", "name", "batch_id", "field"):
            return int(v)
        if _ENUM_RE.fullmatch(v):
            for p in _ENUM_PREFIXES:
                if v.startswith(p):
                    return v[len(p):]
        return v
    if key in _MEASURES and isinstance(v, (int, float)) and not isinstance(v, bool):
        return None if v != v else float(v)
    return v


@dataclass
class IngestResult:
    """The verdict on one batch."""

    status: str
    received: int
    accepted: int
    quarantined: int
    contract_version: int
    retried: bool
    records: List[JSON] = field(default_factory=list)
    alerts: List[JSON] = field(default_factory=list)
    raw: JSON = field(default_factory=dict)
    # partition is the verdict when the batch sealed it (seal=True).
    partition: Optional["PartitionVerdict"] = None
    batch_id: str = ""

    @classmethod
    def from_json(cls, j: JSON) -> "IngestResult":
        s = j.get("summary", {})
        return cls(status=s.get("status", "").replace("BATCH_STATUS_", ""), received=_int(s.get("received")),
                   accepted=_int(s.get("accepted")), quarantined=_int(s.get("quarantined")),
                   contract_version=_int(s.get("contract_version")), retried=bool(s.get("retried")),
                   records=[_typed(_canonical_result(r)) for r in j.get("records", [])], alerts=_typed(j.get("alerts", [])),
                   partition=_verdict(j["partition"].get("subject", ""), j["partition"].get("partition", ""), j)
                   if isinstance(j.get("partition"), dict) else None, raw=j)


@dataclass
class ImportResult:
    """What an id table import did. Conflicts list pairs that would have
    mapped one id to two; with on_conflict="fail" nothing was committed."""

    received: int
    inserted: int
    unchanged: int
    removed: int
    committed: bool
    generation: int
    table_size: int
    conflicts: List[JSON]
    raw: JSON

    @classmethod
    def from_json(cls, j: JSON) -> "ImportResult":
        return cls(received=_int(j.get("received")), inserted=_int(j.get("inserted")), unchanged=_int(j.get("unchanged")),
                   removed=_int(j.get("removed")), committed=bool(j.get("committed")), generation=_int(j.get("generation")),
                   table_size=_int(j.get("table_size")), conflicts=j.get("conflicts", []), raw=j)


@dataclass
class ReplayResult:
    """What a replay released and what stays quarantined: the released
    canonical records (each with its deterministic record_id), and the
    downstream consumers to rerun, in order."""

    replay_id: str
    held: int
    released: int
    remaining: int
    rerun: List[str]
    records: List[JSON]
    raw: JSON
    event_sequence: int = 0


@dataclass
class PartitionVerdict:
    """A partition's state: status OPEN or SEALED, its verdict once sealed
    (PASSED, PASSED_WITH_ALERTS or BLOCKED), its counts and the checks that
    decided. A pipeline publishes a staged partition only when sealed and
    not blocked."""

    subject: str
    partition: str
    state: str
    verdict: str
    raw: JSON
    amendment: int = 0
    attempt: int = 0
    counts: JSON = field(default_factory=dict)
    checks: List[JSON] = field(default_factory=list)
    notice: str = ""

    @property
    def sealed(self) -> bool:
        return self.state == "SEALED"

    @property
    def blocked(self) -> bool:
        return self.verdict == "BLOCKED"

    @property
    def publishable(self) -> bool:
        """Sealed, and not BLOCKED."""
        return self.sealed and not self.blocked


class Client:
    """Seam's REST API. base_url is the HTTP address (default SEAM_URL, else
    the address seam up wrote into data_dir, else http://127.0.0.1:8080,
    where seam up serves by default); token a bearer token (default:
    SEAM_TOKEN, else the admin token in data_dir, as the CLI)."""

    def __init__(self, base_url: str = "", token: Optional[str] = None, timeout: float = 30.0, *, data_dir: str = ""):
        self.base_url = (base_url or find_url(data_dir)).rstrip("/")
        self.token = token if token else find_token(data_dir)
        self.timeout = timeout

    # -- plumbing -------------------------------------------------------

    def call(self, method: str, path: str, body: Any = None, query: Optional[Mapping[str, Any]] = None) -> JSON:
        """Call any route of the API (see /openapi.json) and return its JSON."""
        data = None if body is None else json.dumps(body).encode()
        raw = self._send(method, path, data, query)
        return json.loads(raw) if raw else {}

    def call_stream(self, method: str, path: str, body: Any = None, messages: Optional[Iterable[Any]] = None,
                    query: Optional[Mapping[str, Any]] = None) -> List[JSON]:
        """Call a streaming route. A client stream (such as the id table
        import) sends its messages one JSON object after another in one
        body; a server stream answers one {"result": …} object per line,
        returned here in order. An {"error": …} line raises SeamError."""
        data: Any = None
        if messages is not None:
            data = _ndjson(messages)
        elif body is not None:
            data = json.dumps(body).encode()
        raw = self._send(method, path, data, query)
        out = []
        for line in raw.splitlines():
            if not line.strip():
                continue
            j = json.loads(line)
            if "error" in j:
                e = j["error"] or {}
                raise SeamError(200, _code_name(e.get("code")), e.get("message", ""), e.get("details"))
            out.append(j.get("result", j))
        return out

    def _send(self, method: str, path: str, data: Any, query: Optional[Mapping[str, Any]]) -> bytes:
        url = self.base_url + path
        if query:
            pairs = []
            for k, v in query.items():
                if v is None:
                    continue
                for item in (v if isinstance(v, (list, tuple)) else [v]):
                    pairs.append((k, str(item)))
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                j = json.loads(raw or b"{}")
            except ValueError:
                j = {"message": raw.decode(errors="replace")}
            raise SeamError(e.code, _code_name(j.get("code")), j.get("message", e.reason), j.get("details")) from None
        return raw

    # -- registry -------------------------------------------------------

    def subjects(self) -> List[JSON]:
        return self.call("GET", "/v1/subjects").get("subjects", [])

    def register_contract(self, document: Union[str, Mapping[str, Any]], fmt: str = "SEAM", *, subject: str = "",
                          owner: str = "", strict: bool = False, override_reason: str = "", effective_time: str = "") -> JSON:
        """Register a contract: a dict in Seam's form, or a document's text
        (fmt SEAM for Seam YAML, ODCS, or JSON_SCHEMA)."""
        body = self._contract_body(document, fmt, subject, owner, strict, override_reason, effective_time)
        return self.call("POST", "/v1/contracts", body)

    def check_contract(self, document: Union[str, Mapping[str, Any]], fmt: str = "SEAM", *, subject: str = "",
                       owner: str = "", strict: bool = False, override_reason: str = "", effective_time: str = "") -> JSON:
        """Dry-run a contract version: verdict, changes, notice owed,
        consumers affected, whether its migration can run, and how many held
        records it would let pass."""
        body = self._contract_body(document, fmt, subject, owner, strict, override_reason, effective_time)
        return self.call("POST", "/v1/contracts:check", body)

    @staticmethod
    def _contract_body(document, fmt, subject, owner, strict, override_reason, effective_time) -> JSON:
        if isinstance(document, Mapping):
            body: JSON = {"contract": dict(document)}
        else:
            body = {"document": {"format": fmt, "content": document, "subject": subject, "owner": owner, "strict": strict}}
        if override_reason:
            body["override"] = {"reason": override_reason}
        if effective_time:
            body["effective_time"] = effective_time
        return body

    def contract(self, subject: str, version: int = 0) -> JSON:
        return self.call("GET", f"/v1/subjects/{_q(subject)}/contract", query={"version": version or None}).get("version", {})

    def register_canonical_model(self, document: Union[str, Mapping[str, Any]]) -> JSON:
        body = {"model": dict(document)} if isinstance(document, Mapping) else {"document": {"format": "SEAM", "content": document}}
        return self.call("POST", "/v1/canonical-models", body)

    def register_consumer(self, consumer: Mapping[str, Any]) -> JSON:
        return self.call("POST", "/v1/consumers", {"consumer": dict(consumer)}).get("consumer", {})

    def consumers(self, subject: str = "") -> List[JSON]:
        return self.call("GET", "/v1/consumers", query={"subject": subject or None}).get("consumers", [])

    def blast_radius(self, subject: str, fields: Sequence[str] = ()) -> List[JSON]:
        return self.call("POST", f"/v1/subjects/{_q(subject)}:blastRadius", {"fields": list(fields)}).get("consumers", [])

    def rerun_order(self, subject: str = "", *, canonical: str = "", dataset: str = "") -> List[str]:
        """The consumers downstream of a subject (or canonical model, or
        dataset), each after everything it reads from."""
        q = {"subject": subject or None, "canonical": canonical or None, "dataset": dataset or None}
        return self.call("GET", "/v1/rerun-order", query=q).get("consumers", [])

    def events(self, subjects: Sequence[str] = (), types: Sequence[str] = (), after: int = 0) -> List[JSON]:
        q = {"subjects": list(subjects), "types": list(types), "after_sequence": after or None}
        return self.call("GET", "/v1/events", query=q).get("events", [])

    def record_lineage(self, events: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]) -> List[JSON]:
        """Send OpenLineage run events (the Marquez-compatible route)."""
        return self.call("POST", "/api/v1/lineage", events).get("outcomes", [])

    # -- idmap ----------------------------------------------------------

    def create_namespace(self, name: str, formats: Mapping[str, str], description: str = "") -> JSON:
        """Create an id namespace. formats maps each format's name to its
        kind, as the CLI's --format NAME:KIND does:
        {"legacy-int": "int", "uuid": "uuid", "crm-code": "string"}."""
        body = {"name": name, "description": description,
                "formats": [{"name": n, "kind": str(k).upper()} for n, k in formats.items()]}
        return self.call("POST", "/v1/namespaces", body).get("namespace", {})

    def namespace(self, name: str) -> JSON:
        return self.call("GET", f"/v1/namespaces/{_q(name)}").get("namespace", {})

    def import_pairs(self, namespace: str, pairs: Iterable[Union[Tuple[str, str], Sequence[str], str]], from_format: str,
                     to_format: str = "", *, replace: bool = False, on_conflict: str = "fail", members: bool = False,
                     chunk_size: int = 10000) -> ImportResult:
        """Bulk-load a lookup table: (from_id, to_id) pairs, or with
        members=True the known ids of from_format. The import is atomic;
        re-importing the same pairs changes nothing. on_conflict "fail"
        commits nothing when a pair would map one id to two, "skip" commits
        the clean pairs; both list the conflicts. The pairs stream to the
        server in chunks, one body, without being held in memory whole."""
        policy = {"fail": "FAIL", "skip": "SKIP"}.get(on_conflict.lower())
        if policy is None:
            raise ValueError(f"on_conflict {on_conflict!r}: use fail or skip")
        header = {"namespace": namespace, "from_format": from_format, "to_format": to_format, "on_conflict": policy,
                  "replace": replace, "members": members}

        def messages() -> Iterator[JSON]:
            yield {"header": header}
            chunk: List[JSON] = []
            for p in pairs:
                if members:
                    chunk.append({"from": str(p if isinstance(p, (str, int)) else p[0])})
                else:
                    a, b = p  # type: ignore[misc]
                    chunk.append({"from": str(a), "to": str(b)})
                if len(chunk) == chunk_size:
                    yield {"chunk": {"pairs": chunk}}
                    chunk = []
            if chunk:
                yield {"chunk": {"pairs": chunk}}

        out = self.call_stream("POST", "/v1/namespaces:import", messages=messages())
        return ImportResult.from_json(out[-1] if out else {})

    def import_csv(self, namespace: str, path: str, from_format: str, to_format: str = "", *, header: bool = True,
                   **kwargs: Any) -> ImportResult:
        """import_pairs from a CSV file as `seam idmap import` reads it: two
        columns (from-id, to-id), or one with members=True; the first row
        is a header unless header=False."""
        width = 1 if kwargs.get("members") else 2

        def rows() -> Iterator[Sequence[str]]:
            with open(path, newline="") as f:
                for line, row in enumerate(csv.reader(f), 1):
                    if line == 1 and header:
                        continue
                    if len(row) != width:
                        raise ValueError(f"{path}:{line}: {len(row)} columns, want {width}")
                    yield tuple(c.strip() for c in row) if width == 2 else row[0].strip()

        return self.import_pairs(namespace, rows(), from_format, to_format, **kwargs)

    # -- gate -----------------------------------------------------------

    def ingest(self, subject: str, records: Union[Iterable[Record], Any], partition: str, batch_id: str = "",
               summary_only: bool = False, *, replace: bool = False, seal: bool = False) -> IngestResult:
        """Send a batch: a list of dicts, or a pandas DataFrame (one record
        per row). The same batch_id sent again returns the stored verdicts;
        without one, the id is derived from the subject, partition and
        records (content_batch_id), so sending the same batch again is a
        retry, written once.
        replace makes the batch the first of a new sending of the partition,
        superseding everything sent before; seal seals the partition after
        the batch (the result's raw["partition"] then holds its verdict)."""
        rows = _records(records)
        if not batch_id:
            batch_id = content_batch_id(subject, partition, rows, replace=replace)
        body = {"partition": partition, "batch_id": batch_id, "summary_only": summary_only,
                "replace": replace, "seal": seal, "batch": {"objects": {"records": rows}}}
        res = IngestResult.from_json(self.call("POST", f"/v1/subjects/{_q(subject)}:ingest", body))
        res.batch_id = batch_id
        return res

    def contain(self, subject: str, reason: str) -> JSON:
        return self.call("POST", f"/v1/subjects/{_q(subject)}:contain", {"reason": reason})

    def release(self, subject: str, reason: str) -> JSON:
        return self.call("POST", f"/v1/subjects/{_q(subject)}:release", {"reason": reason})

    def plan_replay(self, subject: str, partition_from: str, partition_to: str) -> JSON:
        """What a replay of the window would do, without doing it: held,
        would_release, would_remain, per partition."""
        window = {"subject": subject, "partition_from": partition_from, "partition_to": partition_to}
        return self.call("POST", "/v1/replay:plan", {"window": window})

    def replay(self, subject: str, partition_from: str, partition_to: str, replay_id: str = "", reason: str = "",
               summary_only: bool = False) -> ReplayResult:
        """Replay quarantined records of a partition window through the
        current contract, mapping and id tables. The released canonical
        records come back with the summary; a replay_id makes a retry send
        them again and release nothing twice."""
        window = {"subject": subject, "partition_from": partition_from, "partition_to": partition_to}
        body = {"window": window, "replay_id": replay_id, "reason": reason, "summary_only": summary_only}
        records: List[JSON] = []
        summary: JSON = {}
        for m in self.call_stream("POST", "/v1/replay", body):
            if "record" in m:
                records.append(_canonical(m["record"]))
            elif "summary" in m:
                summary = m["summary"]
        return ReplayResult(replay_id=summary.get("replay_id", ""), held=_int(summary.get("held")),
                            released=_int(summary.get("released")), remaining=_int(summary.get("remaining")),
                            rerun=summary.get("rerun_consumers", []), records=records, raw=summary,
                            event_sequence=_int(summary.get("event_sequence")))

    def monitor(self, subject: str, partition_from: str = "", partition_to: str = "") -> List[JSON]:
        q = {"partition_from": partition_from or None, "partition_to": partition_to or None}
        return self.call("GET", f"/v1/subjects/{_q(subject)}/monitor", query=q).get("partitions", [])

    def alerts(self, subject: str = "", after: int = 0, limit: int = 0) -> List[JSON]:
        q = {"subject": subject or None, "after_sequence": after or None, "limit": limit or None}
        return self.call("GET", "/v1/alerts", query=q).get("alerts", [])

    # Partitions: write, audit, publish (docs/partitions.md).

    def seal(self, subject: str, partition: str) -> PartitionVerdict:
        """Seal a partition: the gate judges it whole and gives its verdict."""
        j = self.call("POST", f"/v1/subjects/{_q(subject)}/partitions/{_q(partition)}:seal", {})
        return _verdict(subject, partition, j)

    def partition(self, subject: str, partition: str, amendment: Optional[int] = None) -> PartitionVerdict:
        """A partition's state (amendment None: the latest)."""
        j = self.call("GET", f"/v1/subjects/{_q(subject)}/partitions/{_q(partition)}", query={"amendment": amendment})
        return _verdict(subject, partition, j)

    def wait_for_verdict(self, subject: str, partition: str, timeout: float = 60.0) -> PartitionVerdict:
        """Wait until a partition is sealed, or raise TimeoutError. The gate
        holds each request up to a minute and answers at the seal."""
        deadline = time.monotonic() + timeout
        while True:
            left = max(deadline - time.monotonic(), 0.001)
            # Each request waits less than the client's own timeout.
            step = min(left, 60.0, max(self.timeout - 5.0, 1.0))
            j = self.call("GET", f"/v1/subjects/{_q(subject)}/partitions/{_q(partition)}:wait",
                          query={"timeout": f"{step:.3f}s"})
            v = _verdict(subject, partition, j)
            if v.sealed:
                return v
            if time.monotonic() >= deadline:
                raise TimeoutError(f"partition {partition} of {subject} has no verdict after {timeout}s (still {v.state})")


DEFAULT_URL = "http://127.0.0.1:8080"


def _data_file(data_dir: str, name: str) -> str:
    """The path of name in seam up's data directory: data_dir, else
    SEAM_DATA_DIR, else ./seam-data."""
    return os.path.join(data_dir or os.environ.get("SEAM_DATA_DIR") or "./seam-data", name)


def find_url(data_dir: str = "") -> str:
    """The REST address as the seam CLI finds seam up: SEAM_URL, else the
    http address a running seam up wrote into its data directory
    (addresses.json in data_dir, else SEAM_DATA_DIR, else ./seam-data),
    else http://127.0.0.1:8080. A seam up serving TLS is reached with
    SEAM_URL=https://…; the file names no scheme."""
    if os.environ.get("SEAM_URL"):
        return os.environ["SEAM_URL"].strip()
    path = _data_file(data_dir, "addresses.json")
    try:
        with open(path) as f:
            addrs = json.load(f)
    except FileNotFoundError:
        return DEFAULT_URL
    except (OSError, ValueError) as e:
        raise SeamError(0, "INVALID_ARGUMENT", f"{path}: {e}; delete it or set SEAM_URL") from None
    http = addrs.get("http") if isinstance(addrs, dict) else None
    if not http:  # seam up without REST
        raise SeamError(0, "INVALID_ARGUMENT", f"{path} names no http address: seam up runs without REST (--http-addr); set SEAM_URL")
    return "http://" + http


def find_token(data_dir: str = "") -> str:
    """The bearer token as the seam CLI finds it: SEAM_TOKEN, else the admin
    token seam up wrote into its data directory (data_dir, else
    SEAM_DATA_DIR, else ./seam-data). Raises SeamError naming where it
    looked when there is none."""
    if os.environ.get("SEAM_TOKEN"):
        return os.environ["SEAM_TOKEN"].strip()
    path = _data_file(data_dir, "admin.token")
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        raise SeamError(0, "UNAUTHENTICATED", f"no token: pass token=, set SEAM_TOKEN, or point data_dir (SEAM_DATA_DIR) "
                                              f"at seam up's data directory ({path}: {e.strerror})") from None


def content_batch_id(subject: str, partition: str, records: Sequence[Record], replace: bool = False) -> str:
    """A batch id derived from what is sent: the same records of the same
    subject and partition give the same id, so a retry is recognised."""
    h = hashlib.sha256()
    h.update(json.dumps([subject, partition, bool(replace)]).encode())
    for r in records:
        h.update(b"\n" + json.dumps(r, sort_keys=True, separators=(",", ":"), default=str).encode())
    return "py-" + h.hexdigest()[:32]


def _verdict(subject: str, partition: str, j: JSON) -> PartitionVerdict:
    p = j.get("partition", j)
    return PartitionVerdict(subject=subject, partition=partition,
                            state=str(p.get("status", "")).replace("PARTITION_STATUS_", ""),
                            verdict=str(p.get("verdict", "")).replace("PARTITION_VERDICT_", ""), raw=j,
                            amendment=_int(p.get("amendment")), attempt=_int(p.get("attempt")),
                            counts={k: _int(v) for k, v in p.get("counts", {}).items()},
                            checks=_typed(p.get("checks", [])), notice=str(p.get("notice", "")))


def _canonical(rec: JSON) -> JSON:
    """A canonical record carries its body as "object" (records sent as
    objects) or as "json", JSON text in base64 (records sent as bytes, and
    released by a replay); the client adds "object" to the latter, so a
    caller reads both the same way."""
    if "object" not in rec and "json" in rec:
        rec = dict(rec, object=json.loads(base64.b64decode(rec["json"])))
    return rec


def _canonical_result(r: JSON) -> JSON:
    if isinstance(r.get("record"), dict):
        r = dict(r, record=_canonical(r["record"]))
    return r


def _ndjson(messages: Iterable[Any]) -> Iterator[bytes]:
    for m in messages:
        yield json.dumps(m).encode() + b"\n"


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _records(records: Any) -> List[JSON]:
    to_dict = getattr(records, "to_dict", None)
    if callable(to_dict):  # a pandas DataFrame
        rows = records.to_dict(orient="records")
        return [{k: _plain(v) for k, v in r.items() if not _missing(v)} for r in rows]
    return [dict(r) for r in records]


def _missing(v: Any) -> bool:
    try:
        return v is None or v != v  # NaN is how pandas marks a missing cell
    except Exception:  # pandas' NA refuses comparison
        return True


def _plain(v: Any) -> Any:
    item = getattr(v, "item", None)  # numpy scalars
    if callable(item):
        return item()
    isoformat = getattr(v, "isoformat", None)  # pandas Timestamps
    if callable(isoformat):
        return isoformat().replace("+00:00", "Z")
    return v


_CODES = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
          "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
          "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"]


def _code_name(code: Any) -> str:
    if isinstance(code, int) and 0 <= code < len(_CODES):
        return _CODES[code]
    return str(code or "")
