"""Errors raised across nodegate. Each maps to one outcome or one exit code."""

import re


class NodegateError(Exception):
    """Base class for every error nodegate raises on purpose."""


class ParseError(NodegateError):
    """Raised by a parser when text is not the shape it documents.

    The only exception a parser may raise for bad input (property-tested).
    """


class EvidenceError(NodegateError):
    """A fact could not be derived: evidence missing, tool missing, timed out or unparsable.

    Checks let it propagate; the framework turns it into outcome ERROR.
    ``key`` is the bundle evidence key (see docs/bundle.md) the fact needed.
    """

    def __init__(self, key: str, reason: str):
        self.key = key
        self.reason = reason
        super().__init__(f"{reason} [{key}]")


#: ``user:password@`` in a message (an inventory value or host name holding credentials)
_USERINFO = re.compile(r"([A-Za-z0-9._~-]{1,64}):[^@\s/'\"]{1,256}@")


def redact_userinfo(text: str) -> str:
    """Every ``user:password@`` in ``text`` with the password as ``***`` (issue 37.9: an
    ``ansible_host: user:secret@host`` was echoed whole in the inventory error)."""
    return _USERINFO.sub(lambda m: f"{m.group(1)}:***@", text)


class SpecError(NodegateError):
    """The inventory or spec is invalid; raised before any node is contacted (exit code 2). Its
    message never holds a password: ``user:password@`` is redacted (``redact_userinfo``)."""

    def __init__(self, *args):
        super().__init__(*(redact_userinfo(a) if isinstance(a, str) else a for a in args))


class InventoryError(SpecError):
    """The inventory or ``--limit`` is unusable (ansible-core refused it, no such file, a host or
    value nodegate cannot use); exit code 2, before any node is contacted."""


class UsageError(NodegateError):
    """The command line asks for what cannot be done (a --replay path that holds no bundle, two
    bundles of one node, a --limit matching none): exit code 2, no report written. Raised below
    the session (nodegate.fleetrun.replay); the session says the message once
    (nodegate.session.exitcodes.usage_error)."""


def error_label(e: Exception) -> str:
    """How an exit-2 message names the error: "inventory error" or "spec error"."""
    return "inventory error" if isinstance(e, InventoryError) else "spec error"


class TransportError(NodegateError):
    """Could not run the probe on a node (connect, auth, host key, deadline)."""
