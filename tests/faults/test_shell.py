"""No config string reaches a shell as code: every string key that ends up on a command line is either refused by
the check (naming the key) or reaches every command Snakemake would run shell-quoted, its metacharacters inert.

The commands are the ones ``snakemake -n -p`` prints, under the default profile and the SLURM profile; a command
the guard runs through a shell of its own (one word after ``--``) is checked again as that shell would read it.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.conftest import REPO, cli
from tests.workflow.tiny import snakemake

#: what a POSIX shell gives a meaning to: command substitution (both forms), separators, pipes, redirection,
#: globbing, quoting and a second line
METACHARACTERS = ["$(touch {mark})", "`touch {mark}`", "; touch {mark}",
                  "| touch {mark}", "&& touch {mark}", "> {mark}", "' {mark} '", '" {mark} "',
                  "*", "\ntouch {mark}"]

#: keys the check refuses whatever shell syntax they carry: they become words of a command or a job script
REFUSED = {
    "launcher": "launcher: 'mpiexec{payload}'",
    "study": "study: 'tiny{payload}'",
    "platforms[0].name": "platforms: [{{name: 'p{payload}', host: {{backend: numpy, cores: [0]}}, "
                         "accel: {{backend: numba, cores: [1]}}}}]",
    "platforms[0].slurm.partition": "platforms: [{{name: p, host: {{backend: numpy, cores: [0]}}, accel: "
                                    "{{backend: numba, cores: [1]}}, slurm: {{partition: 'c{payload}'}}}}]",
    "platforms[0].slurm.account": "platforms: [{{name: p, host: {{backend: numpy, cores: [0]}}, accel: "
                                  "{{backend: numba, cores: [1]}}, slurm: {{account: 'a{payload}'}}}}]",
    "platforms[0].slurm.qos": "platforms: [{{name: p, host: {{backend: numpy, cores: [0]}}, accel: "
                              "{{backend: numba, cores: [1]}}, slurm: {{qos: 'q{payload}'}}}}]",
    "platforms[0].slurm.constraint": "platforms: [{{name: p, host: {{backend: numpy, cores: [0]}}, accel: "
                                     "{{backend: numba, cores: [1]}}, slurm: {{constraint: 'k{payload}'}}}}]",
    "platforms[0].slurm.extra": "platforms: [{{name: p, host: {{backend: numpy, cores: [0]}}, accel: "
                                "{{backend: numba, cores: [1]}}, slurm: {{extra: '--exclusive{payload}'}}}}]",
    "validate.worker_memory": "validate: {{worker_memory: '4GiB{payload}'}}",
    "validate.worker_walltime": "validate: {{worker_walltime: '01:00:00{payload}'}}",
    "validate.scheduler_address": "validate: {{scheduler_address: 'tcp://h:8786{payload}'}}",
}

#: free text the check lets through: it must reach every command quoted
QUOTED = {
    "platforms[0].description": "platforms: [{{name: p, description: 'd{payload}', host: {{backend: numpy, "
                                "cores: [0]}}, accel: {{backend: numba, cores: [1]}}}}]",
    "energy.rapl_root": "energy: {{rapl_root: '/sys/class/powercap{payload}'}}",
    "energy.trace.path": "energy: {{trace: {{path: '{trace}'}}}}",
    "history.path": "history: {{path: 'hist{payload}'}}",
    "report.title": "report: {{title: 'T{payload}'}}",
}


def yaml_text(text: str) -> str:
    """``text`` inside a single-quoted YAML scalar (a quote doubled; a newline as YAML's own escape cannot be
    written there, so the study file takes the double-quoted form's \\n)."""
    return text.replace("'", "''")


def literal_flags(command: str) -> list[bool]:
    """For each character of ``command``, whether a POSIX shell takes it literally (inside single quotes, or
    escaped by a backslash outside them); inside double quotes ``$`` and backticks still expand."""
    flags, state, escaped = [], None, False
    for c in command:
        if escaped:
            flags.append(True)
            escaped = False
        elif state == "'":
            flags.append(c != "'")
            if c == "'":
                state = None
        elif c == "\\":
            flags.append(True)
            escaped = True
        elif state == '"':
            flags.append(c not in '$`"')
            if c == '"':
                state = None
        else:
            flags.append(False)
            if c in "'\"":
                state = c
    return flags


def exposed(command: str, pieces: list[str]) -> list[str]:
    """Where one of ``pieces`` (shell syntax around a mark) would act in ``command``, and in a one-word command the
    guard hands its own shell: each occurrence with a character a shell reads as syntax. A piece holding a quote
    is left to the others: a quote that breaks the quoting exposes the pieces after it."""
    found = []
    flags = literal_flags(command)
    for piece in (p for p in pieces if "'" not in p and '"' not in p):
        start = command.find(piece)
        while start >= 0:
            if not all(flags[start:start + len(piece)]):
                found.append(command[max(0, start - 40):start + len(piece)])
            start = command.find(piece, start + 1)
    try:
        words = shlex.split(command)
    except ValueError:
        return [*found, f"does not parse: {command[:200]}"]
    for i, w in enumerate(words[:-1]):
        if w == "--" and "sims.guard" in command and " " in words[i + 1]:
            found += exposed(words[i + 1], pieces)  # the guard runs one word through a shell of its own
    return found


def shell_commands(dry_run: str) -> list[str]:
    return [line.split("Shell command: ", 1)[1] for line in dry_run.splitlines() if line.startswith("Shell command: ")]


@pytest.mark.parametrize("key", sorted(REFUSED))
@pytest.mark.parametrize("payload", METACHARACTERS[:6])
def test_a_key_that_becomes_a_command_word_refuses_shell_syntax(tmp_path, key, payload):
    mark = tmp_path / "MARK"
    text = yaml_text(" " + payload.format(mark=mark))
    (tmp_path / "bad.yaml").write_text("cases: {sa: {}}\n" + REFUSED[key].format(payload=text) + "\n")
    out = cli("check-config", "--configfile", str(REPO / "config" / "studies" / "tiny.yaml"), "--configfile",
              "bad.yaml", cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert f"{key.split('[')[0]}" in out.stderr.split("config error: ", 1)[-1], out.stderr
    assert not mark.exists()


@pytest.mark.parametrize("profile", ["default", "slurm"])
def test_free_text_reaches_every_command_quoted(tmp_path, env, profile):
    """Every free-text key at once carries every metacharacter; no printed command exposes one."""
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="the [slurm] extra is not installed")
    mark = "HETVALMARK"
    payload = "".join(p.format(mark=mark) for p in METACHARACTERS if "\n" not in p)
    trace = tmp_path / f"t{payload}.csv"
    trace.write_text("timestamp,channel,watts\n")
    study = tmp_path / "hostile.yaml"
    lines = [QUOTED[k].format(payload=yaml_text(payload), trace=yaml_text(str(trace))) for k in QUOTED]
    # one platforms list: the description's
    study.write_text("\n".join(lines) + "\nbatch_runs: 1\n")
    args = ["--configfile", str(REPO / "config" / "studies" / "tiny.yaml"), str(study), "-n", "-p"]
    if profile == "slurm":
        args = ["--workflow-profile", str(REPO / "workflow" / "profiles" / "slurm"), *args]
    else:
        args = [*args, "-c1"]
    out = snakemake(args, env, tmp_path / "work")
    assert out.returncode == 0, out.stderr[-3000:]
    commands = shell_commands(out.stdout)
    assert commands and any(mark in c for c in commands), "the hostile values reach no command: nothing checked"
    pieces = [p.format(mark=mark) for p in METACHARACTERS if "\n" not in p and "{mark}" in p]
    bad = [e for c in commands for e in exposed(c, pieces)]
    assert not bad, bad[:3]
    assert not list(Path(tmp_path).rglob(mark))


def test_the_checker_sees_an_unquoted_payload():
    """The scan itself: a payload outside quotes, in double quotes, or in the guard's own shell is seen."""
    pieces = ["$(touch HETVALMARK)", "; touch HETVALMARK"]
    assert exposed("echo x$(touch HETVALMARK)", pieces)
    assert exposed('echo "x$(touch HETVALMARK)"', pieces)
    assert exposed("echo 'x'; touch HETVALMARK", pieces)
    assert not exposed("echo 'x$(touch HETVALMARK); touch HETVALMARK'", pieces)
    inner = shlex.quote("mpiexec -n 2 python x$(touch HETVALMARK)")
    assert exposed(f"python -m sims.guard --record r -- {inner}", pieces)
    inner = shlex.quote("mpiexec -n 2 python " + shlex.quote("x$(touch HETVALMARK)"))
    assert not exposed(f"python -m sims.guard --record r -- {inner}", pieces)
