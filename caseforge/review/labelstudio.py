"""A small client of Label Studio's REST API (projects, task import, tasks with their annotations), over httpx.
The token goes in the Authorization header only: no message, log line or error of this module carries it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import httpx

PROJECT_PREFIX = "caseforge review: "


class ReviewUnreachable(RuntimeError):
    """Label Studio did not answer, or answered with an error: one line, the server and what was asked."""


@dataclass
class LabelStudio:
    url: str
    token: str
    timeout_s: float = 30.0
    page_size: int = 100
    before_page: Callable[[int], None] | None = None      # called before each page of a pull (tests stop the server)

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        if not self.url:
            raise ValueError("no Label Studio server: set [review] url in the settings file")
        if not self.token:
            raise ValueError("no Label Studio API token: set CASEFORGE_REVIEW_TOKEN (or [review] token)")
        self._client = httpx.Client(base_url=self.url, timeout=self.timeout_s, follow_redirects=False,
                                    headers={"Authorization": f"Token {self.token}"})

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "LabelStudio":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs) -> httpx.Response:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ReviewUnreachable(f"Label Studio at {self.url} did not answer {method} {path}: "
                                    f"{type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            detail = " ".join(response.text.split())[:200]
            raise ReviewUnreachable(f"Label Studio at {self.url} refused {method} {path}: HTTP {response.status_code} "
                                    f"{detail}")
        return response

    def whoami(self) -> dict:
        return self._call("GET", "/api/current-user/whoami").json()

    def project(self, benchmark: str) -> dict | None:
        """caseforge's project of `benchmark` on this server, or None."""
        title = PROJECT_PREFIX + benchmark
        found = self._call("GET", "/api/projects", params={"title": title, "page_size": 100}).json()
        results = found.get("results", found) if isinstance(found, dict) else found
        return next((p for p in results if p.get("title") == title), None)

    def create_project(self, benchmark: str, label_config: str, overlap: int) -> dict:
        """A project whose labelling stream hands each task to `overlap` annotators, shows no predictions and no
        annotation history."""
        return self._call("POST", "/api/projects", json={
            "title": PROJECT_PREFIX + benchmark, "label_config": label_config, "maximum_annotations": overlap,
            "show_annotation_history": False, "show_collab_predictions": False, "show_skip_button": True,
            "evaluate_predictions_automatically": False, "sampling": "Sequential sampling"}).json()

    def import_tasks(self, project_id: int, tasks: list[dict]) -> int:
        if not tasks:
            return 0
        return int(self._call("POST", f"/api/projects/{project_id}/import", json=tasks).json().get("task_count", 0))

    def tasks(self, project_id: int) -> Iterator[dict]:
        """Every task of the project with its annotations, a page at a time."""
        page, seen, total = 1, 0, None
        while total is None or seen < total:
            if self.before_page is not None:
                self.before_page(page)
            body = self._call("GET", "/api/tasks", params={"project": project_id, "page": page,
                                                          "page_size": self.page_size, "fields": "all"}).json()
            total = int(body.get("total", 0))
            batch = body.get("tasks", [])
            if not batch:
                break
            yield from batch
            seen += len(batch)
            page += 1
