"""RFC 9110's rules for a download of an immutable file: its validators, the conditional
requests (section 13), and byte ranges (section 14), as pure functions of the request's
headers, so that each rule is tested alone.

- Validators: a strong ``ETag`` (the datum's write) and ``Last-Modified`` (when it was
  kept); both strong, as the file never changes under them (section 8.8.2.2).
- Preconditions, in the order of section 13.2.2: ``If-Match`` (strong), else
  ``If-Unmodified-Since``, failing with 412; then ``If-None-Match`` (weak), else
  ``If-Modified-Since``, answering 304 to a GET or HEAD.
- ``Range`` (GET only; HEAD answers as GET would without it, section 14.2): the unit
  ``bytes`` in any case, a list of ``first-last``, ``first-`` and ``-suffix`` with
  optional white space around the commas; an invalid header is ignored (200), a set of
  which no range is satisfiable answers 416 with ``Content-Range: bytes */<size>``, and
  an empty file ignores ranges (no 206 can say an empty one). ``If-Range`` applies the
  ranges only when it names the current ``ETag`` (strong comparison) or equals
  ``Last-Modified``.
- Several ranges answer ``multipart/byteranges``, overlapping or adjacent ones merged
  (section 15.3.7.2); more than :data:`MOST_RANGES` are ignored (section 14.2).
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

__all__ = [
    "MOST_RANGES",
    "Answer",
    "Validators",
    "decide",
    "http_date",
    "parse_ranges",
]

MOST_RANGES = 64
"""The most ranges one request is answered with; more are ignored (the whole file)."""
RANGE_SPEC = re.compile(r"^(\d*)-(\d*)$")


@dataclass(frozen=True)
class Validators:
    """The validators of one file: its strong ``etag`` (quoted) and ``last_modified``
    (seconds since the epoch, whole)."""

    etag: str
    last_modified: int

    @property
    def last_modified_text(self) -> str:
        return http_date(self.last_modified)


@dataclass(frozen=True)
class Answer:
    """How to answer: ``status`` (200, 206, 304, 412 or 416) and, for 206, the ``ranges``
    (``[start, end)``, in order, none overlapping)."""

    status: int
    ranges: tuple[tuple[int, int], ...] = ()
    if_range: bool = False  # a 206 that If-Range allowed (fewer headers, section 15.3.7)


def http_date(seconds: float) -> str:
    """An HTTP-date (IMF-fixdate) of ``seconds`` since the epoch."""
    return format_datetime(datetime.fromtimestamp(int(seconds), UTC), usegmt=True)


def decide(method: str, headers: dict[str, str], size: int, validators: Validators) -> Answer:
    """How a ``method`` (GET or HEAD) request with ``headers`` (names in lowercase) for a
    file of ``size`` bytes is answered (see the module's docstring)."""
    if_match = headers.get("if-match")
    if if_match is not None:
        if not _matches(if_match, validators.etag, strong=True):
            return Answer(412)
    else:
        since = _date(headers.get("if-unmodified-since"))
        if since is not None and validators.last_modified > since:
            return Answer(412)
    if_none_match = headers.get("if-none-match")
    if if_none_match is not None:
        if _matches(if_none_match, validators.etag, strong=False):
            return Answer(304)
    else:
        since = _date(headers.get("if-modified-since"))
        if since is not None and validators.last_modified <= since:
            return Answer(304)
    asked = headers.get("range")
    if method != "GET" or asked is None or size == 0:
        return Answer(200)
    if_range = headers.get("if-range")
    if if_range is not None and not _if_range_holds(if_range.strip(), validators):
        return Answer(200)
    ranges = parse_ranges(asked, size)
    if ranges is None:
        return Answer(200)
    if not ranges:
        return Answer(416)
    return Answer(206, ranges, if_range=if_range is not None)


def parse_ranges(header: str, size: int) -> tuple[tuple[int, int], ...] | None:
    """The satisfiable ranges (``[start, end)``) of a ``Range`` header over ``size`` bytes,
    merged where they overlap or touch, in order: empty when none is satisfiable; None
    when the header is to be ignored (not byte ranges, invalid, or too many)."""
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or not spec.strip():
        return None
    parts = [part.strip() for part in spec.split(",")]
    parts = [part for part in parts if part]
    if not parts or len(parts) > MOST_RANGES:
        return None
    found = []
    for part in parts:
        matched = RANGE_SPEC.match(part)
        if matched is None or matched.group(0) == "-":
            return None
        first, last = matched.groups()
        if not first:  # the last n bytes
            length = int(last)
            if length > 0:
                found.append((max(0, size - length), size))
            continue
        start = int(first)
        if last and int(last) < start:
            return None  # invalid: the whole header is ignored
        if start < size:
            end = size if not last else min(int(last) + 1, size)
            found.append((start, end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def _matches(header: str, etag: str, *, strong: bool) -> bool:
    """Whether an ``If-Match`` (``strong``) or ``If-None-Match`` list names ``etag``."""
    if header.strip() == "*":
        return True
    for tag in header.split(","):
        tag = tag.strip()
        weak = tag.startswith("W/")
        if weak and strong:
            continue
        if tag.removeprefix("W/") == etag:
            return True
    return False


def _if_range_holds(value: str, validators: Validators) -> bool:
    """Whether ``If-Range``'s ``value`` (an entity tag or an HTTP-date) is current."""
    if value.startswith(('"', "W/")):
        return value == validators.etag  # strong comparison: a weak tag never matches
    return value == validators.last_modified_text


def _date(value: str | None) -> int | None:
    """Seconds since the epoch of an HTTP-date; None when absent or not one."""
    if value is None or "," in value.split(" ", 1)[-1]:
        return None  # a list of dates is invalid (section 13.1.3)
    try:
        return int(parsedate_to_datetime(value).timestamp())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
