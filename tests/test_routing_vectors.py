"""Queue-to-database routing is a contract between clients in any language: the Python
implementation (``andal.client.route``, used by ``Client.index_for``) gives the answers of the
committed test vectors (tests/vectors/routing.json, described in docs/architecture.md)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest

import andal
from andal.client import route

VECTORS = Path(__file__).resolve().parent / "vectors" / "routing.json"


def vectors() -> list[dict[str, Any]]:
    return list(json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"])


@pytest.mark.parametrize("vector", vectors(), ids=lambda v: repr(v["queue"][:20]))
def test_route_gives_the_committed_index(vector: dict[str, Any]) -> None:
    for n, index in vector["index"].items():
        assert route(vector["queue"], int(n)) == index, (vector["queue"], n)


def test_the_vectors_are_crc32_of_the_utf8_bytes() -> None:
    """The vectors themselves: the standard CRC-32 check value anchors them to IEEE 802.3."""
    by_name = {v["queue"]: v for v in vectors()}
    assert by_name["123456789"]["crc32"] == 0xCBF43926
    for v in by_name.values():
        assert v["crc32"] == zlib.crc32(v["queue"].encode("utf-8"))
        assert v["crc32_hex"] == f"0x{v['crc32']:08x}"
        assert v["index"] == {str(n): v["crc32"] % n for n in range(1, 9)}


def test_the_client_routes_by_the_vectors() -> None:
    """Client.index_for follows the rule when no explicit route names the queue (it connects
    to nothing until it enqueues)."""
    dsns = [f"postgresql://u@h{i}/d" for i in range(4)]
    client = andal.Client(dsns, routes={"emails": 0})
    for v in vectors():
        expected = 0 if v["queue"] == "emails" else v["index"]["4"]
        assert client.index_for(v["queue"]) == expected
