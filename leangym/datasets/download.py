"""Fetching a data file into leangym's cache (``$LEANGYM_CACHE`` or ``~/.cache/leangym``).

Data sets are downloaded at run time, never vendored into the project. The
download streams into a temporary file in the cache directory and is renamed
into place only when complete (and, if a sha256 is given, only when it
matches), so an interrupted download never leaves a truncated file that a
later run would mistake for the data set.

An ``http(s)://`` URL is downloaded once; later reads use the cached copy and say so on
stderr, naming it (``force=True``, i.e. ``refresh=True`` of the loaders or
``--refresh-dataset`` of ``scripts.benchmark``, downloads it again). A ``file://`` URL is
read in place, never copied: an edit of the file is seen by the next read.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

import requests
import urllib3

CHUNK = 1 << 16
MAX_BYTES = 512 << 20  # a theorem file is megabytes: a wrong URL (an endless stream) must not fill the disk
DEADLINE_S = 1800.0  # for the whole download: `timeout` bounds one read, and a server may trickle


class DownloadError(OSError):
    """The file could not be fetched, or its checksum does not match (an I/O failure: the command
    line tools report it as one ``error:`` line, like a missing file)."""


def cache_dir() -> Path:
    """``$LEANGYM_CACHE`` if set, else ``~/.cache/leangym``."""
    env = os.environ.get("LEANGYM_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "leangym"


def cached_path(url: str, cache: Path | None = None) -> Path:
    """Where ``url`` is cached: its base name (made a safe file name, at most 80 characters), prefixed by
    a hash of the whole URL (two URLs never collide)."""
    base = re.sub(r"[^\w.-]", "_", Path(unquote(urlparse(url).path)).name, flags=re.ASCII) or "download"
    if len(base) > 80:
        base = base[:60] + base[-20:]  # (the end keeps the extension)
    return (cache or cache_dir()) / f"{hashlib.sha256(url.encode()).hexdigest()[:12]}-{base}"


def redacted(url: str) -> str:
    """``url`` fit to print or record: no user or password, query values hidden (``?token=…``): a
    signed or tokenised URL must not leak into results files and logs."""
    parsed = urlparse(url)
    if not parsed.scheme or parsed.scheme == "file":
        return url
    host = parsed.hostname or ""
    netloc = f"[{host}]" if ":" in host else host  # (an IPv6 address keeps its brackets)
    try:
        port = parsed.port
    except ValueError:  # not a port: shown as written, without what stood before the host
        port = parsed.netloc.rpartition(":")[2]
    if port:
        netloc += f":{port}"
    query = "&".join(f"{part.partition('=')[0]}=…" for part in parsed.query.split("&") if part)
    return parsed._replace(netloc=netloc, query=query).geturl()


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(url: str, *, sha256: str | None = None, cache: Path | None = None, force: bool = False,
          timeout: float = 60.0, validate: Callable[[Path], None] | None = None,
          max_bytes: int = MAX_BYTES, deadline_s: float = DEADLINE_S) -> Path:
    """The local path of ``url``'s content.

    ``file://``: the file itself (checked against ``sha256`` when given; nothing is copied or cached).
    ``http(s)://``: a copy in the cache, downloaded (streamed with requests) unless already there.
    A cached copy is reused unless ``force`` (a note on stderr names it and how to refresh it);
    with ``sha256`` it is re-checked and re-fetched on mismatch.
    ``validate(path)`` may raise on a download that is not what was wanted (an HTML error page
    served with 200, a body cut short): it then never becomes the cached file. A body over
    ``max_bytes``, or a download that takes over ``deadline_s`` in all, is refused the same way.
    """
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return _local_file(url, sha256)
    if parsed.scheme not in ("http", "https"):
        raise DownloadError(f"{redacted(url)}: unsupported URL scheme {parsed.scheme!r} (use http, https or file)")
    target = cached_path(url, cache)
    if target.exists() and not force:
        if sha256 is None or sha256_of(target) == sha256.lower():
            _say_cached(url, target)
            return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            _stream(url, out, timeout, max_bytes, deadline_s)
        if sha256 is not None:
            got = sha256_of(tmp)
            if got != sha256.lower():
                raise DownloadError(f"{redacted(url)}: sha256 mismatch (expected {sha256.lower()}, got {got})")
        if validate is not None:
            try:
                validate(tmp)
            except Exception as e:  # noqa: BLE001 - whatever the check found, the download is refused
                why = str(e).replace(str(tmp), "the download")  # (not the temporary file's name: it is gone)
                raise DownloadError(f"{redacted(url)}: the download is not usable, so it was not cached: "
                                    f"{why}") from None
        os.chmod(tmp, 0o644)  # mkstemp made it private; a shared cache must be readable
        os.replace(tmp, target)  # atomic on one file system: readers see the old file or the whole new one
    finally:
        tmp.unlink(missing_ok=True)
    return target


def file_url_path(url: str) -> Path:
    """The local path a ``file://`` URL names."""
    return Path(url2pathname(unquote(urlparse(url).path)))


def _local_file(url: str, sha256: str | None) -> Path:
    """The file a ``file://`` URL names, read in place: a copy would hide later edits of it."""
    src = file_url_path(url)
    if not src.is_file():
        raise DownloadError(f"{url}: no such file {src}")
    if sha256 is not None:
        got = sha256_of(src)
        if got != sha256.lower():
            raise DownloadError(f"{url}: sha256 mismatch (expected {sha256.lower()}, got {got})")
    return src


def _say_cached(url: str, target: Path) -> None:
    """Say that a cached copy stands in for ``url``: the source may have changed since it was downloaded."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(target.stat().st_mtime))
    print(f"[leangym] {redacted(url)}: using the copy cached at {target} (downloaded {when}); to download it "
          "again pass refresh=True (scripts.benchmark: --refresh-dataset) or delete that file", file=sys.stderr)


def _stream(url: str, out, timeout: float, max_bytes: int, deadline_s: float) -> None:  # noqa: ANN001
    """Download an ``http(s)://`` URL into ``out`` (a binary file), at most ``max_bytes`` in ``deadline_s``."""
    shown, started, written = redacted(url), time.monotonic(), 0
    try:
        with requests.get(url, stream=True, timeout=timeout) as resp:
            if resp.status_code != 200:
                raise DownloadError(f"{shown}: HTTP {resp.status_code}")
            size = resp.headers.get("Content-Length", "")
            if size.isdigit() and int(size) > max_bytes:
                raise DownloadError(f"{shown}: {int(size):,} bytes, over the limit of {max_bytes:,} for a data file")
            # whatever each read brings (read1), so that the deadline also stops a server trickling a byte a
            # second (iter_content waits for a whole chunk); urllib3 < 2 has no read1: whole chunks there
            read1 = getattr(resp.raw, "read1", None)
            chunks = iter(lambda: read1(CHUNK, decode_content=True), b"") if read1 else resp.iter_content(CHUNK)
            for chunk in chunks:
                written += len(chunk)
                if written > max_bytes:
                    raise DownloadError(f"{shown}: over {max_bytes:,} bytes, the limit for a data file; stopped")
                if time.monotonic() - started > deadline_s:
                    raise DownloadError(f"{shown}: still downloading after {deadline_s:g} s; stopped (a server this "
                                        "slow: download the file yourself and pass its path)")
                out.write(chunk)
    except (requests.RequestException, urllib3.exceptions.HTTPError) as e:
        raise DownloadError(f"{shown}: download failed ({type(e).__name__}: {e})") from None
