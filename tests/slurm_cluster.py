"""A real single-node SLURM for the test suite: slurmctld + slurmd from Debian's ``slurm-wlm``.

:func:`start` writes a one-node ``slurm.conf`` (one partition, the default one; every core; ``MpiDefault=pmi2``
so that ``srun -n 2`` with the PyPI MPICH wheel gives one 2-rank world; ``auth/none``; no accounting), starts
both daemons and waits for the node to be idle; :func:`stop` cancels every job and stops them, bounded by
timeouts. :func:`unavailable` says, in one line, why this machine cannot host it (not root, packages absent,
another slurmctld already running...), so the tests that need it skip loudly.

Pitfalls it handles (each cost a failed bring-up once):

- the executor plugin's job step strips ``SLURM_*`` (``SLURM_CONF`` too) before its inner ``srun``, so
  ``slurm.conf`` must be at the default path, ``/etc/slurm/slurm.conf`` (linked there; any previous file
  there is kept aside and put back);
- ``slurmctld`` runs as the ``slurm`` user: its state and log directories and every parent must be
  traversable by it (a ``mktemp`` directory is 0700);
- without accounting ``sacct`` hangs: the profile asks the plugin to poll ``squeue`` instead.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

CONF = Path("/etc/slurm/slurm.conf")
DAEMONS = ("slurmctld", "slurmd")
COMMANDS = ("slurmctld", "slurmd", "sbatch", "srun", "squeue", "sinfo", "scancel")


def unavailable() -> str | None:
    """Why a SLURM cannot be brought up here (None: it can)."""
    if os.name != "posix" or os.geteuid() != 0:
        return "not root: slurmd must run as root (CI runs as root; run the tests as root to include them)"
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    if missing:
        return (f"{', '.join(missing)} not installed: apt-get install slurm-wlm (.ci/run does this when it "
                "can reach the Debian archive)")
    try:
        pwd.getpwnam("slurm")
    except KeyError:
        return "no 'slurm' user (the slurm-wlm package creates it)"
    running = subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True, text=True)
    if running.returncode == 0:
        return "a slurmctld is already running on this machine: not touching it"
    return None


def _conf(base: Path) -> str:
    host = socket.gethostname().split(".")[0]
    mem_mb = max(1024, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20 - 1024)
    return "\n".join([
        "ClusterName=hetvalci",
        f"SlurmctldHost={host}",
        "SlurmUser=slurm",
        "SlurmdUser=root",
        "AuthType=auth/none",
        "CredType=cred/none",
        f"StateSaveLocation={base}/state",
        f"SlurmdSpoolDir={base}/spool",
        f"SlurmctldPidFile={base}/slurmctld.pid",
        f"SlurmdPidFile={base}/slurmd.pid",
        f"SlurmctldLogFile={base}/log/slurmctld.log",
        f"SlurmdLogFile={base}/log/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "MpiDefault=pmi2",
        "ReturnToService=2",
        "MinJobAge=300",
        "KillWait=5",
        "InactiveLimit=0",
        f"NodeName={host} CPUs={os.cpu_count()} RealMemory={mem_mb} State=UNKNOWN",
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def drop_stale_conf() -> str | None:
    """Remove ``/etc/slurm/slurm.conf`` when it is a link this fixture made (to ``.../pytest-of-*/.../slurm<N>/
    slurm.conf``) and no ``slurmctld`` runs: a session that never stopped left it. Left in place it costs every
    Snakemake start 9 s, since the SLURM executor plugin runs ``scontrol show config`` when it loads and
    ``scontrol`` waits that long for the controller the configuration names. Returns what it did."""
    if not CONF.is_symlink():
        return None
    target = Path(os.readlink(CONF))
    ours = target.name == "slurm.conf" and target.parent.name.startswith("slurm") and "pytest-of-" in str(target)
    if not ours or subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True).returncode == 0:
        return None
    CONF.unlink()
    return f"removed {CONF}, a link to {target} left by a test session that never stopped its SLURM"


def _node_state() -> str:
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return ""
    return out.stdout.strip()


def start(base: Path, timeout: float = 90.0) -> Path:
    """Bring SLURM up with its state under ``base``; returns the conf path. Raises RuntimeError with the logs."""
    base = Path(base)
    for d in ("state", "spool", "log"):
        (base / d).mkdir(parents=True, exist_ok=True)
    slurm = pwd.getpwnam("slurm")
    for d in (base / "state", base / "log"):
        os.chown(d, slurm.pw_uid, slurm.pw_gid)
    # every parent must be traversable by the slurm user
    for p in [base, *base.parents]:
        if p == Path("/"):
            break
        mode = p.stat().st_mode
        if not mode & 0o001:
            p.chmod(mode | 0o011)
    conf = base / "slurm.conf"
    conf.write_text(_conf(base))
    CONF.parent.mkdir(parents=True, exist_ok=True)
    drop_stale_conf()
    if CONF.exists() or CONF.is_symlink():
        CONF.rename(base / "slurm.conf.saved")
    CONF.symlink_to(conf)
    for daemon in DAEMONS:
        subprocess.run([daemon, *(["-c"] if daemon == "slurmctld" else [])], check=True, timeout=30,
                       capture_output=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _node_state() == "idle":
            return conf
        time.sleep(1)
    logs = "\n".join(f"--- {f.name}\n{f.read_text()[-2000:]}" for f in sorted((base / "log").glob("*.log")))
    stop(base)
    raise RuntimeError(f"the SLURM node did not become idle within {timeout:.0f} s (state "
                       f"{_node_state()!r}):\n{logs}")


def stop(base: Path) -> None:
    """Cancel every job, stop both daemons (SIGTERM, then SIGKILL) and put ``/etc/slurm/slurm.conf`` back."""
    base = Path(base)
    try:
        subprocess.run(["scancel", "--user", "root"], capture_output=True, timeout=15)
    except (subprocess.TimeoutExpired, FileNotFoundError):
        pass
    for daemon in ("slurmd", "slurmctld"):
        pid_file = base / f"{daemon}.pid"
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            continue
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            end = time.monotonic() + wait
            while time.monotonic() < end:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.2)
            else:
                continue
            break
    if CONF.is_symlink() and Path(os.readlink(CONF)) == base / "slurm.conf":
        CONF.unlink()
        saved = base / "slurm.conf.saved"
        if saved.exists() or saved.is_symlink():
            saved.rename(CONF)
