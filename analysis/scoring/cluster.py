"""Where the validation's Dask graph runs: a scheduler's address, a SLURMCluster, or a local cluster.

:class:`DaskSettings` is the config's ``validate`` section; :func:`dask_client` opens the client on the cluster
it chooses (and closes the cluster afterwards), :func:`probe_scheduler` makes an unreachable scheduler one line
within the connect timeout. Used by :mod:`analysis.scoring.validate`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


def scheduler_address(configured: str | None) -> str | None:
    """The scheduler to use: the configured address, else ``$DASK_SCHEDULER_ADDRESS``, else None (local)."""
    return configured or os.environ.get("DASK_SCHEDULER_ADDRESS") or None


@dataclass(frozen=True)
class DaskSettings:
    """Where the validation's Dask graph runs (config ``validate``), in this order of precedence:

    1. ``address`` (or ``$DASK_SCHEDULER_ADDRESS``): a running scheduler, e.g. one started with
       ``dask scheduler`` beside ``dask worker`` processes on the cluster's nodes;
    2. ``cluster = "slurm"``: a ``dask_jobqueue.SLURMCluster`` whose ``workers`` are SLURM jobs of one
       core each, on ``partition`` / ``account`` (the study platform's ``slurm`` entry);
    3. else a ``LocalCluster`` of ``workers`` processes with one thread each.

    ``connect_timeout`` bounds the wait for the scheduler and, for SLURM, for the first worker to start.
    """

    address: str | None = None
    cluster: str = "local"
    workers: int = 2
    worker_memory: str = "4GiB"
    worker_walltime: str = "00:30:00"
    partition: str | None = None
    account: str | None = None
    connect_timeout: float = 30.0

    def local_processes(self, records: int | None = None) -> bool:
        """Whether the cluster is worker processes on this host that this process starts (every worker, a
        replacement too, sees this host's files)."""
        return (not scheduler_address(self.address) and self.cluster != "slurm"
                and not (records is not None and records < THREADS_BELOW_RECORDS))

    def describe(self, records: int | None = None) -> str:
        addr = scheduler_address(self.address)
        if addr:
            return f"the Dask scheduler at {addr}"
        if self.cluster == "slurm":
            return f"a SLURMCluster of {self.workers} worker job(s)"
        if records is not None and records < THREADS_BELOW_RECORDS:
            return f"a local cluster of {self.workers} worker thread(s) in this process, the data being small"
        return f"a local cluster of {self.workers} worker process(es)"


class ClusterStartError(RuntimeError):
    """The Dask cluster the settings ask for cannot be started (one-line message)."""


class _SubmitFailures(logging.Filter):
    """Keeps the background tracebacks of failed worker-job submissions off the terminal, remembering
    the scheduler's own error line (``sbatch: error: ...``) for the one-line message."""

    def __init__(self, sink: list[str]):
        super().__init__()
        self.sink = sink

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        text = str(exc) if exc is not None else record.getMessage()
        if "Command exited with non-zero exit code" not in text and "Task exception was never retrieved" not in text:
            return True
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "error" in ln.lower()]
        if lines and lines[0] not in self.sink:
            self.sink.append(lines[0])
        return False


#: Below this many records a local cluster's workers are threads of this process: starting worker processes (each
#: importing pandas, pyarrow and hetval) costs more CPU than the work, for no gain in time (on 2 cores: 78 records
#: validate in the same time either way with a third less CPU; at 377 processes are 0.7 s faster).
THREADS_BELOW_RECORDS = 200


@contextlib.contextmanager
def dask_client(settings: DaskSettings, records: int | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` on the cluster ``settings`` chooses; the cluster is closed afterwards. A local
    cluster for fewer ``records`` than :data:`THREADS_BELOW_RECORDS` runs its workers as threads of this process.

    A scheduler that cannot be reached within ``connect_timeout``, a local cluster that cannot start, a SLURM
    cluster whose first worker does not start in time, or one without dask-jobqueue, raises
    :class:`ClusterStartError`; an error of the job itself (a full disk, say) passes through as it is.
    """
    from distributed import Client, LocalCluster

    def unreachable(exc: BaseException) -> ClusterStartError:
        return ClusterStartError(f"cannot reach {settings.describe(records)} within {settings.connect_timeout:g} s "
                                 f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'})")

    addr = scheduler_address(settings.address)
    if addr:
        try:  # only reaching the cluster becomes a cluster error: what the job does with it is its own
            probe_scheduler(addr, settings.connect_timeout)
            client = Client(addr, timeout=settings.connect_timeout)
        except (OSError, TimeoutError) as exc:
            raise unreachable(exc) from None
        with client:
            yield client
        return
    if settings.cluster == "slurm":
        try:
            from dask_jobqueue import SLURMCluster
        except ImportError:
            raise ClusterStartError("validate.cluster is 'slurm' but dask-jobqueue is not installed: "
                                    "pip install -e '.[slurm]'") from None
        import sys

        failures: list[str] = []
        quiet = _SubmitFailures(failures)
        loggers = [logging.getLogger(n) for n in ("tornado.application", "asyncio", "distributed.deploy.spec")]
        for lg in loggers:
            lg.addFilter(quiet)
        cluster = SLURMCluster(cores=1, processes=1, memory=settings.worker_memory, walltime=settings.worker_walltime,
                               queue=settings.partition, account=settings.account, python=sys.executable,
                               worker_extra_args=["--nthreads", "1"])
        try:
            cluster.scale(jobs=settings.workers)
            with Client(cluster, timeout=settings.connect_timeout) as client:
                try:
                    client.wait_for_workers(1, timeout=settings.connect_timeout)
                except TimeoutError:
                    why = f"; the worker job submission failed: {failures[0]}" if failures else (
                        f" (are its jobs pending? squeue -u $USER; partition {settings.partition or 'default'})")
                    raise ClusterStartError(f"no SLURMCluster worker started within "
                                            f"{settings.connect_timeout:g} s{why}") from None
                yield client
                print(f"validate: the SLURMCluster's workers ran on {', '.join(worker_hosts(client)) or 'no node'}",
                      flush=True)
        finally:
            try:
                cluster.close(timeout=settings.connect_timeout)
            except Exception:  # noqa: BLE001 - jobs that never started leave the cluster in a state it asserts on
                # marked closed, or distributed's exit hook retries for 10 s more; a worker job that did start
                # ends by itself once this process (its scheduler) is gone
                from distributed.core import Status

                cluster.status = Status.closed
            for lg in loggers:
                lg.removeFilter(quiet)
        return
    try:
        cluster = LocalCluster(n_workers=settings.workers, threads_per_worker=1,
                               processes=settings.local_processes(records), dashboard_address=None)
    except (OSError, TimeoutError) as exc:
        raise unreachable(exc) from None
    with cluster:
        try:
            client = Client(cluster, timeout=settings.connect_timeout)
        except (OSError, TimeoutError) as exc:
            raise unreachable(exc) from None
        with client:
            yield client


def worker_hosts(client: Any) -> list[str]:
    """The host names the cluster's workers run on (each worker asked; one that does not answer is left out)."""
    import socket

    try:
        return sorted(set(client.run(socket.gethostname, on_error="ignore").values()))
    except Exception:  # noqa: BLE001 - a worker lost at the end must not fail a finished validation
        return []


def probe_scheduler(address: str, timeout: float) -> None:
    """Ask the scheduler at ``address`` who it is, within ``timeout`` seconds in all: a host that refuses, does
    not exist, or accepts the connection and then says nothing (where ``Client`` alone waits forever) raises
    ``TimeoutError`` / ``OSError`` naming what did not happen."""
    import asyncio

    from distributed.comm import connect

    async def ask() -> None:
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            await comm.read()
        finally:
            comm.abort()

    try:
        asyncio.run(asyncio.wait_for(ask(), timeout))
    except TimeoutError:
        raise TimeoutError(f"the scheduler at {address} did not answer within {timeout:g} s") from None
