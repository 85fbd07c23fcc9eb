"""Retry requests and failed attempts: how a failed or quarantined run is redone, and when it is not.

The workflow's run rule takes ``results/retry/<study>/<run_id>.json`` as an input when it exists, so a
fresh request (a newer input) makes the next invocation redo exactly that run. :func:`note_attempt`
counts each failed (or quarantined) attempt of a run once - named by its record's start time, or the
quarantined file's checksum - in ``<run_id>.attempts.json`` beside the request (never an input): gathering
the same failed record again asks for nothing, and a run that failed the same way ``max_attempts`` times
in a row gets no new request, so it is not redone until its spec changes (a new run id), the code
changes, or the user asks (:func:`revive`, config ``retry_failed``). The request file itself is never
removed: a rule input that disappears would count as a changed input and redo the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sims.atomic import atomic_write_text


def read_json(path: Path) -> Any:
    """A JSON file's content, or None when it is missing or does not read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def request_retry(retry_dir: Path, study: str, run_id: str, why: str) -> Path:
    """Ask the workflow to redo ``run_id`` on its next invocation (a fresh file: a newer input)."""
    path = retry_dir / study / f"{run_id}.json"
    atomic_write_text(path, json.dumps({"run_id": run_id, "why": why}) + "\n")
    return path


def attempts_path(retry_dir: str | Path, study: str, run_id: str) -> Path:
    """Where the failed attempts of a run are counted (never an input of a rule)."""
    return Path(retry_dir) / study / f"{run_id}.attempts.json"


def note_attempt(retry_dir: Path, study: str, run_id: str, token: str, why: str, max_attempts: int,
                 git_sha: str | None) -> str:
    """Count one failed (or quarantined) attempt of a run and decide: ``"retry"`` (a retry request is written:
    the next invocation redoes the run), ``"given-up"`` (the run failed the same way ``max_attempts`` times
    in a row: no request, the run is not redone until its spec or the code changes or the user asks), or
    ``"seen"`` (this attempt, named by ``token``, was counted before: nothing changes, so gathering the
    same failed record again never asks for another retry)."""
    path = attempts_path(retry_dir, study, run_id)
    state = read_json(path)
    if not (isinstance(state, dict) and isinstance(state.get("attempts"), list)):
        state = {"run_id": run_id, "attempts": []}
    if any(a.get("token") == token for a in state["attempts"] if isinstance(a, dict)):
        return "given-up" if state.get("given_up") else "seen"
    state["attempts"].append({"token": token, "why": why, "git_sha": git_sha})
    same = 0
    for a in reversed(state["attempts"]):
        if not (isinstance(a, dict) and a.get("why") == why):
            break
        same += 1
    state["given_up"] = same >= max(1, int(max_attempts))
    atomic_write_text(path, json.dumps(state, indent=1) + "\n")
    if state["given_up"]:
        return "given-up"
    request_retry(retry_dir, study, run_id, why)
    return "retry"


def given_up(retry_dir: str | Path, study: str) -> list[dict[str, Any]]:
    """The study's runs that are not retried any more: run id, attempts, the last reason and its code version."""
    out = []
    for path in sorted((Path(retry_dir) / study).glob("*.attempts.json")):
        state = read_json(path)
        if isinstance(state, dict) and state.get("given_up") and state.get("attempts"):
            last = state["attempts"][-1]
            out.append({"run_id": state.get("run_id", path.name.split(".")[0]), "attempts": len(state["attempts"]),
                        "why": last.get("why"), "git_sha": last.get("git_sha")})
    return out


def revive(retry_dir: str | Path, study: str, everything: bool = False, code_version: str | None = None) -> list[str]:
    """Retry given-up runs again: every one (``everything``), else those whose last attempt ran another
    version of the code than ``code_version``. Their counts restart and a retry request is written for each.
    Returns the run ids revived."""
    out = []
    for item in given_up(retry_dir, study):
        changed = code_version is not None and item.get("git_sha") not in (None, code_version)
        if everything or changed:
            rid = item["run_id"]
            attempts_path(retry_dir, study, rid).unlink(missing_ok=True)
            request_retry(Path(retry_dir), study, rid, f"retried after {item['attempts']} failed attempts: "
                          + ("the code changed" if changed and not everything else "asked for"))
            out.append(rid)
    return out
