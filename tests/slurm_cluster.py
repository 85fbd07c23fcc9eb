"""A real SLURM for the test suite: an emulated cluster of several nodes on this one machine.

Debian's ``slurmd`` is built with ``--enable-multiple-slurmd``, so one host can run several nodes. :func:`start`
writes a ``slurm.conf`` with nodes ``n1 .. nN`` (each its own ``slurmd -N nX`` on its own port, ``%n`` in its
spool, pid and log paths) and two partitions standing for two node types: ``cpu`` = ``n1 .. n(N-1)`` (the
default) and ``big`` = ``nN``. Each ``slurmd`` starts in its own UTS namespace whose hostname is its node's name
(``unshare --uts``), so tasks on different nodes see different hosts: MPI ranks on two nodes talk over TCP, not
shared memory, and every record's placement names the node it ran on. It waits until every node is idle;
:func:`stop` cancels every job and stops the daemons, bounded by timeouts; :func:`kill_node` kills every process
of one node - its ``slurmd``, job steps and ranks - and marks it down (a node lost mid-study). :func:`unavailable` says, in one line, why this machine cannot host it (not
root, packages absent, another slurmctld already running...), so the tests that need it skip loudly.

Every node claims the machine's cores (``SlurmdParameters=config_overrides``) and a share of its memory, so
jobs on different nodes share the real cores: timings under it are a cluster's plumbing, not its speed.
``MpiDefault=pmi2`` makes ``srun -n 2`` with the PyPI MPICH wheel one 2-rank world (``none`` gives two size-1
worlds); auth is ``none`` and there is no accounting.

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
#: the name every configuration :func:`start` writes carries (how a stale link of ours is told apart)
CLUSTER = "hetvalci"
COMMANDS = ("slurmctld", "slurmd", "sbatch", "srun", "squeue", "sinfo", "scancel", "scontrol", "unshare")


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
    if controller_running():
        return "a slurmctld is already running on this machine: not touching it"
    return None


#: the emulated cluster's nodes: ``cpu`` = every node but the last (the default partition), ``big`` = the last
NODES = 3
#: each node's slurmd listens on PORT_BASE + its number
PORT_BASE = 17000


def node_names(nodes: int = NODES) -> list[str]:
    return [f"n{i}" for i in range(1, nodes + 1)]


def partitions(nodes: int = NODES) -> dict[str, list[str]]:
    """Partition -> its nodes: two node types."""
    names = node_names(nodes)
    return {"cpu": names[:-1], "big": names[-1:]}


def _conf(base: Path, nodes: int) -> str:
    host = socket.gethostname().split(".")[0]
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    mem_mb = max(1024, (total_mb - 2048) // nodes)  # the nodes share the machine's memory
    lines = [
        f"ClusterName={CLUSTER}",
        f"SlurmctldHost={host}",
        "SlurmUser=slurm",
        "SlurmdUser=root",
        "AuthType=auth/none",
        "CredType=cred/none",
        f"StateSaveLocation={base}/state",
        f"SlurmdSpoolDir={base}/spool-%n",
        f"SlurmctldPidFile={base}/slurmctld.pid",
        f"SlurmdPidFile={base}/slurmd-%n.pid",
        f"SlurmctldLogFile={base}/log/slurmctld.log",
        f"SlurmdLogFile={base}/log/slurmd-%n.log",
        "SlurmdParameters=config_overrides",
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
        "SlurmdTimeout=30",
        # a job on a lost node fails (NODE_FAIL) rather than being requeued two minutes later: the workflow's next
        # invocation redoes what it lost, which is what the tests check
        "JobRequeue=0",
    ]
    for i, name in enumerate(node_names(nodes), start=1):
        lines.append(f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={PORT_BASE + i} "
                     f"CPUs={os.cpu_count()} RealMemory={mem_mb} State=UNKNOWN")
    for k, (part, members) in enumerate(partitions(nodes).items()):
        # LLN: a job goes to the least loaded node, so one-core jobs (Dask workers) spread over the nodes
        lines.append(f"PartitionName={part} Nodes={','.join(members)}{' Default=YES' if k == 0 else ''} "
                     "LLN=YES MaxTime=INFINITE State=UP")
    return "\n".join([*lines, ""])


def controller_running() -> bool:
    """Whether a ``slurmctld`` runs on this machine."""
    return subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True).returncode == 0


def drop_stale_conf(conf: Path = CONF) -> str | None:
    """Remove ``conf`` (``/etc/slurm/slurm.conf``) when it is a link this module made - to a file that is gone
    or that names the cluster :func:`start` writes (``ClusterName=hetvalci``), wherever the session's
    temporary directory was - and no ``slurmctld`` runs: a session that never stopped left it. Left in place it
    costs every Snakemake start 9 s, since the SLURM executor plugin runs ``scontrol show config`` when it loads
    and ``scontrol`` waits that long for the controller the configuration names. Returns what it did."""
    if not conf.is_symlink():
        return None
    target = Path(os.readlink(conf))
    try:
        ours = f"ClusterName={CLUSTER}" in target.read_text().splitlines()
    except OSError:
        ours = target.name == "slurm.conf"  # its session's directory is gone
    if not ours or controller_running():
        return None
    conf.unlink()
    return f"removed {conf}, a link to {target} left by a test session that never stopped its SLURM"


def node_states() -> dict[str, str]:
    """Each node's state as ``sinfo`` reports it (empty when the controller does not answer)."""
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return {}
    return dict(line.split()[:2] for line in out.stdout.splitlines() if len(line.split()) >= 2)


def jobs_on(node: str) -> list[str]:
    """The running jobs on ``node`` (``<id> <name>`` each)."""
    try:
        out = subprocess.run(["squeue", "-h", "-t", "R", "-w", node, "-o", "%i %j"], capture_output=True, text=True,
                             timeout=10)
    except subprocess.TimeoutExpired:
        return []
    return [ln for ln in out.stdout.splitlines() if ln.strip()]


def _start_slurmd(base: Path, name: str) -> None:
    """One node's slurmd, in a UTS namespace of its own whose hostname is the node's name."""
    (base / f"spool-{name}").mkdir(parents=True, exist_ok=True)
    subprocess.run(["unshare", "--uts", "sh", "-c", f"hostname {name} && exec slurmd -N {name}"],
                   check=True, timeout=30, capture_output=True)


def start(base: Path, nodes: int = NODES, timeout: float = 90.0) -> Path:
    """Bring the cluster up with its state under ``base``; returns the conf path. Raises RuntimeError with the
    logs when a node does not become idle in time."""
    base = Path(base)
    for d in ("state", "log"):
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
    conf.write_text(_conf(base, nodes))
    CONF.parent.mkdir(parents=True, exist_ok=True)
    drop_stale_conf()
    if CONF.exists() or CONF.is_symlink():
        CONF.rename(base / "slurm.conf.saved")
    CONF.symlink_to(conf)
    subprocess.run(["slurmctld", "-c"], check=True, timeout=30, capture_output=True)
    for name in node_names(nodes):
        _start_slurmd(base, name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = node_states()
        if len(states) == nodes and set(states.values()) == {"idle"}:
            return conf
        time.sleep(1)
    logs = "\n".join(f"--- {f.name}\n{f.read_text()[-2000:]}" for f in sorted((base / "log").glob("*.log")))
    stop(base)
    raise RuntimeError(f"the SLURM nodes did not all become idle within {timeout:.0f} s ({node_states()!r}):\n{logs}")


def _kill(pid_files: list[Path]) -> None:
    """SIGTERM the daemons the pid files name, all at once (each takes 1-2 s to end), then SIGKILL any still
    there."""
    pids = []
    for pid_file in pid_files:
        try:
            pids.append(int(pid_file.read_text().strip()))
        except (OSError, ValueError):
            pass
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + wait
        while pids and time.monotonic() < end:
            pids = [pid for pid in pids if _exists(pid)]
            if pids:
                time.sleep(0.1)
        if not pids:
            return


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def node_processes(base: Path, name: str) -> list[int]:
    """The processes of a node: every process in its ``slurmd``'s UTS namespace (the daemon, job steps, ranks)."""
    try:
        pid = int((Path(base) / f"slurmd-{name}.pid").read_text().strip())
        ns = os.readlink(f"/proc/{pid}/ns/uts")
    except (OSError, ValueError):
        return []
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.readlink(entry / "ns" / "uts") == ns:
                out.append(int(entry.name))
        except OSError:
            continue
    return out


def kill_node(base: Path, name: str) -> int:
    """A node lost: every process of the node (:func:`node_processes`) killed outright (SIGKILL), and the node
    marked down, as the controller marks a node that stopped answering (without the ``SlurmdTimeout`` wait).
    Returns how many processes were killed."""
    killed = 0
    for pid in node_processes(base, name):
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            continue
    subprocess.run(["scontrol", "update", f"nodename={name}", "state=down", "reason=node lost (test)"],
                   capture_output=True, timeout=15)
    return killed


def restart_node(base: Path, name: str, timeout: float = 60.0) -> None:
    """Start a lost node's ``slurmd`` again and return it to service."""
    _start_slurmd(Path(base), name)
    subprocess.run(["scontrol", "update", f"nodename={name}", "state=resume"], capture_output=True, timeout=15)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and node_states().get(name) not in ("idle", "mixed", "allocated"):
        time.sleep(1)


def stop(base: Path) -> None:
    """Cancel every job, stop the daemons (SIGTERM, then SIGKILL) and put ``/etc/slurm/slurm.conf`` back."""
    base = Path(base)
    try:
        subprocess.run(["scancel", "--user", "root"], capture_output=True, timeout=15)
    except (subprocess.TimeoutExpired, FileNotFoundError):
        pass
    _kill([*sorted(base.glob("slurmd-*.pid")), base / "slurmctld.pid"])
    if CONF.is_symlink() and Path(os.readlink(CONF)) == base / "slurm.conf":
        CONF.unlink()
        saved = base / "slurm.conf.saved"
        if saved.exists() or saved.is_symlink():
            saved.rename(CONF)
