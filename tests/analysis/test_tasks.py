"""analysis.scoring.tasks.for_arrays: in a process started as Distributed's nanny starts its workers (MALLOC_TRIM_THRESHOLD_
set), large temporaries stop costing a fresh zero-filled mapping each once the task called for_arrays()."""

import os
import socket
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from analysis.scoring import tasks as malloc

    def faults(rounds=40, n=3 << 16):   # 1.5 MiB arrays (below a huge page: 384 small pages each), written, freed
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(rounds):
            a = np.ones(n)
            del a
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    faults(2)
    plain = faults()
    took = malloc.for_arrays()
    faults(2)
    after = faults()
    print(took, plain, after, malloc.for_arrays())
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_for_arrays_stops_a_page_fault_storm_in_a_nanny_style_worker():
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    took, plain, after, again = out.stdout.split()
    assert took == "True" and again == "True"
    assert int(plain) > 40 * 100  # every array a fresh mapping, faulted in again (hundreds of faults each)
    assert int(after) < 0.05 * int(plain)  # the freed heap memory is reused


KEEP = textwrap.dedent("""
    import resource, sys, threading
    from analysis.scoring import tasks
    took = tasks.keep_memory() if sys.argv[1] == "kept" else None   # as the CLI's validate: before any thread
    import numpy as np
    import pyarrow as pa

    def faults(rounds=20, n=6 << 20):   # 48 MiB arrays: above glibc's largest mmap threshold, so each a mapping
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(rounds):
            a = np.ones(n)
            del a
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    def in_thread():
        got = []
        t = threading.Thread(target=lambda: got.append(faults()))
        t.start()
        t.join()
        return got[0]

    faults(2)
    in_thread()
    print(took, faults(), in_thread(), pa.default_memory_pool().backend_name)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_memory_reuses_what_the_validating_process_frees_in_every_thread():
    def run(mode: str) -> list[str]:
        return subprocess.run([sys.executable, "-c", KEEP, mode], capture_output=True, text=True,
                              check=True).stdout.split()

    _, plain, plain_thread, plain_pool = run("plain")
    took, kept, kept_thread, pool = run("kept")
    assert took == "True" and pool == "system" and plain_pool != "system"
    assert int(plain) >= 20 * 20 and int(plain_thread) >= 20 * 20  # every array a fresh mapping, faulted in
    assert int(kept) < 0.05 * int(plain) and int(kept_thread) < 0.05 * int(plain_thread)  # the heap's reused


def test_results_go_through_a_directory_the_worker_sees_and_through_the_comm_otherwise(tmp_path, monkeypatch):
    """A result handed over is the same object graph back, and its file is gone once received; a worker that does
    not see the directory (another host) returns the result itself; a task's input file stays for a rerun."""
    import pandas as pd

    from analysis.scoring import tasks

    monkeypatch.setattr(tasks.tempfile, "tempdir", str(tmp_path))
    frame = pd.DataFrame({"t": [1.0, 2.0], "reps": [[1.0, 1.1], None]})
    with tasks.HandOff() as handoff:
        handed = tasks.hand_over({"frame": frame}, str(handoff.path))
        assert isinstance(handed, tasks.Handed) and os.path.exists(handed.path)
        assert not list(handoff.path.glob("*.part"))
        pd.testing.assert_frame_equal(tasks.received(handed)["frame"], frame)
        assert not os.path.exists(handed.path)
        assert tasks.hand_over(frame, str(tmp_path / "elsewhere")) is frame  # not on this host: the comm
        assert tasks.received(frame) is frame
        kept = tasks.hand_over([1, 2], str(handoff.path))
        assert tasks.opened(kept) == [1, 2] and tasks.opened(kept) == [1, 2]  # read again by a rerun
        tasks.discard(kept)  # its task's result is in
        assert not os.path.exists(kept.path)

        def full(*args, **kwargs):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(tasks.pickle, "dump", full)  # a full disk: through the comm, nothing left behind
        assert tasks.hand_over(frame, str(handoff.path)) is frame
        assert not list(handoff.path.iterdir())
    assert not handoff.path.exists()  # removed with what was left in it


def test_a_killed_validation_s_hand_off_directory_is_removed_by_the_next(tmp_path, monkeypatch):
    from analysis.scoring import tasks

    monkeypatch.setattr(tasks.tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    host = socket.gethostname()
    stale = tmp_path / f"hetval-handoff-{host}-{dead}-abc"
    stale.mkdir()
    (stale / "x.pickle").write_bytes(b"0" * 100)
    live = tmp_path / f"hetval-handoff-{host}-{os.getpid()}-def"  # a validation still running here: kept
    elsewhere = tmp_path / f"hetval-handoff-{host}x-{dead}-ghi"  # another host's, on a shared file system: kept
    longer = tmp_path / f"hetval-handoff-{host}-2-{dead}-jkl"  # a host named like this one and "-2": kept
    for d in (live, elsewhere, longer):
        d.mkdir()
    with tasks.HandOff() as handoff:
        assert handoff.removed_stale == [str(stale)]
        assert handoff.path.name.startswith(f"hetval-handoff-{host}-{os.getpid()}-")
    assert not stale.exists() and live.exists() and elsewhere.exists() and longer.exists()
