"""The NVIDIA total-energy counter of one GPU (``nvmlDeviceGetTotalEnergyConsumption``, mJ since driver load).

The module ``pynvml`` (PyPI ``nvidia-ml-py``) is imported only when an NVML
meter is opened. The rank that drives a GPU opens the meter for that GPU, so
GPU energy is attributed to that rank's processor and read exactly once.
"""

from __future__ import annotations

from typing import Any

from sims.meters.base import Meter, MeterUnavailable

#: The counter is refreshed with the board's power sample; NVIDIA does not
#: document the period. 0.1 s is a conservative bound for recent boards
#: (sampling is 20-100 ms); ``energy.update_period_s`` overrides it.
NVML_UPDATE_PERIOD_S = 0.1


class NvmlMeter(Meter):
    """NVIDIA total-energy counter (mJ) of GPU ``device``."""

    source = "nvml"
    scope = "device"
    update_period_s = NVML_UPDATE_PERIOD_S

    auto = True

    @classmethod
    def reads_on(cls, rank: Any) -> bool:
        return rank.backend == "cupy"  # the rank driving the GPU reads its counter

    @classmethod
    def open(cls, settings: Any, rank: Any) -> NvmlMeter:
        try:
            return cls(rank.device or 0)
        except MeterUnavailable as exc:
            raise MeterUnavailable(f"rank {rank.world_rank}: {exc}") from exc

    @classmethod
    def owner(cls, channel: str, rank: dict[str, Any], meter: dict[str, Any],
              ranks: list[dict[str, Any]]) -> tuple[str, str, str | None]:
        return rank["role"], f"read by rank {rank['rank']}, which drives this GPU", rank["host"]

    def __init__(self, device: int = 0) -> None:
        try:
            import pynvml  # lazy: only when an NVML meter is requested
        except ImportError as exc:
            raise MeterUnavailable(f"NVML meter needs nvidia-ml-py (pynvml): {exc}") from exc
        self._nvml = pynvml
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # pynvml.NVMLError and friends
            raise MeterUnavailable(f"NVML init failed: {exc}") from exc
        try:
            count = pynvml.nvmlDeviceGetCount()
            if not 0 <= int(device) < count:
                raise MeterUnavailable(f"NVML device {device} does not exist ({count} device(s))")
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(int(device))
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)  # probe: raises if unsupported
        except MeterUnavailable:
            pynvml.nvmlShutdown()
            raise
        except Exception as exc:
            pynvml.nvmlShutdown()
            raise MeterUnavailable(f"NVML total-energy counter unavailable on device {device}: {exc}") from exc
        self.device = int(device)
        self._channel = f"gpu{self.device}"
        self._open = True

    @property
    def channels(self) -> tuple[str, ...]:
        return (self._channel,)

    def read(self) -> dict[str, float]:
        mj = self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        return {self._channel: mj / 1e3}

    def close(self) -> None:
        if self._open:
            self._open = False
            self._nvml.nvmlShutdown()
