"""Runtime: devices, device buffers with memory accounting, transfers and the transfer guard.

Layer: bottom of the stack (knows nothing of tracing, IR or backends).
"""
from .device import (Device, CpuDevice, devices, local_devices, device_count,
                     local_device_count, default_backend, process_index, process_count,
                     process_indices,
                     get_default_device, check_default_device)
from .buffer import Buffer
from .transfer import (transfer_guard, transfer_guard_host_to_device,
                       transfer_guard_device_to_host, transfer_guard_device_to_device,
                       transfer_stats, check_transfer, guard_level)
from .transfer import count as count_transfer, guard as guard_transfer
