#!/usr/bin/env python3
"""replay-end-jobs.py SERIES NODE [LIBSLURMFULL] -- ends jobs for `nvl72 replay --cloud`.

The driver runs it once per lab, inside the lab's chroot, and keeps it running. With
lab-up.sh's CLOUD=1 the trays are Slurm power-saving cloud nodes without a slurmd, so a job
placed on them stays CONFIGURING and never ends by itself: this helper ends it when the driver
says its run time is up, with the public API call a job's own end uses,

    slurm_complete_job()   (REQUEST_COMPLETE_JOB_ALLOCATION, return code 0),

so slurmctld logs `_job_complete: JobId=N WEXITSTATUS 0` and `_job_complete: JobId=N done`,
the job is COMPLETED (TIMEOUT when ended past its limit) and its trays are free at once. A real
job end also queues a scheduling pass (through the epilog-complete message); that RPC does
not, so after each batch of ends the helper sends a no-op node update of NODE
(`slurm_update_node()` naming one node, nothing else set), which always ends in
queue_job_scheduler() (24.11 and 26.05 proc_req.c, _slurm_rpc_update_node).

Protocol, one line each way per batch:
    stdin:  `end ID ID ...`
    stdout: `ID:RC ID:RC ... kick:RC`   RC = 0, or the Slurm error number of that call
A line `ready SERIES API` is printed once at start. EOF on stdin ends the helper.

The signature of slurm_complete_job differs by series (checked against slurm/slurm.h):
    24.11: int slurm_complete_job(uint32_t job_id, uint32_t job_return_code)
    26.05: int slurm_complete_job(slurm_step_id_t *step_id, uint32_t job_return_code)
           slurm_step_id_t = { uint64 sluid; uint32 job_id, step_het_comp, step_id }
           (sluid 0: slurmctld finds the job by job_id; the step fields NO_VAL)
update_node_msg_t has the same fields up to node_names in both series; the helper only sets
that field, in a buffer larger than either struct, after slurm_init_update_node_msg() has
filled in the rest.
"""

import ctypes
import sys

NO_VAL = 0xFFFFFFFE
# slurm_api_version(): SLURM_API_CURRENT << 16 | AGE << 8 | REVISION; the series' API number
# (SLURM_API_CURRENT) from its configure (24.11: 42, 26.05: 45).
API_CURRENT = {"24.11": 42, "26.05": 45}


class StepId(ctypes.Structure):
    """26.05's slurm_step_id_t."""

    _fields_ = [
        ("sluid", ctypes.c_uint64),
        ("job_id", ctypes.c_uint32),
        ("step_het_comp", ctypes.c_uint32),
        ("step_id", ctypes.c_uint32),
    ]


class UpdateNodePrefix(ctypes.Structure):
    """The first fields of update_node_msg_t, the same in 24.11 and 26.05."""

    _fields_ = [("comment", ctypes.c_char_p), ("cpu_bind", ctypes.c_uint32)] + [
        (name, ctypes.c_char_p)
        for name in (
            "cert_token",
            "extra",
            "features",
            "features_act",
            "gres",
            "instance_id",
            "instance_type",
            "node_addr",
            "node_hostname",
            "node_names",
        )
    ]


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in API_CURRENT:
        sys.exit("usage: replay-end-jobs.py 24.11|26.05 NODE [LIBSLURMFULL]")
    series, node = sys.argv[1], sys.argv[2].encode()
    path = sys.argv[3] if len(sys.argv) == 4 else (
        "/usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so")
    # RTLD_GLOBAL: the plugins libslurmfull loads (auth/munge ...) need its symbols.
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL, use_errno=True)
    lib.slurm_api_version.restype = ctypes.c_long
    api = lib.slurm_api_version()
    if api >> 16 != API_CURRENT[series]:
        sys.exit(f"replay-end-jobs.py: {path} has API {api >> 16}, not Slurm {series}'s "
                 f"{API_CURRENT[series]}")
    lib.slurm_init.argtypes = [ctypes.c_char_p]
    lib.slurm_init.restype = None
    lib.slurm_init(None)
    if series == "24.11":
        lib.slurm_complete_job.argtypes = [ctypes.c_uint32, ctypes.c_uint32]

        def complete(job):
            return lib.slurm_complete_job(job, 0)
    else:
        lib.slurm_complete_job.argtypes = [ctypes.POINTER(StepId), ctypes.c_uint32]

        def complete(job):
            step = StepId(0, job, NO_VAL, NO_VAL)
            return lib.slurm_complete_job(ctypes.byref(step), 0)
    lib.slurm_complete_job.restype = ctypes.c_int
    lib.slurm_init_update_node_msg.argtypes = [ctypes.c_void_p]
    lib.slurm_init_update_node_msg.restype = None
    lib.slurm_update_node.argtypes = [ctypes.c_void_p]
    lib.slurm_update_node.restype = ctypes.c_int
    buf = ctypes.create_string_buffer(1024)  # update_node_msg_t is under 200 bytes

    def rc_of(rc):
        return 0 if rc == 0 else (ctypes.get_errno() or -1)

    def kick():
        ctypes.memset(buf, 0, len(buf))
        lib.slurm_init_update_node_msg(buf)
        UpdateNodePrefix.from_buffer(buf).node_names = node
        return lib.slurm_update_node(buf)

    print(f"ready {series} {api >> 16}", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] != "end":
            print(f"error: unknown request {line.strip()!r}", flush=True)
            continue
        out = []
        for word in words[1:]:
            job = int(word)
            ctypes.set_errno(0)
            out.append(f"{job}:{rc_of(complete(job))}")
        ctypes.set_errno(0)
        out.append(f"kick:{rc_of(kick())}")
        print(" ".join(out), flush=True)


if __name__ == "__main__":
    main()
