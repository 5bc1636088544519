"""A Hugging Face hub on 127.0.0.1 for tests: the HTTP routes `huggingface_hub` and `datasets` call to load a dataset
at a revision (repo info, file tree, paths-info, file download with ranges), serving dataset repositories held in
memory, each with commits by sha and a `main` branch. Unknown repositories, revisions and files get the hub's
status codes and `X-Error-Code` headers, so the libraries raise the errors they raise against the real hub.

`HubRepo.commit(files)` adds a commit (the first sha can be a task's pinned revision); `HubRepo.main` is the last.
Every request's method and path is logged in `FakeHub.requests`.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


@dataclass
class HubRepo:
    """A dataset repository: sha -> {path: bytes}, in commit order."""

    repo_id: str
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)

    def commit(self, files: Mapping[str, bytes], sha: str | None = None) -> str:
        sha = sha or _sha1(json.dumps(sorted((p, _sha1(b)) for p, b in files.items())).encode() + self.repo_id.encode()
                           + str(len(self.commits)).encode())
        self.commits[sha] = dict(files)
        return sha

    @property
    def main(self) -> str:
        return list(self.commits)[-1]

    def resolve(self, revision: str) -> str | None:
        return self.main if revision == "main" else revision if revision in self.commits else None


def readme(configs: Mapping[str, Mapping[str, str | list[str]]]) -> bytes:
    """A dataset card whose YAML declares `configs` ({config: {split: path pattern(s)}}), as MTEB's repos do."""
    lines = ["---", "configs:"]
    for name, splits in configs.items():
        lines += [f"- config_name: {name}", "  data_files:"]
        for split, paths in splits.items():
            lines += [f"  - split: {split}", f"    path: {json.dumps(paths)}"]
    return "\n".join([*lines, "---", "", "A test dataset.", ""]).encode()


def parquet(rows: list[dict]) -> bytes:
    """`rows` as one Parquet file, the format the hub's converted datasets use."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buffer)
    return buffer.getvalue()


def jsonl(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


class FakeHub:
    """`with FakeHub() as hub:` serves `hub.repos` at `hub.endpoint` (point HF_ENDPOINT at it)."""

    def __init__(self) -> None:
        self.repos: dict[str, HubRepo] = {}
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                hub._serve(self, body=False)

            def do_GET(self) -> None:
                hub._serve(self, body=True)

            def do_POST(self) -> None:
                hub._serve(self, body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def repo(self, repo_id: str) -> HubRepo:
        return self.repos.setdefault(repo_id, HubRepo(repo_id))

    def __enter__(self) -> FakeHub:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _serve(self, request: BaseHTTPRequestHandler, body: bool) -> None:
        url = urlsplit(request.path)
        self.requests.append(f"{request.command} {unquote(url.path)}")
        length = int(request.headers.get("Content-Length") or 0)
        form = parse_qs(request.rfile.read(length).decode()) if length else {}
        query = parse_qs(url.query)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        try:
            status, headers, payload = self._route(request.command, parts, query, form, request.headers)
        except LookupError as missing:
            code, error = missing.args
            status, headers, payload = code, {"X-Error-Code": error}, json.dumps({"error": error}).encode()
        request.send_response(status)
        for name, value in {"Content-Length": str(len(payload)), **headers}.items():
            request.send_header(name, value)
        request.end_headers()
        if body and request.command != "HEAD":
            request.wfile.write(payload)

    def _lookup(self, repo_id: str, revision: str) -> tuple[HubRepo, str]:
        if repo_id not in self.repos:
            raise LookupError(401, "RepoNotFound")
        repo = self.repos[repo_id]
        sha = repo.resolve(revision)
        if sha is None:
            raise LookupError(404, "RevisionNotFound")
        return repo, sha

    def _route(self, method: str, parts: list[str], query: dict, form: dict,
               headers: Mapping[str, str]) -> tuple[int, dict[str, str], bytes]:
        if parts[:2] == ["api", "datasets"] and len(parts) >= 6:
            repo_id, action, revision, rest = "/".join(parts[2:4]), parts[4], parts[5], "/".join(parts[6:])
            repo, sha = self._lookup(repo_id, revision)
            files = repo.commits[sha]
            if action == "revision":
                info = {"id": repo_id, "sha": sha, "private": False, "disabled": False, "gated": False,
                        "downloads": 0, "likes": 0, "tags": [], "lastModified": "2026-01-01T00:00:00.000Z",
                        "siblings": [{"rfilename": p} for p in files]}
                return 200, {"Content-Type": "application/json"}, json.dumps(info).encode()
            if action == "tree":
                entries = list(self._tree(files, rest, recursive=query.get("recursive", ["false"])[0] == "true"))
                if rest and not entries:
                    raise LookupError(404, "EntryNotFound")
                return 200, {"Content-Type": "application/json"}, json.dumps(entries).encode()
            if action == "paths-info":
                wanted = form.get("paths", [])
                entries = [e for e in self._tree(files, "", recursive=True) if e["path"] in wanted]
                return 200, {"Content-Type": "application/json"}, json.dumps(entries).encode()
        if parts[:1] == ["datasets"] and len(parts) >= 6 and parts[3] == "resolve":
            repo_id, revision, path = "/".join(parts[1:3]), parts[4], "/".join(parts[5:])
            repo, sha = self._lookup(repo_id, revision)
            if path not in repo.commits[sha]:
                raise LookupError(404, "EntryNotFound")
            data = repo.commits[sha][path]
            found = {"ETag": f'"{_sha1(data)}"', "X-Repo-Commit": sha, "Accept-Ranges": "bytes",
                     "Content-Type": "application/octet-stream"}
            if "Range" in headers:
                start, _, end = headers["Range"].removeprefix("bytes=").partition("-")
                first, last = int(start or 0), min(int(end) if end else len(data) - 1, len(data) - 1)
                found["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
                return 206, found, data[first:last + 1]
            return 200, found, data
        raise LookupError(404, "NotFound")

    @staticmethod
    def _tree(files: Mapping[str, bytes], folder: str, recursive: bool) -> Iterator[dict]:
        prefix = folder.rstrip("/") + "/" if folder else ""
        folders: set[str] = set()
        for path, data in sorted(files.items()):
            if not path.startswith(prefix):
                continue
            inner = path[len(prefix):].split("/")
            for depth in range(1, len(inner) if recursive else min(len(inner), 2)):
                folders.add(prefix + "/".join(inner[:depth]))
            if recursive or len(inner) == 1:
                yield {"type": "file", "oid": _sha1(data), "size": len(data), "path": path}
        for name in sorted(folders):
            yield {"type": "directory", "oid": _sha1(name.encode()), "size": 0, "path": name}
