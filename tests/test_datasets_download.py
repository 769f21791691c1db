"""Theorem sets from URLs: downloads into the cache (checksums, size and time limits, pages that are not
theorems), the pinned miniF2F download, file:// read in place, and what the cache says and refreshes."""
from __future__ import annotations

import functools
import hashlib
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dataset_rows import DEEPSEEK_ROW, ROWS, names, write_jsonl
from leangym.datasets import DatasetError, DownloadError, fetch, load_minif2f, load_theorems
from leangym.datasets import minif2f as minif2f_mod


@pytest.fixture
def http_dir(tmp_path: Path):
    """A local http.server on 127.0.0.1 serving ``tmp_path/www``; yields (dir, base url, stop)."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()

    yield www, f"http://127.0.0.1:{httpd.server_address[1]}", stop
    stop()


def test_download_into_cache_with_sha256(http_dir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    www, base, stop = http_dir
    cache = tmp_path / "cache"
    monkeypatch.setenv("LEANGYM_CACHE", str(cache))
    f = write_jsonl(www / "minif2f.jsonl", ROWS + [DEEPSEEK_ROW])
    digest = hashlib.sha256(f.read_bytes()).hexdigest()
    url = f"{base}/minif2f.jsonl"

    with pytest.raises(DownloadError, match="sha256 mismatch"):
        fetch(url, sha256="0" * 64)
    assert not any(cache.iterdir())  # neither the bad file nor a temp file is left behind

    theorems = load_minif2f(url, split="valid", sha256=digest)
    assert [t.name for t in theorems] == ["aimeI_2000_p7", "mathd_numbertheory_33"]
    cached = list(cache.iterdir())
    assert len(cached) == 1 and cached[0].name.endswith("-minif2f.jsonl")
    assert cached[0].read_bytes() == f.read_bytes()

    stop()  # the cached copy is used from now on
    assert len(load_theorems(url)) == 4
    with pytest.raises(DownloadError, match="HTTP 404|download failed"):
        fetch(f"{base}/other.jsonl")


def test_download_file_url_and_http_404(http_dir, tmp_path: Path) -> None:
    www, base, _ = http_dir
    f = write_jsonl(tmp_path / "local.jsonl", ROWS)
    assert fetch(f.resolve().as_uri(), cache=tmp_path / "c") == f.resolve()  # read in place, not copied
    assert not (tmp_path / "c").exists()
    with pytest.raises(DownloadError, match="HTTP 404"):
        fetch(f"{base}/missing.jsonl", cache=tmp_path / "c")
    with pytest.raises(DownloadError, match="unsupported URL scheme"):
        fetch("ftp://example.org/x.jsonl", cache=tmp_path / "c")


def test_a_download_that_is_not_theorems_is_never_cached(http_dir, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    www, base, _ = http_dir
    monkeypatch.setenv("LEANGYM_CACHE", str(tmp_path / "cache"))
    page = www / "page.jsonl"
    page.write_text("<html><body>rate limited</body></html>\n", encoding="utf-8")  # served with 200
    with pytest.raises(DownloadError, match="not cached"):
        load_theorems(f"{base}/page.jsonl")
    assert list((tmp_path / "cache").iterdir()) == []  # neither the page nor a .part file
    write_jsonl(www / "good.jsonl", ROWS)
    cached = fetch(f"{base}/good.jsonl", cache=tmp_path / "c", validate=load_theorems)
    assert cached.stat().st_mode & 0o044 == 0o044  # readable by others too: caches may be shared


def test_minif2f_downloads_the_default_url_without_a_local_copy(no_shared_copy, http_dir, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    www, base, _ = http_dir
    remote = write_jsonl(www / "minif2f.jsonl", ROWS + [DEEPSEEK_ROW])
    monkeypatch.setattr(minif2f_mod, "DEFAULT_URL", f"{base}/minif2f.jsonl")
    assert names(load_theorems("minif2f", split="valid")) == ["aimeI_2000_p7", "mathd_numbertheory_33"]
    cached = list((tmp_path / "cache").iterdir())
    assert len(cached) == 1 and cached[0].name.endswith("-minif2f.jsonl")
    assert cached[0].read_bytes() == remote.read_bytes()
    remote.unlink()  # from now on the cached copy is read
    assert names(load_minif2f()) == [r["name"] for r in ROWS] + ["mathd_numbertheory_33"]


def test_offline_minif2f_is_one_error_line_that_says_what_to_do(no_shared_copy, tmp_path: Path, capsys) -> None:
    """No local copy and no network: the benchmark CLI ends with one ``error:`` line (status 2, not
    the harness's "rerun to retry" status 1) that names $LEANGYM_MINIF2F."""
    from leangym.cli import run_cli
    from leangym.harness import benchmark

    with pytest.raises(DownloadError, match="LEANGYM_MINIF2F"):
        load_minif2f()
    argv = ["--agent", "hammer", "--dataset", "minif2f", "--split", "test", "--limit", "2",
            "--out", str(tmp_path / "out.jsonl"), "--sim", "--quiet"]
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: benchmark.main(argv))
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("error: ") and "LEANGYM_MINIF2F" in err
    assert "Traceback" not in err and not (tmp_path / "out.jsonl").exists()


def test_a_file_url_is_read_in_place_so_edits_are_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEANGYM_CACHE", str(tmp_path / "cache"))
    f = write_jsonl(tmp_path / "mine.jsonl", ROWS[:2])
    url = f.resolve().as_uri()
    assert names(load_theorems(url)) == ["mathd_algebra_1", "aimeI_2000_p7"]
    write_jsonl(f, ROWS)  # was: the first read stayed cached forever
    assert names(load_theorems(url)) == [r["name"] for r in ROWS]
    assert fetch(url) == f.resolve()
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        fetch(url, sha256="0" * 64)
    with pytest.raises(DownloadError, match="no such file"):
        fetch((tmp_path / "gone.jsonl").resolve().as_uri())
    assert not (tmp_path / "cache").exists()  # nothing was copied


def test_an_http_dataset_says_it_uses_the_cached_copy_and_refresh_downloads_it_again(
        http_dir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from leangym.harness import benchmark

    www, base, _ = http_dir
    monkeypatch.setenv("LEANGYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LEANGYM_SERVER", raising=False)
    rows = [{"name": f"t{i}", "formal_statement": f"theorem t{i} (p : Prop) (hp : p) : p := by sorry"}
            for i in range(3)]
    write_jsonl(www / "rows.jsonl", rows[:2])
    url = f"{base}/rows.jsonl"
    assert names(load_theorems(url)) == ["t0", "t1"]
    assert "cached" not in capsys.readouterr().err  # a fresh download says nothing

    write_jsonl(www / "rows.jsonl", rows)
    assert names(load_theorems(url)) == ["t0", "t1"]  # the cached copy, and it says so
    (cached,) = (tmp_path / "cache").iterdir()
    err = capsys.readouterr().err
    assert f"{url}: using the copy cached at {cached}" in err
    assert "refresh=True" in err and "--refresh-dataset" in err
    assert names(load_theorems(url, refresh=True)) == ["t0", "t1", "t2"]
    assert names(load_theorems(url)) == ["t0", "t1", "t2"]  # the refreshed copy is the cached one now

    write_jsonl(www / "rows.jsonl", rows[:1])
    out = tmp_path / "r.jsonl"
    argv = ["--agent", "hammer", "--dataset", url, "--sim", "--quiet", "--plot", "none", "--out", str(out)]
    assert benchmark.main(argv) == 0
    assert json.loads(out.read_text(encoding="utf-8").split("\n")[0])["count"] == 3
    assert benchmark.main([*argv, "--refresh-dataset", "--restart"]) == 0
    assert json.loads(out.read_text(encoding="utf-8").split("\n")[0])["count"] == 1


def test_a_pinned_minif2f_download_cut_at_a_line_boundary_is_refused(no_shared_copy, http_dir, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a Content-Length a body cut between rows parses row by row: the pinned file's split counts
    are what tells a whole download (it used to be cached and reused as a smaller miniF2F)."""
    www, base, _ = http_dir
    write_jsonl(www / "minif2f.jsonl", ROWS)
    url = f"{base}/minif2f.jsonl"
    monkeypatch.setattr(minif2f_mod, "DEFAULT_URL", url)
    monkeypatch.setattr(minif2f_mod, "PINNED_URL", url)
    with pytest.raises(DownloadError, match="cut short"):
        load_minif2f()
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    whole = {sp: sum(r["split"] == sp for r in ROWS) for sp in ("valid", "test")}
    monkeypatch.setattr(minif2f_mod, "PINNED_COUNTS", whole)
    assert len(load_minif2f()) == len(ROWS)


def test_a_download_over_the_size_limit_is_refused_and_not_cached(http_dir, tmp_path: Path) -> None:
    www, base, _ = http_dir
    write_jsonl(www / "big.jsonl", ROWS * 50)
    with pytest.raises(DownloadError, match="over the limit|limit for a data file"):
        fetch(f"{base}/big.jsonl", cache=tmp_path / "c", max_bytes=1000)
    assert not any((tmp_path / "c").iterdir())


def test_cache_names_are_short_safe_file_names_and_urls_are_recorded_without_secrets() -> None:
    from leangym.datasets.download import cached_path, redacted

    assert len(cached_path("http://h/" + "a" * 300 + ".jsonl").name) < 100
    assert cached_path("http://h/" + "a" * 300 + ".jsonl").name.endswith(".jsonl")
    assert "\x00" not in cached_path("http://h/a%00b.jsonl").name
    assert redacted("https://u:pw@host:8080/x.jsonl?token=SECRET&v=2") == "https://host:8080/x.jsonl?token=…&v=…"
    assert redacted(redacted("http://[::1]:8000/x.jsonl?a=1")) == "http://[::1]:8000/x.jsonl?a=…"
    from leangym.harness.records import recorded  # what a results header keeps of --dataset and argv

    assert recorded("--dataset=https://u:p@h/x.jsonl?token=S") == "--dataset=https://h/x.jsonl?token=…"
    assert recorded("minif2f:https://h/m.jsonl?sig=1") == "minif2f:https://h/m.jsonl?sig=…"
    assert recorded("/data/x.jsonl") == "/data/x.jsonl"


def test_a_cut_copy_of_the_pinned_minif2f_already_in_the_cache_is_refused(no_shared_copy, http_dir, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy cached before the whole-download check (or edited since) is held to it too."""
    from leangym.datasets.download import cached_path

    www, base, _ = http_dir
    url = f"{base}/minif2f.jsonl"
    monkeypatch.setattr(minif2f_mod, "DEFAULT_URL", url)
    monkeypatch.setattr(minif2f_mod, "PINNED_URL", url)
    cached = cached_path(url, tmp_path / "cache")
    cached.parent.mkdir(parents=True)
    write_jsonl(cached, ROWS[:1])
    with pytest.raises(DatasetError, match="delete it, or pass refresh"):
        load_minif2f()


def test_a_server_trickling_bytes_is_stopped_at_the_download_deadline(tmp_path: Path) -> None:
    """The deadline is checked at each read (not each 64 KiB chunk, which a trickle never fills)."""
    import time
    from http.server import BaseHTTPRequestHandler

    class Trickle(BaseHTTPRequestHandler):
        def log_message(self, *a):  # noqa: ANN002
            pass

        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b"{")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with pytest.raises(DownloadError, match="still downloading after 1 s"):
            fetch(f"http://127.0.0.1:{httpd.server_address[1]}/x.jsonl", cache=tmp_path / "c", deadline_s=1.0)
    finally:
        httpd.shutdown()
        httpd.server_close()
