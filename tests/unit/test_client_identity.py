"""Who a client is, for every fair share, is one rule (grader/origins.py `client_identity`): the open-request
slots, the queue's turns and the webhook senders all ask it, and agree for the same client."""

from __future__ import annotations

from types import SimpleNamespace

from grader.api.slots import client_key
from grader.origins import client_identity
from grader.storage.webhook_data import delivery_shares
from grader.submissions.intake import owner_of
from grader.submissions.submitters import Submitter


def _request(address: str) -> SimpleNamespace:
    """A request with no API key, from `address` (what slots.client_key reads)."""
    app = SimpleNamespace(state=SimpleNamespace())
    return SimpleNamespace(app=app, headers={}, client=SimpleNamespace(host=address))


def test_every_fair_share_names_a_client_by_the_one_rule() -> None:
    address = "203.0.113.7"
    anonymous = client_identity(None, address)
    assert client_key(_request(address)) == anonymous  # type: ignore[arg-type]
    assert owner_of(Submitter(None, owner_hash="minted-per-request"), address) == anonymous  # never the owner token
    assert delivery_shares(None, address, "https://receiver.example/hook")[0] == anonymous
    keyed = client_identity("k" * 64, address)
    assert keyed != anonymous
    assert owner_of(Submitter("k" * 64), address) == keyed == delivery_shares("k" * 64, address, None)[0]
