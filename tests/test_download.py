"""`data download` against a real S3-compatible server (moto's server mode) on 127.0.0.1.

A small mirror of the release (a tiny demo suite in the official layout, plus a fake embeddings folder) is
put in a bucket under `specter/scidocs/`. Fault injection (500s, stalls, cut transfers, flipped bytes) is a
small HTTP proxy on 127.0.0.1 in front of moto, which also logs every request's Range header.
"""

from __future__ import annotations

import threading
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.data.download import (
    COMMAND,
    ENDPOINT_ENV,
    PART_SUFFIX,
    PARTS_FOLDER,
    DownloadError,
    S3Downloader,
    default_endpoint,
    download_release,
)
from scidocs_eval.formats.safe_output import MANIFEST, open_owned_folder
from scidocs_eval.formats.suite import Suite

BUCKET = "ai2-s2-research-public"
PREFIX = "specter/scidocs/"
TINY = DemoConfig(mag_papers=40, mesh_papers=30, ranking_queries=3, recomm_impressions=(10, 5, 5),
                  recomm_papers=40, topics=5)
BIG_KEY = "paper_metadata_recomm.json"


@dataclass
class Mirror:
    """The bucket's URL (path-style on moto), the files it holds (relative path -> bytes) and an S3 client."""

    endpoint: str
    files: dict[str, bytes]
    s3: object

    def upload(self, relative: str, data: bytes) -> None:
        self.s3.put_object(Bucket=BUCKET, Key=PREFIX + relative, Body=data, ACL="public-read")
        self.files[relative] = data


@pytest.fixture(scope="module")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def mirror(moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirror]:
    """A public bucket holding a tiny suite in the official layout, and reference embeddings.

    Tests that change an object put it back (`restored`)."""
    boto3 = pytest.importorskip("boto3")
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-west-2", aws_access_key_id="testing",
                      aws_secret_access_key="testing")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    suite = build_demo_suite(tmp_path_factory.mktemp("source") / "suite", TINY)
    result = Mirror(f"{moto_endpoint}/{BUCKET}", {}, s3)
    for path in sorted(p for p in suite.root.rglob("*") if p.is_file() and p.name != MANIFEST):
        result.upload(path.relative_to(suite.root).as_posix(), path.read_bytes())
    result.upload("specter-embeddings/cls.jsonl", b'{"paper_id": "x", "embedding": [0.5]}\n' * 50)
    yield result


@contextmanager
def restored(mirror: Mirror, relative: str) -> Iterator[None]:
    """Put the object back as it was after the block."""
    original = mirror.files[relative]
    try:
        yield
    finally:
        mirror.upload(relative, original)


@dataclass
class Faults:
    """What the proxy does to GETs of one object (by key relative to the prefix)."""

    errors: int = 0
    """answer this many requests with 500 first."""
    stalls: int = 0
    """let this many requests hang longer than the client's time-out first."""
    cut_after: int | None = None
    """send only this many body bytes of the first full answer, then drop the connection."""
    corrupt_at: int | None = None
    """flip this byte offset of the object in every answer that covers it."""
    ranges: list[str | None] = field(default_factory=list)
    """the Range header of every request, in order."""


class FaultProxy:
    """A forwarding HTTP proxy on 127.0.0.1 in front of the bucket, injecting per-key faults."""

    def __init__(self, upstream: str, stall_seconds: float = 1.5):
        self.upstream = upstream.rstrip("/")
        self.stall_seconds = stall_seconds
        self.faults: dict[str, Faults] = defaultdict(Faults)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                proxy.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        """The bucket's URL through the proxy."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/{BUCKET}"

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        key = request.path.removeprefix(f"/{BUCKET}/").removeprefix(PREFIX)
        faults = self.faults[key]
        faults.ranges.append(request.headers.get("Range"))
        if faults.stalls:
            faults.stalls -= 1
            threading.Event().wait(self.stall_seconds)
            return
        if faults.errors:
            faults.errors -= 1
            request.send_error(500, "injected failure")
            return
        forwarded = urllib.request.Request(self.upstream + request.path,
                                           headers={k: v for k, v in request.headers.items() if k == "Range"})
        try:
            response = urllib.request.urlopen(forwarded)
        except urllib.error.HTTPError as error:
            response = error
        body = bytearray(response.read())
        start = int(response.headers.get("Content-Range", "bytes 0-").split()[1].split("-")[0])
        if faults.corrupt_at is not None and start <= faults.corrupt_at < start + len(body):
            body[faults.corrupt_at - start] ^= 0xFF
        request.send_response(response.status)
        for name in ("Content-Type", "Content-Range", "ETag"):
            if response.headers.get(name):
                request.send_header(name, response.headers[name])
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        if faults.cut_after is not None:
            request.wfile.write(bytes(body[:faults.cut_after]))
            faults.cut_after = None
            request.close_connection = True
            return
        request.wfile.write(bytes(body))

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(mirror: Mirror) -> Iterator[FaultProxy]:
    with FaultProxy(mirror.endpoint.rsplit("/", 1)[0]) as running:
        yield running


def _client(endpoint: str, **params: object) -> S3Downloader:
    return S3Downloader(endpoint, **{"retries": 3, "backoff": 0.0, "timeout": 5.0, **params})


def _assert_mirrored(dest: Path, mirror: Mirror, with_embeddings: bool = False) -> None:
    expected = {k: v for k, v in mirror.files.items() if with_embeddings or not k.startswith("specter-embeddings/")}
    got = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*")
           if p.is_file() and not p.name.startswith(".scidocs-download") and p.name != MANIFEST}
    assert got == expected


def _part(dest: Path, key: str) -> Path:
    """Where an interrupted `data download` into `dest` left the partial file of `key` (the folder is the tool's)."""
    with open_owned_folder(dest, COMMAND) as owned:
        owned.write_manifest()
    part = dest / PARTS_FOLDER / f"{key}{PART_SUFFIX}"
    part.parent.mkdir(parents=True, exist_ok=True)
    return part


def test_whole_download_then_nothing_the_second_time(mirror: Mirror, tmp_path: Path) -> None:
    dest = tmp_path / "scidocs"
    client = _client(mirror.endpoint, page_size=4)
    listing = client.list_objects(PREFIX)
    assert sorted(o.key for o in listing) == sorted(PREFIX + k for k in mirror.files)
    assert all(o.md5 and o.size == len(mirror.files[o.key[len(PREFIX):]]) for o in listing)

    report = download_release(dest, prefix=PREFIX, downloader=client, progress=False)
    assert not report.failed
    assert report.skipped == [PREFIX + "specter-embeddings/cls.jsonl"]
    assert report.bytes_downloaded == sum(len(v) for k, v in mirror.files.items() if "embeddings" not in k)
    _assert_mirrored(dest, mirror)
    assert len(Suite(dest).labels("mag", "train").ids) > 0
    assert not list(dest.rglob(f"*{PART_SUFFIX}"))

    again = download_release(dest, prefix=PREFIX, downloader=client, progress=False)
    assert again.fetched == [] and again.bytes_downloaded == 0
    assert len(again.already_whole) == len(mirror.files) - 1

    with_embeddings = download_release(dest, prefix=PREFIX, downloader=client, with_embeddings=True, progress=False)
    assert with_embeddings.fetched == [PREFIX + "specter-embeddings/cls.jsonl"]
    _assert_mirrored(dest, mirror, with_embeddings=True)


def test_changed_object_is_fetched_again(mirror: Mirror, tmp_path: Path) -> None:
    client = _client(mirror.endpoint)
    download_release(tmp_path, prefix=PREFIX, downloader=client, progress=False)
    with restored(mirror, "cite/test.qrel"):
        mirror.upload("cite/test.qrel", b"q1 0 c1 1\n")
        report = download_release(tmp_path, prefix=PREFIX, downloader=client, progress=False)
    assert report.fetched == [PREFIX + "cite/test.qrel"]
    assert (tmp_path / "cite/test.qrel").read_bytes() == b"q1 0 c1 1\n"


def test_resume_requests_only_the_missing_bytes(mirror: Mirror, proxy: FaultProxy, tmp_path: Path) -> None:
    data = mirror.files[BIG_KEY]
    half = len(data) // 2
    _part(tmp_path, BIG_KEY).write_bytes(data[:half])
    report = download_release(tmp_path, prefix=PREFIX, downloader=_client(proxy.endpoint), progress=False)
    assert not report.failed
    assert proxy.faults[BIG_KEY].ranges == [f"bytes={half}-"]
    assert (tmp_path / BIG_KEY).read_bytes() == data
    assert report.bytes_downloaded == sum(len(v) for k, v in mirror.files.items() if "embeddings" not in k) - half


def test_transfer_cut_midway_is_resumed(mirror: Mirror, proxy: FaultProxy, tmp_path: Path) -> None:
    data = mirror.files[BIG_KEY]
    proxy.faults[BIG_KEY].cut_after = 1000
    report = download_release(tmp_path, prefix=PREFIX, downloader=_client(proxy.endpoint), progress=False)
    assert not report.failed
    assert proxy.faults[BIG_KEY].ranges == [None, "bytes=1000-"]
    assert (tmp_path / BIG_KEY).read_bytes() == data


def test_500_then_success_and_time_out_then_success(mirror: Mirror, proxy: FaultProxy, tmp_path: Path) -> None:
    proxy.faults["mag/train.csv"].errors = 2
    proxy.faults["cite/val.qrel"].stalls = 1
    report = download_release(tmp_path, prefix=PREFIX, downloader=_client(proxy.endpoint, timeout=0.5), progress=False)
    assert not report.failed
    assert len(proxy.faults["mag/train.csv"].ranges) == 3
    assert len(proxy.faults["cite/val.qrel"].ranges) == 2
    _assert_mirrored(tmp_path, mirror)


def test_persistent_500_gives_up_with_the_key_named(mirror: Mirror, proxy: FaultProxy, tmp_path: Path) -> None:
    proxy.faults["mag/train.csv"].errors = 100
    report = download_release(tmp_path, prefix=PREFIX, downloader=_client(proxy.endpoint, retries=2), progress=False)
    assert list(report.failed) == [PREFIX + "mag/train.csv"]
    assert "gave up after 3 tries (HTTP 500" in report.failed[PREFIX + "mag/train.csv"]
    assert len(proxy.faults["mag/train.csv"].ranges) == 3
    assert not (tmp_path / "mag/train.csv").exists()
    assert report.summary().endswith("1 failed")


def test_corrupted_byte_is_caught_by_md5(mirror: Mirror, proxy: FaultProxy, tmp_path: Path) -> None:
    proxy.faults[BIG_KEY].corrupt_at = 100
    report = download_release(tmp_path, prefix=PREFIX, downloader=_client(proxy.endpoint, retries=1), progress=False)
    assert list(report.failed) == [PREFIX + BIG_KEY]
    assert "MD5 differs from the ETag" in report.failed[PREFIX + BIG_KEY]
    assert not (tmp_path / BIG_KEY).exists() and not _part(tmp_path, BIG_KEY).exists()


def test_corrupted_partial_file_is_discarded_and_refetched(mirror: Mirror, proxy: FaultProxy,
                                                           tmp_path: Path) -> None:
    data = mirror.files[BIG_KEY]
    damaged = bytearray(data[:500])
    damaged[10] ^= 0xFF
    _part(tmp_path, BIG_KEY).write_bytes(bytes(damaged))
    report = download_release(tmp_path, prefix=PREFIX, downloader=_client(proxy.endpoint), progress=False)
    assert not report.failed
    assert proxy.faults[BIG_KEY].ranges == ["bytes=500-", None]
    assert (tmp_path / BIG_KEY).read_bytes() == data


def test_key_that_disappears_after_listing(mirror: Mirror, tmp_path: Path) -> None:
    client = _client(mirror.endpoint)
    listing = client.list_objects(PREFIX)
    with restored(mirror, "cocite/val.qrel"):
        mirror.s3.delete_object(Bucket=BUCKET, Key=PREFIX + "cocite/val.qrel")
        report = download_release(tmp_path, prefix=PREFIX, downloader=client, objects=listing, progress=False)
    assert list(report.failed) == [PREFIX + "cocite/val.qrel"]
    assert report.failed[PREFIX + "cocite/val.qrel"].endswith(
        "cocite/val.qrel: 404 Not Found (listed, then gone: the bucket changed; run again)")
    assert len(report.fetched) == len(mirror.files) - 2
    assert not (tmp_path / "cocite/val.qrel").exists()


def test_empty_listing_is_an_error(mirror: Mirror, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match="no keys under .*nothing/here/: wrong --endpoint or --prefix"):
        download_release(tmp_path, prefix="nothing/here/", downloader=_client(mirror.endpoint), progress=False)


def test_cli_uses_the_endpoint_setting(mirror: Mirror, proxy: FaultProxy, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(ENDPOINT_ENV, mirror.endpoint)
    assert default_endpoint() == mirror.endpoint
    assert main(["data", "download", "--dest", str(tmp_path / "a"), "--quiet"]) == 0
    assert "0 already whole" in capsys.readouterr().out
    _assert_mirrored(tmp_path / "a", mirror)
    proxy.faults["mag/val.csv"].errors = 100
    assert main(["data", "download", "--dest", str(tmp_path / "b"), "--endpoint", proxy.endpoint, "--retries", "0",
                 "--quiet"]) == 2
    assert f"FAILED {PREFIX}mag/val.csv: gave up after 1 tries (HTTP 500" in capsys.readouterr().err


def test_default_endpoint_is_the_public_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENDPOINT_ENV, raising=False)
    assert default_endpoint() == "https://ai2-s2-research-public.s3-us-west-2.amazonaws.com"
