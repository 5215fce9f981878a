"""A small typed client for Seam's REST API, with no dependency outside the
standard library (pandas is optional, for ingesting a DataFrame).

    from seam_client import Client
    seam = Client("http://127.0.0.1:8080", token=open("seam-data/admin.token").read().strip())
    result = seam.ingest("shop.orders", records, partition="2026-03-01")
    print(result.accepted, result.quarantined, result.status)

Responses keep Seam's JSON as dictionaries; the results callers branch on
(ingest, replay, partition verdicts) are dataclasses with integer counts.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

__all__ = ["Client", "SeamError", "IngestResult", "ReplayResult", "PartitionVerdict"]

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

    @classmethod
    def from_json(cls, j: JSON) -> "IngestResult":
        s = j.get("summary", {})
        return cls(status=s.get("status", "").replace("BATCH_STATUS_", ""), received=_int(s.get("received")),
                   accepted=_int(s.get("accepted")), quarantined=_int(s.get("quarantined")),
                   contract_version=_int(s.get("contract_version")), retried=bool(s.get("retried")),
                   records=j.get("records", []), alerts=j.get("alerts", []), raw=j)


@dataclass
class ReplayResult:
    """What a replay released and what stays quarantined."""

    replay_id: str
    held: int
    released: int
    remaining: int
    rerun: List[str]
    records: List[JSON]
    raw: JSON


@dataclass
class PartitionVerdict:
    """A sealed (or still open) partition's verdict."""

    subject: str
    partition: str
    state: str
    verdict: str
    raw: JSON

    @property
    def sealed(self) -> bool:
        return "SEALED" in self.state.upper() or self.verdict not in ("", "UNSPECIFIED", "PARTITION_VERDICT_UNSPECIFIED")


class Client:
    """Seam's REST API. base_url is the HTTP address (seam up serves
    http://127.0.0.1:8080); token a bearer token."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    # -- plumbing -------------------------------------------------------

    def call(self, method: str, path: str, body: Any = None, query: Optional[Mapping[str, Any]] = None) -> JSON:
        """Call any route of the API (see /openapi.json) and return its JSON."""
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
        data = None if body is None else json.dumps(body).encode()
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
        return json.loads(raw) if raw else {}

    # -- registry -------------------------------------------------------

    def subjects(self) -> List[JSON]:
        return self.call("GET", "/v1/subjects").get("subjects", [])

    def register_contract(self, document: Union[str, Mapping[str, Any]], fmt: str = "SEAM", *, subject: str = "",
                          owner: str = "", strict: bool = False, override_reason: str = "", effective_time: str = "") -> JSON:
        """Register a contract: a dict in Seam's form, or a document's text
        (fmt SEAM for Seam YAML, ODCS, or JSON_SCHEMA)."""
        body = self._contract_body(document, fmt, subject, owner, strict)
        if override_reason:
            body["override"] = {"reason": override_reason}
        if effective_time:
            body["effective_time"] = effective_time
        return self.call("POST", "/v1/contracts", body)

    def check_contract(self, document: Union[str, Mapping[str, Any]], fmt: str = "SEAM", *, subject: str = "",
                       owner: str = "", strict: bool = False) -> JSON:
        """Dry-run a contract version: verdict, changes, notice owed, consumers affected."""
        return self.call("POST", "/v1/contracts:check", self._contract_body(document, fmt, subject, owner, strict))

    @staticmethod
    def _contract_body(document, fmt, subject, owner, strict) -> JSON:
        if isinstance(document, Mapping):
            return {"contract": dict(document)}
        return {"document": {"format": fmt, "content": document, "subject": subject, "owner": owner, "strict": strict}}

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

    def events(self, subjects: Sequence[str] = (), types: Sequence[str] = (), after: int = 0) -> List[JSON]:
        q = {"subjects": list(subjects), "types": list(types), "after_sequence": after or None}
        return self.call("GET", "/v1/events", query=q).get("events", [])

    def record_lineage(self, events: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]) -> List[JSON]:
        """Send OpenLineage run events (the Marquez-compatible route)."""
        return self.call("POST", "/api/v1/lineage", events).get("outcomes", [])

    # -- gate -----------------------------------------------------------

    def ingest(self, subject: str, records: Union[Iterable[Record], Any], partition: str, batch_id: str = "",
               summary_only: bool = False) -> IngestResult:
        """Send a batch: a list of dicts, or a pandas DataFrame (one record
        per row). The same batch_id sent again returns the stored verdicts."""
        rows = _records(records)
        body = {"partition": partition, "batch_id": batch_id, "summary_only": summary_only,
                "batch": {"objects": {"records": rows}}}
        return IngestResult.from_json(self.call("POST", f"/v1/subjects/{_q(subject)}:ingest", body))

    def contain(self, subject: str, reason: str) -> JSON:
        return self.call("POST", f"/v1/subjects/{_q(subject)}:contain", {"reason": reason})

    def release(self, subject: str, reason: str) -> JSON:
        return self.call("POST", f"/v1/subjects/{_q(subject)}:release", {"reason": reason})

    def plan_replay(self, subject: str, partition_from: str, partition_to: str) -> JSON:
        window = {"subject": subject, "partition_from": partition_from, "partition_to": partition_to}
        return self.call("POST", "/v1/replay:plan", {"window": window})

    def replay(self, subject: str, partition_from: str, partition_to: str, replay_id: str = "") -> ReplayResult:
        """Replay quarantined records of a partition window through the
        current contract; a replay_id makes a retry release nothing twice."""
        window = {"subject": subject, "partition_from": partition_from, "partition_to": partition_to}
        j = self.call("POST", "/v1/replay", {"window": window, "replay_id": replay_id})
        s = j.get("summary", {})
        return ReplayResult(replay_id=s.get("replay_id", ""), held=_int(s.get("held")), released=_int(s.get("released")),
                            remaining=_int(s.get("remaining")), rerun=s.get("rerun", []), records=j.get("records", []), raw=j)

    def monitor(self, subject: str, partition_from: str = "", partition_to: str = "") -> List[JSON]:
        q = {"partition_from": partition_from or None, "partition_to": partition_to or None}
        return self.call("GET", f"/v1/subjects/{_q(subject)}/monitor", query=q).get("partitions", [])

    def alerts(self, subject: str = "", after: int = 0, limit: int = 0) -> List[JSON]:
        q = {"subject": subject or None, "after_sequence": after or None, "limit": limit or None}
        return self.call("GET", "/v1/alerts", query=q).get("alerts", [])

    # Partitions: write, audit, publish. These routes come with the gate's
    # partition sealing (SealPartition, GetPartition).

    def seal(self, subject: str, partition: str) -> PartitionVerdict:
        """Seal a partition: its partition-level checks are judged now."""
        j = self.call("POST", f"/v1/subjects/{_q(subject)}/partitions/{_q(partition)}:seal", {})
        return _verdict(subject, partition, j)

    def partition(self, subject: str, partition: str) -> PartitionVerdict:
        j = self.call("GET", f"/v1/subjects/{_q(subject)}/partitions/{_q(partition)}")
        return _verdict(subject, partition, j)

    def wait_for_verdict(self, subject: str, partition: str, timeout: float = 60.0, interval: float = 0.5) -> PartitionVerdict:
        """Poll a partition until it is sealed, or raise TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            v = self.partition(subject, partition)
            if v.sealed:
                return v
            if time.monotonic() >= deadline:
                raise TimeoutError(f"partition {partition} of {subject} has no verdict after {timeout}s (state {v.state})")
            time.sleep(interval)


def _verdict(subject: str, partition: str, j: JSON) -> PartitionVerdict:
    p = j.get("partition", j)
    return PartitionVerdict(subject=subject, partition=partition, state=str(p.get("state", "")),
                            verdict=str(p.get("verdict", "")), raw=j)


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
