"""Whether the MPI library under mpi4py takes device buffers (the ``gpu-aware`` marshaling design).

A device pointer handed to an MPI built without CUDA support is read as host memory: a crash or silent
garbage. The library is asked, never assumed: Open MPI's ``MPIX_Query_cuda_support`` and MPICH's
``MPIX_GPU_query_support`` (both C extensions, looked up in the library mpi4py loaded); ``ompi_info``'s
``mpi_built_with_cuda_support`` where the call is absent. ``HETVAL_GPU_AWARE_MPI=1`` (or ``0``) overrides, for
a library that cannot say.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

#: MPICH's MPIX_GPU_SUPPORT_CUDA
_MPICH_CUDA = 0


def device_buffers_supported() -> tuple[bool, str]:
    """``(supported, why)``: whether MPI calls may take CuPy arrays' device memory, and what said so."""
    forced = os.environ.get("HETVAL_GPU_AWARE_MPI")
    if forced in ("0", "1"):
        return forced == "1", f"HETVAL_GPU_AWARE_MPI={forced}"
    from mpi4py import MPI

    library = MPI.Get_library_version().splitlines()[0].strip()
    lib = ctypes.CDLL(None)  # mpi4py loaded the MPI library into this process
    query = getattr(lib, "MPIX_Query_cuda_support", None)
    if query is not None:
        query.restype = ctypes.c_int
        return bool(query()), f"{library}: MPIX_Query_cuda_support() = {int(query())}"
    gpu_query = getattr(lib, "MPIX_GPU_query_support", None)
    if gpu_query is not None:
        flag = ctypes.c_int(0)
        gpu_query.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        if gpu_query(_MPICH_CUDA, ctypes.byref(flag)) == 0:
            return bool(flag.value), f"{library}: MPIX_GPU_query_support(CUDA) = {flag.value}"
    if "Open MPI" in library and shutil.which("ompi_info"):
        try:
            out = subprocess.run(["ompi_info", "--parsable", "--all"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        if "mpi_built_with_cuda_support:value:true" in out:
            return True, f"{library}: ompi_info says it was built with CUDA support"
    return False, f"{library} says nothing of CUDA support (set HETVAL_GPU_AWARE_MPI=1 if it has it)"
