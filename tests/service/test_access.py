"""Tokens, roles and the role table (fdb_leaderboard.access), without a server."""

from __future__ import annotations

import logging
import os

import pytest

from fdb_leaderboard import access
from fdb_leaderboard.access import PermissionDenied, Role, Tokens, Unauthenticated, UnknownOperation
from fdb_leaderboard.proto import service_pb2 as pb

READER, WRITER, ADMIN = "r" * 20, "w-writer.token_1234", "A+dmin/token=0123456789"
TEXT = f"# tokens\nread:{READER}\nwrite:{WRITER}, admin:{ADMIN}  # the operator\n"


def test_roles_are_ordered_and_parse_by_name() -> None:
    assert Role.READ < Role.WRITE < Role.ADMIN
    assert Role.parse(" Admin ") is Role.ADMIN
    with pytest.raises(ValueError, match="unknown role 'root'"):
        Role.parse("root")


def test_every_rpc_of_the_service_has_a_role_and_the_table_names_no_other() -> None:
    rpcs = {m.name for m in pb.DESCRIPTOR.services_by_name["Leaderboard"].methods}
    assert set(access.ROLE_BY_METHOD) == rpcs, "add each new RPC to fdb_leaderboard.rpcs"


def test_required_roles_follow_what_an_operation_changes() -> None:
    for admin in ("CreateIndex", "UpdateWindows", "Expire", "Trim", "Fill", "SetMaintenancePolicy", "Verify"):
        assert access.required_role(admin) is Role.ADMIN
    assert access.required_role("BulkLoad") is Role.ADMIN
    assert access.required_role("DeleteRecord") is Role.WRITE
    assert access.required_role("/fdb_leaderboard.Leaderboard/Top") is Role.READ
    with pytest.raises(UnknownOperation, match="'DropEverything' has no access rule"):
        access.required_role("DropEverything")


def test_tokens_authenticate_to_their_role() -> None:
    tokens = Tokens.parse(TEXT)
    assert tokens.authenticate(READER) is Role.READ
    assert tokens.authenticate(WRITER) is Role.WRITE
    assert tokens.authenticate(ADMIN) is Role.ADMIN
    for bad in (None, "", READER[:-1], READER + "x", "w" * 20):
        with pytest.raises(Unauthenticated):
            tokens.authenticate(bad)


def test_authorize_compares_the_token_role_with_the_method_role() -> None:
    tokens = Tokens.parse(TEXT)
    assert tokens.authorize(ADMIN, "Trim") is Role.ADMIN
    assert tokens.authorize(WRITER, "Top") is Role.WRITE
    with pytest.raises(PermissionDenied, match="AddScore needs the write role; this token has read"):
        tokens.authorize(READER, "AddScore")
    with pytest.raises(PermissionDenied, match="Expire needs the admin role"):
        tokens.authorize(WRITER, "Expire")
    with pytest.raises(Unauthenticated):
        tokens.authorize("not-a-configured-token", "Top")
    with pytest.raises(UnknownOperation):
        tokens.authorize(ADMIN, "NewRpcWithoutRule")


def test_bearer_header_values() -> None:
    assert access.bearer_token(f"Bearer {READER}") == READER
    assert access.bearer_token(f"bearer   {READER} ") == READER
    assert access.bearer_token(f"Basic {READER}") is None
    assert access.bearer_token("Bearer ") is None
    assert access.bearer_token(None) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "holds no tokens"),
        ("# nothing\n", "holds no tokens"),
        (READER, "line 1: an entry must be ROLE:TOKEN"),
        (f"root:{READER}", "line 1: unknown role 'root'"),
        ("\nread:short", "line 2: a read token needs at least 16 characters"),
        ("read:" + "é" * 20, "needs at least 16 characters from letters"),
        (f"read:{READER}\nadmin:{READER}", "line 2: the same token is given two roles"),
    ],
)
def test_bad_token_text_is_refused_without_echoing_tokens(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        Tokens.parse(text)
    assert READER not in str(raised.value)


def test_tokens_never_show_in_repr_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    tokens = Tokens.parse(TEXT)
    shown = repr(tokens) + str(tokens)
    assert shown == "Tokens(1 read, 1 write, 1 admin)" * 2
    with pytest.raises(Unauthenticated) as raised:
        tokens.authenticate(ADMIN[:-1])
    for secret in (READER, WRITER, ADMIN, ADMIN[:-1]):
        assert secret not in str(raised.value) + caplog.text


def test_token_file_must_be_private(tmp_path) -> None:
    path = tmp_path / "tokens"
    path.write_text(TEXT)
    os.chmod(path, 0o644)
    with pytest.raises(ValueError, match=r"accessible to group or others \(mode 644\): chmod 600"):
        Tokens.from_file(path)
    os.chmod(path, 0o600)
    assert Tokens.from_file(path).authenticate(WRITER) is Role.WRITE
    with pytest.raises(ValueError, match=r"cannot read token file .*missing"):
        Tokens.from_file(tmp_path / "missing")


def test_load_prefers_the_file_then_the_environment(tmp_path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"admin:{ADMIN}")
    path.chmod(0o600)
    environ = {access.TOKENS_ENVIRONMENT: f"read:{READER}"}
    assert Tokens.load(path, environ).authenticate(ADMIN) is Role.ADMIN
    assert Tokens.load(None, environ).authenticate(READER) is Role.READ
    assert Tokens.load(None, {}) is None
    assert Tokens.load(None, {access.TOKENS_ENVIRONMENT: "  "}) is None
