"""Who may call what: bearer tokens, their roles, and the role each operation needs.

Shared by every front end (the gRPC service, an HTTP layer): it imports only the leaves
:mod:`fdb_leaderboard.errors` and :mod:`fdb_leaderboard.rpcs` (whose table names each RPC's role),
so front ends import it without importing each other.

API (small on purpose):

- :class:`Role`: ``READ < WRITE < ADMIN``; a role may do everything a lower one may.
- :data:`ROLE_BY_METHOD` and :func:`required_role`: the role each operation needs, keyed by the
  gRPC method name (``"Top"``; ``"/fdb_leaderboard.Leaderboard/Top"`` is accepted too).  A method
  missing from the table raises :class:`UnknownOperation`: a new RPC is never silently open
  (a test checks the table names every RPC of the service).
- :class:`Tokens`: the configured tokens.  ``Tokens.load(path)`` reads a token file, or the
  ``FDB_LEADERBOARD_TOKENS`` environment variable when no file is given; ``authenticate(token)``
  answers the token's :class:`Role`; ``authorize(token, method)`` also checks the method's role;
  ``identify(token)`` answers its :class:`Identity` (name and role): who did what, for the audit
  trail and hidden records.
- :func:`bearer_token`: the token of an ``Authorization: Bearer ...`` header value;
  :func:`actor_name`: the name of whoever sends one (``anonymous`` without tokens).
- :func:`is_loopback`: whether an address names this machine only (where tokens may travel
  without TLS: a server refuses other addresses without tokens, a client warns).
- :class:`Unauthenticated` (no or unknown token) and :class:`PermissionDenied` (the token's role
  is too low): front ends answer them with UNAUTHENTICATED / PERMISSION_DENIED (HTTP 401 / 403).

Token text (file or environment): entries ``ROLE:TOKEN`` or ``NAME:ROLE:TOKEN`` separated by
newlines, commas or spaces; ``#`` starts a comment.  Roles are ``read``, ``write``, ``admin``.  A
token has at least 16 characters, from letters, digits and ``-._~+/=`` (so it fits an HTTP header
unchanged).  A name (1-64 letters, digits, ``-._@``, e.g. ``alice`` or ``ci-deploy``) says who
uses the token; several tokens may share one (a token being rotated).  An entry without a name
is named after its role and a fingerprint of its token: the first 8 hex digits of its SHA-256
(``admin-3f9a1c2b``), so it stays the same when the file is reordered and shows nothing that
would help guess the token.  A token file must not be readable by group or others (like an SSH
key).

Tokens never appear in messages, logs or ``repr``: errors name the role, the method or the
entry's line number, never the token; comparisons are constant-time (:func:`hmac.compare_digest`
against every configured token, without stopping at the first match).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import stat
from collections.abc import Mapping
from typing import NamedTuple

from .errors import LeaderboardError
from .rpcs import RPCS, Role

TOKENS_ENVIRONMENT = "FDB_LEADERBOARD_TOKENS"
MIN_TOKEN_LENGTH = 16
_TOKEN = re.compile(r"^[A-Za-z0-9\-._~+/=]+$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9\-._@]{0,63}$")


class AccessError(LeaderboardError):
    """A call refused for who makes it."""


class Unauthenticated(AccessError):
    """The call carries no token, or one that is not configured."""


class PermissionDenied(AccessError):
    """The call's token has a role too low for the operation."""


class UnknownOperation(AccessError, LookupError):
    """An operation the role table does not name (refused, never open by default)."""


# The role each RPC of fdb_leaderboard.Leaderboard needs (its entry in rpcs.RPCS says).
ROLE_BY_METHOD: Mapping[str, Role] = {name: rpc.role for name, rpc in RPCS.items()}


def method_name(method: str) -> str:
    """``"/pkg.Service/Top"`` or ``"Top"`` as ``"Top"``."""
    return method.rsplit("/", 1)[-1]


def required_role(method: str) -> Role:
    """The role ``method`` needs; :class:`UnknownOperation` for a method the table does not name."""
    role = ROLE_BY_METHOD.get(method_name(method))
    if role is None:
        raise UnknownOperation(f"operation {method_name(method)[:100]!r} has no access rule: refused")
    return role


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization`` header value ``Bearer TOKEN`` (None if absent or another scheme)."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def several_authorizations(count: int) -> str:
    """The refusal of a call carrying ``count`` (more than one) Authorization headers, at either door."""
    return f"a request carries one Authorization header, not {count}: which one is the caller's is unclear"


class Identity(NamedTuple):
    """Who makes a call: the name of its token's entry, and the token's role."""

    name: str
    role: Role


ANONYMOUS = "anonymous"  # who calls a server without tokens
# The header (gRPC metadata) in which a client names its user (the CLI: the local user); a
# server without tokens records that claim as ``anonymous:USER``; one with tokens ignores it.
USER_HEADER = "fdb-leaderboard-user"


def actor_name(tokens: Tokens | None, authorization: str | None, user: str | None = None) -> str:
    """The name of whoever sends ``authorization`` (an ``Authorization`` header value), for the
    record of what they did: ``anonymous`` without tokens (``anonymous:USER`` when the client
    names its ``user``: unverified) or with a token the server does not know (such a call is
    refused before it acts)."""
    if tokens is None:
        return f"{ANONYMOUS}:{user}" if user and _NAME.match(user) else ANONYMOUS
    try:
        return tokens.identify(bearer_token(authorization)).name
    except Unauthenticated:
        return ANONYMOUS


def derived_name(role: Role, token: str) -> str:
    """The name of an entry that gives none: its role and its token's fingerprint."""
    return f"{role}-{hashlib.sha256(token.encode()).hexdigest()[:8]}"


class Tokens:
    """The configured tokens, their roles and names.  Its ``repr`` and errors never show a token."""

    def __init__(self, roles: Mapping[str, Role], names: Mapping[str, str] | None = None) -> None:
        """``roles`` maps each token to its role; ``names`` each token to its name (a token left
        out is named by :func:`derived_name`)."""
        if not roles:
            raise ValueError("no tokens configured")
        names = names or {}
        self._entries = [
            (token.encode(), Identity(names.get(token) or derived_name(role, token), role))
            for token, role in roles.items()
        ]

    def __repr__(self) -> str:
        counts = {str(r): sum(1 for _, who in self._entries if who.role is r) for r in Role}
        return f"Tokens({', '.join(f'{n} {name}' for name, n in counts.items())})"

    @classmethod
    def parse(cls, text: str, source: str = "token text") -> Tokens:
        """Tokens from ``[NAME:]ROLE:TOKEN`` entries; ValueError naming the entry (never its token)."""
        roles: dict[str, Role] = {}
        names: dict[str, str] = {}
        for line_number, line in enumerate(text.splitlines(), 1):
            for entry in re.split(r"[,\s]+", line.split("#", 1)[0]):
                if not entry:
                    continue
                where = f"{source} line {line_number}"
                parts = entry.split(":")  # a token never holds a colon
                if len(parts) not in (2, 3):
                    raise ValueError(
                        f"{where}: an entry must be ROLE:TOKEN or NAME:ROLE:TOKEN (role read, write or admin)"
                    )
                name = parts[0] if len(parts) == 3 else None
                role_name, token = parts[-2], parts[-1]
                if name is not None and not _NAME.match(name):
                    raise ValueError(
                        f"{where}: a token's name has 1-64 letters, digits and -._@, starting with a letter or digit"
                    )
                try:
                    role = Role.parse(role_name)
                except ValueError as exc:
                    raise ValueError(f"{where}: {exc}") from None
                if len(token) < MIN_TOKEN_LENGTH or not _TOKEN.match(token):
                    raise ValueError(
                        f"{where}: a {role} token needs at least {MIN_TOKEN_LENGTH} characters "
                        "from letters, digits and -._~+/="
                    )
                if roles.get(token, role) is not role:
                    raise ValueError(f"{where}: the same token is given two roles")
                if name is not None and names.setdefault(token, name) != name:
                    raise ValueError(f"{where}: the same token is given two names")
                roles[token] = role
        if not roles:
            raise ValueError(f"{source} holds no tokens")
        return cls(roles, names)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Tokens:
        """Tokens from a file readable by its owner only (ValueError otherwise, or if it does not parse)."""
        try:
            mode = os.stat(path).st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ValueError(
                    f"token file {os.fspath(path)} is accessible to group or others "
                    f"(mode {stat.S_IMODE(mode):o}): chmod 600 it"
                )
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except OSError as exc:
            raise ValueError(f"cannot read token file {os.fspath(path)}: {exc.strerror}") from None
        return cls.parse(text, f"token file {os.fspath(path)}")

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] = os.environ) -> Tokens | None:
        """Tokens from ``path`` if given, else from ``$FDB_LEADERBOARD_TOKENS``; None if neither is set."""
        if path is not None:
            return cls.from_file(path)
        text = environ.get(TOKENS_ENVIRONMENT)
        if text is None or not text.strip():
            return None
        return cls.parse(text, f"${TOKENS_ENVIRONMENT}")

    def authenticate(self, token: str | None) -> Role:
        """The role of ``token`` (a bare token, see :func:`bearer_token`); Unauthenticated if unknown."""
        return self.identify(token).role

    def identify(self, token: str | None) -> Identity:
        """The name and role of ``token``; Unauthenticated if unknown."""
        if not token:
            raise Unauthenticated("this server needs a bearer token (authorization: Bearer TOKEN)")
        given = token.encode()
        found: Identity | None = None
        for known, who in self._entries:  # every entry compared: the time does not depend on which matched
            if hmac.compare_digest(given, known):
                found = who
        if found is None:
            raise Unauthenticated("the bearer token is not valid for this server")
        return found

    def authorize(self, token: str | None, method: str) -> Role:
        """The token's role if it may call ``method``; Unauthenticated or PermissionDenied otherwise."""
        needed = required_role(method)
        role = self.authenticate(token)
        if role < needed:
            raise PermissionDenied(f"{method_name(method)} needs the {needed} role; this token has {role}")
        return role


def is_loopback(address: str) -> bool:
    """Whether ``host:port`` (or a gRPC ``unix:`` target) names this machine only: 127.0.0.0/8,
    ::1, localhost or a Unix socket."""
    if address.startswith(("unix:", "unix-abstract:")):
        return True
    host = address.rsplit(":", 1)[0] if ":" in address else address
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
