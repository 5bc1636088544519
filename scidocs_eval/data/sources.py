"""Where a benchmark's data comes from (`Benchmark.download`): a `DownloadSource` fetches it into a folder for
`data download`. The built-in sources: the official release on S3 (`download.S3Release`), each task's hub dataset
(`hf_datasets.HubDatasets`), and a folder or file:// URL copied as it is (`FolderCopy`, for a benchmark whose data
sits on a share or a mirror)."""

from __future__ import annotations

import shutil
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.safe_output import owned_folder

COMMAND = "scidocs-eval data download"
OPTION = "--out-dir"


@dataclass(frozen=True)
class TaskDataset:
    """A task whose own dataset a per-task source fetches: its name, `TaskSpec.dataset` and the files it reads."""

    task: str
    dataset: Mapping[str, str]
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class DownloadOptions:
    """`data download`'s options (the S3 release's endpoint, prefix, embeddings, retries and time-out; progress)."""

    endpoint: str | None = None
    prefix: str | None = None
    with_embeddings: bool = False
    retries: int = 5
    timeout: float = 60.0
    progress: bool = True


class DownloadSource(ABC):
    """A benchmark's data source: `fetch` writes it into a folder (only files the tool wrote are ever replaced) and
    returns the lines `data download` prints; a failure is a `ScidocsEvalError`."""

    per_task: ClassVar[bool] = False
    """True: each task's own dataset into DEST/TASK (`--tasks` picks some); False: one suite, fetched whole."""

    @abstractmethod
    def fetch(self, dest: Path, datasets: Sequence[TaskDataset], options: DownloadOptions) -> list[str]:
        """Fetch into `dest` (`datasets`: the chosen tasks' own datasets, for a per-task source)."""


def local_path(url: str) -> Path:
    """The folder or file a `file://` URL or a plain path names."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        from urllib.request import url2pathname  # with http.client and ssl: not at start-up

        return Path(url2pathname(parsed.path))
    if parsed.scheme and len(parsed.scheme) > 1:
        raise ScidocsEvalError(f"download source {url!r}: only a folder or a file:// URL can be copied")
    return Path(url)


@dataclass(frozen=True)
class FolderCopy(DownloadSource):
    """A suite copied from a folder (a path or a `file://` URL) as it is."""

    url: str
    ignore: tuple[str, ...] = field(default=())
    """glob patterns of files not copied."""

    def fetch(self, dest: Path, datasets: Sequence[TaskDataset], options: DownloadOptions) -> list[str]:
        source = local_path(self.url)
        if not source.is_dir():
            raise ScidocsEvalError(f"download source {self.url}: no such folder")
        with owned_folder(dest, COMMAND, option=OPTION, replaces=(COMMAND,)) as staging:
            shutil.copytree(source, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*self.ignore))
        return [f"{self.url} -> {dest}"]
