"""Redaction of secrets in the run's environment metadata (pytest-metadata copies CI
variables into it; pytest-html shows it, CI artefacts keep it).

A key is secret when one of its ``_``/``-``/``.``-separated words is in ``SECRET_WORDS`` or
it contains ``SECRET_SUBSTRINGS`` (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``,
``CI_JOB_TOKEN``, ``DB_PASSWORD``, ``SSH_PRIVATE_KEY``...). Values of every other key keep
their text but lose URL credentials (``https://user:token@host`` -> ``https://***@host``:
GitLab's ``CI_REPOSITORY_URL`` embeds the job token that way).
"""

from __future__ import annotations

import re

REDACTED = "***redacted***"
SECRET_WORDS = frozenset({"TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS",
                          "PWD", "KEY", "KEYS", "APIKEY", "CREDENTIAL", "CREDENTIALS", "CREDS",
                          "AUTH", "AUTHORIZATION", "COOKIE", "PRIVATE", "SESSION", "SIGNATURE",
                          "CERT", "DSN", "SALT", "OTP", "BEARER"})
SECRET_SUBSTRINGS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY",
                     "PRIVATE_KEY", "ACCESS_KEY")
# user:password@ after a URL scheme (RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )).
# Anchored at "://" and the scheme checked backwards: `scheme://creds@` as one pattern retried the
# scheme at every character of a long run of letters (quadratic on a hostile meta.json value)
_URL_CRED_RE = re.compile(r"://[^/@\s]+@")
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")


def _has_scheme(value: str, end: int) -> bool:
    """A scheme (a letter, then scheme characters) ends at ``end``: the run of scheme characters
    before ``end`` holds a letter (a run never crosses the previous "://" or "@")."""
    i = end
    while i > 0 and value[i - 1] in _SCHEME_CHARS:
        i -= 1
        if value[i].isascii() and value[i].isalpha():
            return True
    return False


def is_secret_key(key: object) -> bool:
    k = str(key).upper()
    words = set(re.split(r"[^A-Z0-9]+", k))
    return bool(words & SECRET_WORDS) or any(s in k for s in SECRET_SUBSTRINGS)


def redact_value(value: object) -> object:
    if isinstance(value, str):
        return _URL_CRED_RE.sub(lambda m: "://***@" if _has_scheme(value, m.start()) else m.group(), value)
    return value


def redact(metadata: dict) -> dict:
    """Redact ``metadata`` in place (nested dicts too); returns it."""
    for k in list(metadata):
        v = metadata[k]
        if is_secret_key(k):
            metadata[k] = REDACTED
        elif isinstance(v, dict):
            redact(v)
        else:
            metadata[k] = redact_value(v)
    return metadata
