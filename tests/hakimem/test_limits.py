"""Limits: requests per API key (429 rate_limited with Retry-After, counted in PostgreSQL so every server
process shares them), and the admin's sign-in lockout after failed passwords."""

import time
from types import SimpleNamespace

import pytest
from django.test import Client

from hakimem import ratelimit

from hakimem.models import RateCounter, hash_key
from hakimem.ratelimit import counter_hit, key_bucket
from hakimem.rates import Rate, parse_rate
from tests.conftest import OTHER_PROJECT, PROJECT, error_code, make_user

pytestmark = pytest.mark.django_db

DAY = 86400


def _list(api, project=PROJECT):
    return api.get("/v1/facts", {"project_id": project, "subject_id": "alice"})


def test_a_key_over_its_rate_gets_429_rate_limited_with_retry_after(api, other_api, settings):
    # given a rate of 3 requests a day per key
    settings.HAKI_THROTTLE_RATE = Rate(3, DAY)
    # when a key sends 4 requests
    statuses = [_list(api).status_code for _ in range(3)]
    refused = _list(api)
    # then the first 3 are served and the 4th refused in the error contract, saying when to come back
    assert statuses == [200, 200, 200]
    assert refused.status_code == 429 and error_code(refused) == "rate_limited"
    assert 1 <= int(refused["Retry-After"]) <= DAY
    assert refused.json()["error"]["details"]["limit"] == 3
    # and another key keeps its own budget; the probes are never limited
    assert _list(other_api, OTHER_PROJECT).status_code == 200
    assert Client().get("/v1/health/live").status_code == 200


def test_the_count_is_shared_by_every_server_process(api, settings):
    # given another worker already counted two requests of this key in the current window (the same table)
    settings.HAKI_THROTTLE_RATE = Rate(3, DAY)
    for _ in range(2):
        counter_hit(f"api-key:{key_bucket(api.raw_key)}", DAY)
    # when this process serves the key
    # then only one more request is allowed
    assert _list(api).status_code == 200
    assert _list(api).status_code == 429


def test_the_counters_never_hold_a_stored_key_hash(api, settings):
    # the application's login role reads the counters: a key's bucket is not the hash its row holds
    settings.HAKI_THROTTLE_RATE = Rate(3, DAY)
    _list(api)
    buckets = list(RateCounter.objects.values_list("bucket", flat=True))
    assert buckets and not any(hash_key(api.raw_key) in bucket for bucket in buckets)


def test_requests_without_a_key_are_limited_per_address(settings):
    settings.HAKI_THROTTLE_RATE = Rate(2, DAY)
    client = Client()
    assert [client.get("/v1/facts").status_code for _ in range(3)] == [401, 401, 429]


def test_invented_keys_share_their_addresss_budget(api, settings):
    # given a rate of 3 requests a day, and a client inventing a new key for each request
    settings.HAKI_THROTTLE_RATE = Rate(3, DAY)
    inventor = Client(REMOTE_ADDR="10.0.0.66")
    statuses = [inventor.get("/v1/facts", HTTP_AUTHORIZATION=f"Bearer invented-{n}").status_code for n in range(5)]
    # then the address's unknown keys are refused once they used its budget, whatever key comes next
    assert statuses == [401, 401, 401, 429, 429]
    refused = inventor.get(
        "/v1/facts", {"project_id": PROJECT, "subject_id": "alice"}, HTTP_AUTHORIZATION=f"Bearer {api.raw_key}"
    )
    assert error_code(refused) == "rate_limited" and "unknown keys" in refused.json()["error"]["message"]
    # and a key from another address is served
    assert _list(api).status_code == 200


def test_counters_of_windows_that_are_over_are_pruned(api, settings, monkeypatch):
    # given counters left by keys invented long ago (each hit once, never again)
    settings.HAKI_THROTTLE_RATE = Rate(3, 60)
    old_window = int(time.time()) - 10 * DAY
    RateCounter.objects.bulk_create(
        [RateCounter(bucket=f"api-key:invented-{n}", window=old_window, hits=1) for n in range(50)]
    )
    # when the process's next pruning comes with a request
    monkeypatch.setitem(ratelimit._pruned_at, "at", -1e9)
    assert _list(api).status_code == 200
    # then they are gone, and the request's own counter is kept
    assert not RateCounter.objects.filter(window=old_window).exists()
    assert RateCounter.objects.filter(bucket=f"api-key:{key_bucket(api.raw_key)}").exists()


def test_a_refused_request_writes_nothing(api, settings):
    # given a key at its limit
    settings.HAKI_THROTTLE_RATE = Rate(1, DAY)
    _list(api)
    # when it tries to store a fact
    response = api.post(
        "/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": "Alice runs."}, format="json"
    )
    # then it is refused and nothing was stored
    assert error_code(response) == "rate_limited"
    settings.HAKI_THROTTLE_RATE = None
    assert _list(api).json()["facts"] == []


def test_rates_read_from_the_environment():
    assert parse_rate("600/s") == Rate(600, 1)
    assert parse_rate("30000/min") == Rate(30000, 60)
    assert parse_rate("off") is None
    with pytest.raises(ValueError):
        parse_rate("lots")


# --- the admin's sign-in ------------------------------------------------------------------------------------


def _sign_in(client, username, password):
    return client.post("/admin/login/?next=/admin/", {"username": username, "password": password})


def test_after_five_wrong_passwords_even_the_right_one_is_refused(roles, settings):
    # given a staff user and someone trying passwords
    settings.HAKI_LOGIN_MAX_FAILURES = 5
    make_user("cora", staff=True, groups=["curators"])
    client = Client()
    for n in range(5):
        assert _sign_in(client, "cora", f"guess-{n}").status_code == 200  # the form again, with its error
    # when the right password comes
    response = _sign_in(client, "cora", "pw-cora")
    # then it is refused too, saying why, and nobody is signed in
    assert response.status_code == 200
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in client.session
    # and another username from elsewhere still signs in
    other = make_user("stan", staff=True, groups=["curators"])
    elsewhere = Client(REMOTE_ADDR="10.0.0.9")
    assert _sign_in(elsewhere, other.username, "pw-stan").status_code == 302


def test_the_lockout_ends_with_its_window(roles, settings, monkeypatch):
    # given a username locked out
    settings.HAKI_LOGIN_MAX_FAILURES = 2
    make_user("cora", staff=True, groups=["curators"])
    client = Client()
    for n in range(2):
        _sign_in(client, "cora", f"guess-{n}")
    assert "Too many failed sign-ins" in _sign_in(client, "cora", "pw-cora").content.decode()
    # when the lockout window has passed
    import time as real_time

    later = real_time.time() + settings.HAKI_LOGIN_LOCKOUT_SECONDS
    monkeypatch.setattr("hakimem.ratelimit.time", SimpleNamespace(time=lambda: later, monotonic=real_time.monotonic))
    # then the right password signs in
    assert _sign_in(client, "cora", "pw-cora").status_code == 302


def test_wrong_passwords_from_one_address_do_not_lock_the_person_out_elsewhere(roles, settings, monkeypatch):
    # given someone trying passwords for cora from one address until it is locked
    settings.HAKI_LOGIN_MAX_FAILURES = 3
    in_one_window(monkeypatch, settings)
    make_user("cora", staff=True, groups=["curators"])
    attacker = Client(REMOTE_ADDR="10.0.0.66")
    for n in range(3):
        _sign_in(attacker, "cora", f"guess-{n}")
    assert "Too many failed sign-ins" in _sign_in(attacker, "cora", "pw-cora").content.decode()
    # when cora signs in from her own address
    # then she is in
    assert _sign_in(Client(REMOTE_ADDR="10.0.0.7"), "cora", "pw-cora").status_code == 302


def in_one_window(monkeypatch, settings) -> None:
    """The counters' clock stopped at the start of a lockout window: many sign-ins (a password hash each) must not
    straddle two fixed windows."""
    start = (int(time.time()) // settings.HAKI_LOGIN_LOCKOUT_SECONDS + 1) * settings.HAKI_LOGIN_LOCKOUT_SECONDS
    monkeypatch.setattr("hakimem.ratelimit.time", SimpleNamespace(time=lambda: start + 1.0, monotonic=time.monotonic))


def test_a_username_guessed_from_many_addresses_is_locked_everywhere(roles, settings, monkeypatch):
    # given failures for cora spread over as many addresses as the backstop allows, one each
    settings.HAKI_LOGIN_MAX_FAILURES = 1
    in_one_window(monkeypatch, settings)
    make_user("cora", staff=True, groups=["curators"])
    for n in range(ratelimit.LOGIN_BACKSTOP_FACTOR):
        _sign_in(Client(REMOTE_ADDR=f"10.1.0.{n}"), "cora", "guess")
    # then the right password from yet another address is refused until the window ends
    response = _sign_in(Client(REMOTE_ADDR="10.2.0.1"), "cora", "pw-cora")
    assert response.status_code == 200 and "Too many failed sign-ins" in response.content.decode()


def test_a_locked_sign_in_checks_the_password_all_the_same(roles, settings, monkeypatch):
    # given cora locked out from this address
    settings.HAKI_LOGIN_MAX_FAILURES = 1
    in_one_window(monkeypatch, settings)
    make_user("cora", staff=True, groups=["curators"])
    client = Client()
    _sign_in(client, "cora", "guess")
    # when she tries again, the password check is counted
    from django.contrib.auth import forms as auth_forms

    checked = []
    real = auth_forms.authenticate
    monkeypatch.setattr(auth_forms, "authenticate", lambda *a, **kw: checked.append(kw["username"]) or real(*a, **kw))
    response = _sign_in(client, "cora", "pw-cora")
    # then the answer is the lockout, and it came after the password's check, as any answer does (its time tells
    # nothing of the lock)
    assert "Too many failed sign-ins" in response.content.decode()
    assert checked == ["cora"]
