"""Download the official SciDocs release from its public S3 bucket over plain HTTPS, anonymously.

No AWS CLI, no credentials, no region setting: the bucket's address is one URL (`--endpoint`,
$SCIDOCS_EVAL_ENDPOINT) under which `?list-type=2&prefix=...` lists the keys (S3 ListObjectsV2, paginated)
and `/{key}` fetches one. Each key is written to `{dest}/.scidocs-download-parts/{key}.part`, resumed with an
HTTP Range request after an interruption, retried with exponential backoff on 5xx answers, time-outs and
dropped connections, checked for size and (where the ETag is a plain MD5, i.e. not a multipart ETag) for MD5,
and only then moved to its final name through the output layer (`safe_output.open_owned_folder`: the folder's manifest
records each file's sha256, so a file you edited, such as a hand-fixed `cite/test.qrel`, is yours and is
never replaced; a folder of files that `data download` did not write is refused). `{dest}/.scidocs-download.json`
records each verified key's size and ETag, so a second run downloads (and hashes) nothing that is already whole.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
import urllib.error
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from scidocs_eval.data.sources import DownloadOptions, DownloadSource, TaskDataset
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.safe_output import MANIFEST, OwnedFolder, disk_errors, open_owned_folder
from scidocs_eval.progress import progress_bar

if TYPE_CHECKING:
    from http.client import HTTPResponse

    from tqdm import tqdm

log = logging.getLogger("scidocs_eval")

ENDPOINT_ENV = "SCIDOCS_EVAL_ENDPOINT"
DEFAULT_ENDPOINT = "https://ai2-s2-research-public.s3-us-west-2.amazonaws.com"
DEFAULT_PREFIX = "specter/scidocs/"
EMBEDDINGS_FOLDER = "specter-embeddings/"
STATE_FILE = ".scidocs-download.json"
PARTS_FOLDER = ".scidocs-download-parts"
PART_SUFFIX = ".part"
COMMAND = "scidocs-eval data download"
_S3_NAMESPACE = "{http://s3.amazonaws.com/doc/2006-03-01/}"
_PLAIN_MD5 = re.compile(r"^[0-9a-f]{32}$")
_CHUNK = 1 << 20
T = TypeVar("T")


class DownloadError(ScidocsEvalError):
    """A key could not be fetched whole; the message names the key and why."""


class KeyVanishedError(DownloadError):
    """A listed key answered 404: the release changed between listing and fetching."""


class _RetryableError(Exception):
    """A failure worth another try (5xx, 429, time-out, dropped connection, bad MD5)."""


@dataclass(frozen=True)
class RemoteObject:
    """One key of the bucket as ListObjectsV2 describes it (`size` in bytes; `etag` without quotes)."""

    key: str
    size: int
    etag: str

    @property
    def md5(self) -> str | None:
        """The ETag when it is a plain MD5 hex digest (single-part upload); None for multipart ETags."""
        return self.etag if _PLAIN_MD5.match(self.etag) else None


@dataclass
class DownloadReport:
    """What a download run did: keys fetched, already whole, not requested; bytes received; failures (key -> why,
    the message naming the key or its URL)."""

    fetched: list[str] = field(default_factory=list)
    already_whole: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    bytes_downloaded: int = 0

    def summary(self) -> str:
        return (f"{len(self.fetched)} file(s) fetched ({self.bytes_downloaded / 2**20:.1f} MiB), "
                f"{len(self.already_whole)} already whole, {len(self.skipped)} not requested, "
                f"{len(self.failed)} failed")


def default_endpoint() -> str:
    """$SCIDOCS_EVAL_ENDPOINT, else the public bucket (virtual-hosted style, region us-west-2)."""
    return os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT


class S3Downloader:
    """An anonymous S3 client over plain HTTP(S) that lists a prefix and fetches keys whole.

    Args:
        endpoint: the bucket's URL; `{endpoint}/{key}` is an object (virtual-hosted or path-style both work).
        retries: extra tries per request after the first (on 5xx, 429, time-outs, dropped connections, bad MD5).
        backoff: seconds before the first retry; doubled before each later one.
        timeout: seconds a connection or a read may stall before it counts as a time-out.
        page_size: keys per ListObjectsV2 page (S3's maximum is 1000).
    """

    def __init__(self, endpoint: str | None = None, retries: int = 5, backoff: float = 1.0, timeout: float = 60.0,
                 page_size: int = 1000):
        self.endpoint = (endpoint or default_endpoint()).rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self.page_size = page_size

    # -- requests ------------------------------------------------------------------------------------------

    def _open(self, url: str, headers: dict[str, str] | None = None) -> HTTPResponse:
        """urlopen that turns the failures worth retrying into _RetryableError and 404 into KeyVanishedError."""
        import urllib.request  # with http.client and ssl: not at start-up
        from http.client import HTTPException

        request = urllib.request.Request(url, headers=headers or {})
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as error:
            error.close()
            if error.code == 404:
                raise KeyVanishedError(f"{url}: 404 Not Found") from None
            if error.code >= 500 or error.code == 429:
                raise _RetryableError(f"HTTP {error.code} {error.reason}") from None
            raise DownloadError(f"{url}: HTTP {error.code} {error.reason}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, HTTPException) as error:
            raise _RetryableError(f"{type(error).__name__}: {error}") from None

    def _with_retries(self, what: str, attempt_once: Callable[..., T], *args: Any) -> T:
        """Call `attempt_once(*args)` until it returns, retrying _RetryableError with exponential backoff."""
        for attempt in range(self.retries + 1):
            try:
                return attempt_once(*args)
            except _RetryableError as error:
                if attempt == self.retries:
                    raise DownloadError(f"{what}: gave up after {self.retries + 1} tries ({error})") from None
                delay = self.backoff * 2**attempt
                log.warning("%s: %s; retrying in %.1f s", what, error, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")

    # -- listing -------------------------------------------------------------------------------------------

    def _list_page(self, prefix: str, token: str | None) -> ET.Element:
        from http.client import HTTPException

        query = {"list-type": "2", "prefix": prefix, "max-keys": str(self.page_size)}
        if token:
            query["continuation-token"] = token
        with self._open(f"{self.endpoint}/?{urllib.parse.urlencode(query)}") as response:
            try:
                return ET.fromstring(response.read())
            except (ET.ParseError, TimeoutError, ConnectionError, HTTPException) as error:
                raise _RetryableError(f"unreadable listing ({error})") from None

    def list_objects(self, prefix: str = DEFAULT_PREFIX) -> list[RemoteObject]:
        """Every key under `prefix` (following continuation tokens), as RemoteObjects in listing order."""
        objects, token = [], None
        while True:
            root = self._with_retries(f"listing {self.endpoint} prefix {prefix!r}", self._list_page, prefix, token)
            for item in root.iter(f"{_S3_NAMESPACE}Contents"):
                key = item.findtext(f"{_S3_NAMESPACE}Key") or ""
                if key.endswith("/"):
                    continue
                objects.append(RemoteObject(key, int(item.findtext(f"{_S3_NAMESPACE}Size") or 0),
                                            (item.findtext(f"{_S3_NAMESPACE}ETag") or "").strip('"').lower()))
            token = root.findtext(f"{_S3_NAMESPACE}NextContinuationToken")
            if root.findtext(f"{_S3_NAMESPACE}IsTruncated") != "true" or not token:
                return objects

    # -- fetching ------------------------------------------------------------------------------------------

    def _fetch_once(self, obj: RemoteObject, part: Path, meter: ByteMeter) -> None:
        """One try at completing `part`: request what is missing (Range), append it, then check size and MD5."""
        from http.client import HTTPException

        have = part.stat().st_size if part.exists() else 0
        if have > obj.size:
            part.unlink()
            have = 0
        if have < obj.size:
            headers = {"Range": f"bytes={have}-"} if have else {}
            with self._open(f"{self.endpoint}/{urllib.parse.quote(obj.key)}", headers) as response:
                if have and response.status != 206:
                    meter.rewind(have)
                    have = 0
                try:
                    with disk_errors(part, "--dest"), open(part, "ab" if have else "wb") as out:
                        try:
                            while chunk := response.read(_CHUNK):
                                out.write(chunk)
                                meter.advance(len(chunk))
                        except (TimeoutError, ConnectionError, HTTPException) as error:
                            raise _RetryableError(f"transfer broken ({type(error).__name__}: {error})") from None
                except ScidocsEvalError:  # a full disk or a read-only folder: no partial file is left behind
                    part.unlink(missing_ok=True)
                    raise
        size = part.stat().st_size
        if size != obj.size:
            raise _RetryableError(f"got {size} bytes, the listing says {obj.size}")
        if obj.md5 and _md5(part) != obj.md5:
            meter.rewind(size)
            part.unlink()
            raise _RetryableError(f"MD5 differs from the ETag {obj.md5}; the partial file was discarded")

    def fetch(self, obj: RemoteObject, part: Path, meter: ByteMeter) -> None:
        """Fetch `obj` into the partial file `part` (resumed if present) and verify it."""
        part.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._with_retries(obj.key, self._fetch_once, obj, part, meter)
        except KeyVanishedError as error:
            raise KeyVanishedError(f"{error} (listed, then gone: the bucket changed; run again)") from None


class ByteMeter:
    """Counts the bytes received and moves the progress bar (back, too, when a partial file is discarded)."""

    def __init__(self, bar: tqdm):
        self.bar = bar
        self.received = 0

    def advance(self, count: int) -> None:
        self.received += count
        self.bar.update(count)

    def rewind(self, count: int) -> None:
        self.bar.update(-count)


class _State:
    """`{dest}/.scidocs-download.json`: key -> {size, etag} of every file verified whole."""

    def __init__(self, owned: OwnedFolder):
        self.owned = owned
        self.path = owned.folder / STATE_FILE
        self.entries: dict[str, dict] = self._read() if owned.owns(STATE_FILE) else {}

    def _read(self) -> dict[str, dict]:
        """The recorded entries; a state file that is not a JSON object of entries (cut short by a crash, say)
        only costs a re-check of every file: a warning, and it is rewritten as files are verified."""
        try:
            entries = orjson.loads(self.path.read_bytes())
        except orjson.JSONDecodeError as error:
            entries, problem = None, f"not JSON ({error})"
        else:
            problem = "not an object {key: {size, etag}}"
        if isinstance(entries, dict) and all(isinstance(entry, dict) for entry in entries.values()):
            return entries
        log.warning("%s is %s: ignoring it, so every file already downloaded is checked again", self.path, problem)
        return {}

    def is_whole(self, obj: RemoteObject, name: str) -> bool:
        """Whether `name` holds `obj` as fetched (and unchanged since: else it is the user's)."""
        return self.entries.get(obj.key) == {"size": obj.size, "etag": obj.etag} and self.owned.owns(name)

    def record(self, obj: RemoteObject) -> None:
        self.entries[obj.key] = {"size": obj.size, "etag": obj.etag}
        self.owned.write_bytes(STATE_FILE, orjson.dumps(self.entries, option=orjson.OPT_INDENT_2 |
                                                         orjson.OPT_SORT_KEYS))


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _local_name(prefix: str, key: str) -> str:
    """The key's path relative to the destination folder."""
    relative = key[len(prefix):] if key.startswith(prefix) else key
    if Path(relative).is_absolute() or ".." in Path(relative).parts or not relative:
        raise DownloadError(f"key {key!r} would be written outside the destination folder")
    if Path(relative).parts[0] in (MANIFEST, STATE_FILE, PARTS_FOLDER):
        raise DownloadError(f"key {key!r} would replace the download's own record {Path(relative).parts[0]}")
    return relative


def _partial_bytes(paths: Iterator[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


def download_release(
    dest: str | os.PathLike[str],
    *,
    endpoint: str | None = None,
    prefix: str = DEFAULT_PREFIX,
    with_embeddings: bool = False,
    objects: Sequence[RemoteObject] | None = None,
    downloader: S3Downloader | None = None,
    progress: bool = True,
) -> DownloadReport:
    """Mirror the release under `prefix` into `dest` (keys relative to the prefix), skipping whole files.

    Args:
        dest: the suite directory to fill (created if needed).
        endpoint: the bucket's URL (default: $SCIDOCS_EVAL_ENDPOINT or the public bucket).
        prefix: the release's folder in the bucket.
        with_embeddings: also fetch the reference SPECTER embeddings (`specter-embeddings/`, several GiB).
        objects: a listing made before (default: list now).
        downloader: the client to use (default: one on `endpoint` with default retries).
        progress: show one progress bar over the bytes to fetch.

    Returns:
        a DownloadReport. A key that fails is recorded in `report.failed`; the others are still fetched.
    """
    with open_owned_folder(dest, COMMAND, option="--dest", replaces=(COMMAND,)) as owned:
        return _download_into(owned, endpoint, prefix, with_embeddings, objects, downloader, progress)


def _download_into(owned: OwnedFolder, endpoint: str | None, prefix: str, with_embeddings: bool,
                   objects: Sequence[RemoteObject] | None, downloader: S3Downloader | None,
                   progress: bool) -> DownloadReport:
    client = downloader or S3Downloader(endpoint)
    listing = list(objects) if objects is not None else client.list_objects(prefix)
    if not listing:
        raise DownloadError(f"no keys under {client.endpoint}/{prefix}: wrong --endpoint or --prefix?")
    owned.write_manifest()  # before the first byte: an interrupted download's folder is the tool's
    state = _State(owned)
    report = DownloadReport()
    todo: list[tuple[RemoteObject, str]] = []
    for obj in listing:
        name = _local_name(prefix, obj.key)
        if not with_embeddings and obj.key[len(prefix):].startswith(EMBEDDINGS_FOLDER):
            report.skipped.append(obj.key)
        elif state.is_whole(obj, name):
            report.already_whole.append(obj.key)
        else:
            todo.append((obj, name))
    owned.refuse_in_the_way([STATE_FILE, *(name for _, name in todo)])
    parts_folder = owned.folder / PARTS_FOLDER
    resumed = _partial_bytes(parts_folder / f"{name}{PART_SUFFIX}" for _, name in todo)
    with progress_bar(total=sum(obj.size for obj, _ in todo), initial=resumed, unit="B", unit_scale=True,
                      unit_divisor=1024, desc="downloading SciDocs", enabled=progress) as bar:
        meter = ByteMeter(bar)
        for obj, name in todo:
            part = parts_folder / f"{name}{PART_SUFFIX}"
            try:
                client.fetch(obj, part, meter)
            except DownloadError as error:
                report.failed[obj.key] = str(error)
                continue
            owned.install_file(part, name)
            state.record(obj)
            report.fetched.append(obj.key)
    report.bytes_downloaded = meter.received
    for folder in sorted((p for p in parts_folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(folder.iterdir()):
            folder.rmdir()
    if parts_folder.is_dir() and not any(parts_folder.iterdir()):
        parts_folder.rmdir()
    return report


@dataclass(frozen=True)
class S3Release(DownloadSource):
    """The official SciDocs release in its public S3 bucket (`download_release`), fetched whole."""

    prefix: str = DEFAULT_PREFIX

    def fetch(self, dest: Path, datasets: Sequence[TaskDataset], options: DownloadOptions) -> list[str]:
        client = S3Downloader(options.endpoint, retries=options.retries, timeout=options.timeout)
        prefix = options.prefix or self.prefix
        report = download_release(dest, prefix=prefix, with_embeddings=options.with_embeddings, downloader=client,
                                  progress=options.progress)
        if report.failed:
            raise DownloadError(f"{report.summary()}\n{len(report.failed)} file(s) not downloaded; run the command "
                                "again to resume:\n" + "\n".join(f"FAILED {why}" for why in report.failed.values()))
        return [f"{client.endpoint}/{prefix} -> {dest}", report.summary()]
