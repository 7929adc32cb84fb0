#!/usr/bin/env python3
"""gen-abi-header.py - write slurm-headers/abi/slurm-<major>.<minor>.h from a Slurm source tree.

Why: Debian ships Slurm 26.05.5 as binary packages only (its orig tarball is not
downloadable), and the public headers of libslurm-dev do not declare the internal structs
and functions topology/nvl72 binds to (job_record_t, node_record_t, topology_eval_t, the
helper library, ...). This script measures them in a Slurm source tree of the same series
and writes a small C header that declares exactly those items, with:

  * the same struct tags, typedef names and enum spellings as Slurm, so bindgen emits the
    same Rust names as it does from the real tree;
  * small structs in full (every field, checked against the tree's definition);
  * big structs with only the fields the plugin uses, at their real offsets, with explicit
    padding (char _padN[k]) up to the real sizeof;
  * _Static_assert(offsetof/sizeof/_Alignof) for every declared field and struct;
  * the exported (slurm_-prefixed) names of the functions, as libslurmfull exports them.

How it measures: it writes a C probe that includes the tree's headers exactly as the
project's wrapper.h does (config.h from slurm-headers/, a slurm/slurm_version.h generated
from META the way build.rs does it), checks every declared type with
__builtin_types_compatible_p at compile time, and prints offsets, sizes, alignments, enum
values and macro values at run time (gcc, native x86_64). A second probe that includes ONLY
the tree's public headers checks the items the header relies on slurm.h for.

Target release vs. measured tree: the header is for the pinned release (26.05.5), but the
nearest source tree is 26.05.3. Where the two differ in a layout the plugin reads, the
difference is recorded in LAYOUT_FIXES (placeholder members inserted into a temporary copy
of the tree's header, never into the tree or the repository). The fixes were established,
and are re-checked by --verify-objects, by compiling the tree's sources with the fixes and
comparing the struct offsets the compiled code uses with Debian's objects of the release.

Usage (the target and output come from the pin whose SLURM_ABI_HEADER is the output):
  scripts/gen-abi-header.py --tree /var/tmp/slurm-trees/slurm-26-05-3-1          # write
  scripts/gen-abi-header.py --tree /var/tmp/slurm-trees/slurm-26-05-3-1 --check  # exit 1 if stale
  scripts/gen-abi-header.py --tree T --verify-objects slurm-headers/src/debian-26.05.5
        # compare with the release's objects (scripts/fetch-slurm-binary.sh lays them out)
  scripts/gen-abi-header.py --tree T --target 26.05.3 --out /tmp/x.h   # the tree as it is
  scripts/gen-abi-header.py --tree T --symbols libslurmfull.so slurmctld lib.a  # nm report

The item list (SPEC below) is the plugin's bindgen allowlist adapted to 26.05.
"""
import argparse
import collections
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The series whose interface and layouts the SPEC describes: 26.05, and 26.11 (the same
# SPEC compiles against SchedMD's master at 284c3b9, 26.11.0-0rc1; docs/abi.md "26.11").
SERIES = ((26, 5), (26, 11))

# ---------------------------------------------------------------------------------------
# SPEC. Field and prototype declarators use "{}" where the name goes; every declared type
# is checked against the tree with __builtin_types_compatible_p.

# Headers of the tree the probe includes (after config.h and slurm_xlator.h, as wrapper.h).
PROBE_HEADERS = [
    "slurm/slurm.h",
    "slurm/slurm_errno.h",
    "slurm/slurmdb.h",
    "src/common/bitstring.h",
    "src/common/core_array.h",
    "src/common/dynamic_plugin_data.h",
    "src/common/hostlist.h",
    "src/common/job_record.h",
    "src/common/list.h",
    "src/common/log.h",
    "src/common/node_conf.h",
    "src/common/pack.h",
    "src/common/read_config.h",
    "src/common/run_in_daemon.h",
    "src/common/xmalloc.h",
    "src/common/xstring.h",
    "src/interfaces/gres.h",
    "src/interfaces/select.h",
    "src/interfaces/topology.h",
    "src/plugins/topology/common/common_topo.h",
    "src/plugins/topology/common/eval_nodes.h",
    "src/slurmctld/slurmctld.h",
]

# Types the public headers (slurm.h) already provide: checked, not declared.
PUBLIC_TYPES = [
    ("bitstr_t", "int64_t"),
    ("bitoff_t", "int64_t"),
    ("hostlist_t", "struct hostlist"),
    ("list_t", "struct xlist"),
    ("slurm_conf_t", None),
    ("slurm_step_id_t", None),
    ("ListForF", "int (*)(void *, void *)"),
    ("ListDelF", "void (*)(void *)"),
]
# Public fields the plugin reads (asserted in the header against the public headers).
PUBLIC_FIELDS = [
    ("slurm_conf_t", "state_save_location", "char *{}"),
    ("slurm_conf_t", "preempt_type", "char *{}"),
    ("slurmdb_qos_rec_t", "priority", "uint32_t {}"),
]
# Public macros the plugin relies on (checked present; values printed in the report).
PUBLIC_MACROS = ["NODE_STATE_BASE", "NODE_STATE_DRAIN", "NODE_STATE_COMPLETING",
                 "NODE_STATE_NO_RESPOND", "NODE_STATE_FAIL", "JOB_STATE_BASE",
                 "NO_VAL", "NO_VAL16", "INFINITE", "SLURM_SUCCESS", "SLURM_ERROR",
                 "PREEMPT_MODE_REQUEUE", "PREEMPT_MODE_CANCEL", "PREEMPT_MODE_SUSPEND",
                 "PREEMPT_MODE_GANG"]

# Opaque struct types (forward declarations only; the plugin uses pointers to them).
OPAQUE = [
    # (tag, typedef, defining header)
    ("gres_state", "gres_state_t", "src/interfaces/gres.h"),
    ("gres_mc_data", "gres_mc_data_t", "src/interfaces/gres.h"),
]

# Structs. tag None = anonymous "typedef struct { ... } name;" in Slurm.
# full=True: every field of the struct is declared (checked against the tree's text).
STRUCTS = [
    dict(typedef="buf_t", tag=None, full=True, src="src/common/pack.h", fields=[
        ("magic", "uint32_t {}"),
        ("head", "char *{}"),
        ("size", "uint32_t {}"),
        ("processed", "uint32_t {}"),
        ("mmaped", "bool {}"),
        ("shadow", "bool {}"),
    ]),
    dict(typedef="dynamic_plugin_data_t", tag="dynamic_plugin_data", full=True,
         src="src/common/dynamic_plugin_data.h", fields=[
        ("data", "void *{}"),
        ("plugin_id", "uint32_t {}"),
    ]),
    dict(typedef="avail_res_t", tag="avail_res", full=True, src="src/interfaces/select.h",
         fields=[
        ("avail_cpus", "uint16_t {}"),
        ("avail_gpus", "uint16_t {}"),
        ("avail_res_prod", "uint64_t {}"),
        ("avail_cores_per_sock", "uint16_t *{}"),
        ("gres_min_cpus", "uint32_t {}"),
        ("gres_max_tasks", "uint32_t {}"),
        ("max_cpus", "uint16_t {}"),
        ("min_cpus", "uint16_t {}"),
        ("sock_cnt", "uint16_t {}"),
        ("sock_gres_list", "list_t *{}"),
        ("spec_threads", "uint16_t {}"),
        ("tpc", "uint16_t {}"),
        ("hres_leaf_idx", "uint16_t {}"),
    ]),
    dict(typedef="sock_gres_t", tag="sock_gres", full=True, src="src/interfaces/gres.h",
         fields=[
        ("bits_any_sock", "bitstr_t *{}"),
        ("bits_by_sock", "bitstr_t **{}"),
        ("cnt_any_sock", "uint64_t {}"),
        ("cnt_by_sock", "uint64_t *{}"),
        ("gres_state_job", "gres_state_t *{}"),
        ("gres_state_node", "gres_state_t *{}"),
        ("max_node_gres", "uint64_t {}"),
        ("sock_cnt", "int {}"),
        ("total_cnt", "uint64_t {}"),
        ("total_cnt_before_filter", "uint64_t {}"),
        ("use_total_gres", "bool {}"),
    ]),
    dict(typedef="topology_ctx_t", tag="topology_ctx", full=True,
         src="src/interfaces/topology.h", fields=[
        ("cluster_default", "bool {}"),
        ("config", "void *{}"),
        ("idx", "int {}"),
        ("name", "char *{}"),
        ("plugin", "char *{}"),
        ("topo_conf", "char *{}"),
        ("plugin_ctx", "void *{}"),
    ]),
    dict(typedef="job_details_t", tag=None, full=False, src="src/common/job_record.h",
         fields=[
        ("magic", "uint32_t {}"),
        ("contiguous", "uint16_t {}"),
        ("max_nodes", "uint32_t {}"),
        ("min_cpus", "uint32_t {}"),
        ("min_nodes", "uint32_t {}"),
        ("ntasks_per_node", "uint16_t {}"),
        ("num_tasks", "uint32_t {}"),
        ("req_node_bitmap", "bitstr_t *{}"),
        ("segment_size", "uint16_t {}"),
    ]),
    dict(typedef="job_record_t", tag="job_record", full=False, src="src/common/job_record.h",
         fields=[
        ("magic", "uint32_t {}"),
        ("job_id", "uint32_t {}"),
        ("details", "job_details_t *{}"),
        ("job_state", "uint32_t {}"),
        ("end_time", "time_t {}"),
        ("time_limit", "uint32_t {}"),
        ("node_bitmap", "bitstr_t *{}"),
        ("nodes", "char *{}"),
        ("tres_per_job", "char *{}"),
        ("tres_per_task", "char *{}"),
        ("comment", "char *{}"),
        ("network", "char *{}"),
        ("topo_jobinfo", "dynamic_plugin_data_t *{}"),
        ("bit_flags", "uint64_t {}"),
        ("req_switch", "uint32_t {}"),
        ("wait4switch", "uint32_t {}"),
        ("best_switch", "bool {}"),
        ("wait4switch_start", "time_t {}"),
        ("partition", "char *{}"),
        ("part_ptr", "part_record_t *{}"),
        ("start_protocol_ver", "uint16_t {}"),
        # Preemption steering (src/preemption.rs): a candidate's age and its QOS.
        ("start_time", "time_t {}"),
        ("qos_ptr", "slurmdb_qos_rec_t *{}"),
    ]),
    dict(typedef="part_record_t", tag="part_record", full=False,
         src="src/common/part_record.h", fields=[
        ("magic", "uint32_t {}"),
        ("name", "char *{}"),
        ("node_bitmap", "bitstr_t *{}"),
        ("priority_tier", "uint16_t {}"),
    ]),
    dict(typedef="node_record_t", tag="node_record", full=False, src="src/common/node_conf.h",
         fields=[
        ("magic", "uint32_t {}"),
        ("index", "uint32_t {}"),
        ("name", "char *{}"),
        ("node_rank", "uint32_t {}"),
        ("node_state", "uint32_t {}"),
        ("cpus_efctv", "uint16_t {}"),
        ("sched_weight", "uint64_t {}"),
        ("topology_str", "char *{}"),
    ]),
    dict(typedef="topology_eval_t", tag="topology_eval", full=True,
         src="src/interfaces/topology.h", fields=[
        ("avail_core", "bitstr_t **{}"),
        ("avail_cpus", "uint16_t {}"),
        ("avail_res_array", "avail_res_t **{}"),
        ("cr_type", "uint16_t {}"),
        ("enforce_binding", "bool {}"),
        ("eval_action", "eval_action_t {}"),
        ("eval_nodes", "int (*{})(struct topology_eval *topo_eval)"),
        ("first_pass", "bool {}"),
        ("gres_per_job", "bool {}"),
        ("job_ptr", "job_record_t *{}"),
        ("max_nodes", "uint32_t {}"),
        ("mc_ptr", "gres_mc_data_t *{}"),
        ("min_nodes", "uint32_t {}"),
        ("node_map", "bitstr_t *{}"),
        ("prefer_alloc_nodes", "bool {}"),
        ("req_nodes", "uint32_t {}"),
        ("trump_others", "bool {}"),
        ("tctx", "topology_ctx_t *{}"),
    ]),
]

# Enums: anonymous "typedef enum { ... } name;" in Slurm; all values are emitted.
ENUMS = [
    ("log_level_t", "src/common/log.h"),
    ("topology_data_t", "src/interfaces/topology.h"),
    ("topology_jobinfo_type_t", "src/interfaces/topology.h"),
    ("eval_action_t", "src/interfaces/topology.h"),
]

# Internal macros, emitted as literals (bindgen cannot evaluate SLURM_BIT()).
MACROS = [
    ("JOB_MAGIC", "hex"),
    ("DETAILS_MAGIC", "hex"),
    ("NODE_MAGIC", "hex"),
    ("PART_MAGIC", "hex"),
    ("TOPO_RANK_ID_SHIFT", "dec"),
    ("IS_SLURMCTLD", "hex"),  # SLURM_BIT(3): argument of slurm_run_in_daemon()
]

# Functions: (exported name, declarator, where defined, public header declares it).
# where: libslurmfull | helper (Slurm's topology helper objects, linked into the plugin)
LIBSLURMFULL, HELPER, SLURMCTLD = "libslurmfull", "helper", "slurmctld"
FUNCTIONS = [
    ("slurm_bit_alloc", "bitstr_t *{}(bitoff_t nbits)", LIBSLURMFULL, False),
    ("slurm_bit_set", "void {}(bitstr_t *b, bitoff_t bit)", LIBSLURMFULL, False),
    ("slurm_bit_test", "int {}(bitstr_t *b, bitoff_t bit)", LIBSLURMFULL, False),
    ("slurm_bit_size", "bitoff_t {}(bitstr_t *b)", LIBSLURMFULL, False),
    ("slurm_bit_clear_all", "void {}(bitstr_t *b)", LIBSLURMFULL, False),
    ("slurm_bit_or", "void {}(bitstr_t *b1, bitstr_t *b2)", LIBSLURMFULL, False),
    ("slurm_bit_overlap_any", "int {}(bitstr_t *b1, bitstr_t *b2)", LIBSLURMFULL, False),
    ("slurm_bit_copy", "bitstr_t *{}(bitstr_t *b)", LIBSLURMFULL, False),
    ("slurm_bit_copybits", "void {}(bitstr_t *dest, bitstr_t *src)", LIBSLURMFULL, False),
    ("slurm_bit_super_set", "int {}(bitstr_t *b1, bitstr_t *b2)", LIBSLURMFULL, False),
    ("slurm_bit_and", "void {}(bitstr_t *b1, bitstr_t *b2)", LIBSLURMFULL, False),
    ("slurm_bit_not", "void {}(bitstr_t *b)", LIBSLURMFULL, False),
    ("slurm_bit_free", "void {}(bitstr_t **b)", LIBSLURMFULL, False),
    ("next_node", "node_record_t *{}(int *index)", LIBSLURMFULL, False),
    ("next_node_bitmap", "node_record_t *{}(bitstr_t *bitmap, int *index)", LIBSLURMFULL,
     False),
    ("slurm_find_node_record", "node_record_t *{}(char *name)", LIBSLURMFULL, False),
    ("slurm_node_name2bitmap", "int {}(char *node_names, bool best_effort, "
     "bitstr_t **bitmap, hostlist_t **invalid_hostlist)", LIBSLURMFULL, False),
    ("slurm_bitmap2node_name", "char *{}(bitstr_t *bitmap)", LIBSLURMFULL, False),
    ("copy_core_array", "bitstr_t **{}(bitstr_t **core_array)", LIBSLURMFULL, False),
    ("free_core_array", "void {}(bitstr_t ***core_array)", LIBSLURMFULL, False),
    ("core_array_or", "void {}(bitstr_t **core_array1, bitstr_t **core_array2)",
     LIBSLURMFULL, False),
    ("slurm_xcalloc", "void *{}(size_t count, size_t size, bool clear, bool try_, "
     "const char *file, int line, const char *func)", LIBSLURMFULL, False),
    ("slurm_xfree", "void {}(void **item)", LIBSLURMFULL, False),
    ("slurm_xstrdup", "char *{}(const char *str)", LIBSLURMFULL, False),
    ("slurm_xfree_ptr", "void {}(void *ptr)", LIBSLURMFULL, False),
    ("slurm_packmem", "void {}(void *valp, uint32_t size_val, buf_t *buffer)", LIBSLURMFULL,
     False),
    ("slurm_pack32", "void {}(uint32_t val, buf_t *buffer)", LIBSLURMFULL, False),
    ("slurm_init_buf", "buf_t *{}(uint32_t size)", LIBSLURMFULL, False),
    ("slurm_free_buf", "void {}(buf_t *my_buf)", LIBSLURMFULL, False),
    ("job_record_unpack", "int {}(job_record_t **out, int tres_cnt, buf_t *buffer, "
     "uint16_t protocol_version)", LIBSLURMFULL, False),
    ("job_record_delete", "void {}(void *job_entry)", LIBSLURMFULL, False),
    ("slurm_unpack32", "int {}(uint32_t *valp, buf_t *buffer)", LIBSLURMFULL, False),
    ("slurm_unpackstr_xmalloc_chooser",
     "int {}(char **valp, uint32_t *size_valp, buf_t *buffer)", LIBSLURMFULL, False),
    ("slurm_hostlist_create", "hostlist_t *{}(const char *hostlist)", LIBSLURMFULL, True),
    ("slurm_hostlist_destroy", "void {}(hostlist_t *hl)", LIBSLURMFULL, True),
    ("slurm_log_var", "void {}(const log_level_t level, const char *fmt, ...)",
     LIBSLURMFULL, False),
    ("slurm_error", "int {}(const char *fmt, ...)", LIBSLURMFULL, False),
    ("slurm_get_log_level", "int {}(void)", LIBSLURMFULL, False),
    ("slurm_run_in_daemon", "bool {}(uint32_t daemons)", LIBSLURMFULL, False),
    ("slurm_list_create", "list_t *{}(ListDelF f)", LIBSLURMFULL, True),
    ("slurm_list_append", "void {}(list_t *l, void *x)", LIBSLURMFULL, True),
    ("slurm_list_count", "int {}(list_t *l)", LIBSLURMFULL, True),
    ("slurm_list_destroy", "void {}(list_t *l)", LIBSLURMFULL, True),
    ("slurm_list_for_each_ro", "int {}(list_t *l, ListForF f, void *arg)", LIBSLURMFULL,
     False),
    ("common_topo_choose_nodes", "int {}(topology_eval_t *topo_eval)", HELPER, False),
    ("common_topo_get_node_addr", "int {}(char *node_name, char **addr, char **pattern)",
     HELPER, False),
    ("common_topo_split_hostlist_treewidth", "int {}(hostlist_t *hl, hostlist_t ***sp_hl, "
     "int *count, uint16_t tree_width)", HELPER, False),
    ("common_test_node", "int {}(topology_eval_t *topo_eval, int node_idx)", HELPER, False),
    ("eval_nodes", "int {}(topology_eval_t *topo_eval)", HELPER, False),
]

# Globals: (name, declarator, where defined). The helper objects define placeholders for
# part_list/idle_node_bitmap; slurmctld's own definitions take precedence at run time.
GLOBALS = [
    ("node_record_table_ptr", "node_record_t **{}", LIBSLURMFULL),
    ("node_record_count", "int {}", LIBSLURMFULL),
    ("slurm_conf", "slurm_conf_t {}", LIBSLURMFULL),
    ("part_list", "list_t *{}", SLURMCTLD + "+" + HELPER),
    ("idle_node_bitmap", "bitstr_t *{}", SLURMCTLD + "+" + HELPER),
    ("job_list", "list_t *{}", SLURMCTLD),
    ("last_job_update", "time_t {}", SLURMCTLD),
]

# Layout differences between a target release and the tree the header is measured in.
# target release -> (tree version they apply to, [(header, struct tag, member regex,
# placeholder member inserted after it, what the release's objects show)]).
LAYOUT_FIXES = {
    "26.05.5": ("26.05.3", [
        ("src/common/job_record.h", "job_record", r"\buint64_t\s+bit_flags\s*;",
         "uint64_t _nvl72_26_05_5_after_bit_flags;",
         "job_record_t: 8 bytes more between bit_flags (0x90, unchanged) and burst_buffer "
         "(0x98 -> 0xa0); every later member moves by +8; sizeof 1288 -> 1296 (0x510)"),
        ("src/common/job_record.h", "job_record", r"\bchar\s+\*\s*cpus_per_tres\s*;",
         "uint32_t _nvl72_26_05_5_after_cpus_per_tres;",
         "job_record_t: 4 bytes more in the padding before db_flags (0xe0 -> 0xec), so "
         "db_index and later keep the +8"),
    ]),
}

# --verify-objects: the release's objects (as fetch-slurm-binary.sh lays them out under
# verify/ and lib/) and the tree sources they are compiled from. gated: must agree.
VERIFY = [
    # (object, source in the tree, gated)
    ("job_record.o", "src/common/job_record.c", True),
    ("node_conf.o", "src/common/node_conf.c", True),
    ("topology.o", "src/interfaces/topology.c", True),
    ("pack.o", "src/common/pack.c", True),
    ("gres.o", "src/interfaces/gres.c", False),  # gres_job_state_t changed too (unused)
    ("part_record.o", "src/common/part_record.c", True),  # part_record_t (magic, name)
    ("common_topo.o", "src/plugins/topology/common/common_topo.c", True),
    ("eval_nodes.o", "src/plugins/topology/common/eval_nodes.c", True),
    ("gres_filter.o", "src/plugins/topology/common/gres_filter.c", True),
    ("gres_sched.o", "src/plugins/topology/common/gres_sched.c", True),
]
VERIFY_MIN_AGREEMENT = 0.97
# Close to Debian's dpkg-buildflags (frame pointers on) so the code shapes line up.
VERIFY_CFLAGS = ["-O2", "-fPIC", "-std=gnu11", "-w", "-fno-omit-frame-pointer",
                 "-mno-omit-leaf-frame-pointer", "-fstack-protector-strong",
                 "-fstack-clash-protection", "-fcf-protection"]

# ---------------------------------------------------------------------------------------


def die(msg):
    sys.stderr.write("[gen-abi-header] ERROR: %s\n" % msg)
    sys.exit(2)


def say(msg):
    sys.stderr.write("[gen-abi-header] %s\n" % msg)


def meta(tree):
    path = os.path.join(tree, "META")
    try:
        text = open(path).read()
    except OSError as e:
        die("%s is not a Slurm source tree (%s)" % (tree, e))
    vals = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\w+):\s*(\S+)", line)
        if m:
            vals.setdefault(m.group(1), m.group(2))
    for k in ("Major", "Minor", "Micro"):
        if k not in vals:
            die("%s lacks %s" % (path, k))
    vals["version"] = "%d.%02d.%d" % (int(vals["Major"]), int(vals["Minor"]), int(vals["Micro"]))
    return vals


def version_h(major, minor, micro):
    """The slurm/slurm_version.h that build.rs writes from META (same text)."""
    num = (major << 16) | (minor << 8) | micro
    return ("#ifndef _SLURM_VERSION_H_\n#define _SLURM_VERSION_H_\n"
            "#define SLURM_VERSION_NUMBER 0x%06x\n"
            "#define SLURM_VERSION_STRING \"%d.%d.%d\"\n"
            "#define SLURM_VERSION_NUM(a,b,c) (((a) << 16) + ((b) << 8) + (c))\n"
            "#define SLURM_VERSION_MAJOR(a) (((a) >> 16) & 0xff)\n"
            "#define SLURM_VERSION_MINOR(a) (((a) >> 8) & 0xff)\n"
            "#define SLURM_VERSION_MICRO(a) ((a) & 0xff)\n#endif\n" % (num, major, minor,
                                                                      micro))


def read_pin(path):
    vals = {}
    for line in open(path):
        m = re.match(r"\s*([A-Z_0-9]+)=(\"[^\"]*\"|\S*)", line.split("#")[0])
        if m:
            vals[m.group(1)] = m.group(2).strip('"')
    return vals


def pin_for(out_path):
    """The pin whose SLURM_ABI_HEADER is out_path (None when there is none)."""
    pins = os.path.join(ROOT, "slurm-headers/pins")
    found = []
    for name in sorted(os.listdir(pins)) if os.path.isdir(pins) else []:
        vals = read_pin(os.path.join(pins, name))
        hdr = vals.get("SLURM_ABI_HEADER")  # relative to slurm-headers/ (or to the repo)
        if hdr and os.path.abspath(out_path) in (
                os.path.abspath(os.path.join(ROOT, "slurm-headers", hdr)),
                os.path.abspath(os.path.join(ROOT, hdr))):
            found.append((name, vals))
    if len(found) > 1:
        die("several pins name %s as SLURM_ABI_HEADER: %s; pass --target"
            % (out_path, " ".join(n for n, _ in found)))
    return found[0] if found else None


class Src:
    """The measured tree, seen through an overlay of layout-fixed header copies."""

    def __init__(self, tree, overlay, fixes):
        self.tree, self.overlay, self.fixes = tree, overlay, fixes

    def path(self, rel):
        if self.overlay and os.path.exists(os.path.join(self.overlay, rel)):
            return os.path.join(self.overlay, rel)
        return os.path.join(self.tree, rel)

    def includes(self, gen):
        inc = ["-I", gen, "-I", os.path.join(ROOT, "slurm-headers")]
        if self.overlay:
            inc += ["-I", self.overlay]
        return inc + ["-I", self.tree]


def strip_c(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return text


def match_brace(text, open_at):
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced braces")


def apply_fixes(tree, overlay, fixes):
    """Copy the headers named by the fixes into overlay/ and insert the placeholders."""
    texts = {}
    for rel, tag, member_re, placeholder, _ in fixes:
        if rel not in texts:
            texts[rel] = open(os.path.join(tree, rel)).read()
        text = texts[rel]
        m = re.search(r"\bstruct\s+%s\s*\{" % re.escape(tag), text)
        if not m:
            die("layout fix: no struct %s in %s" % (tag, rel))
        # the body with comments blanked (same length), to find the member and the end
        blank = re.sub(r"/\*.*?\*/", lambda x: re.sub(r"[^\n]", " ", x.group(0)), text,
                       flags=re.S)
        end = match_brace(blank, m.end() - 1)
        hits = [h for h in re.finditer(member_re, blank[m.end():end])]
        if len(hits) != 1:
            die("layout fix: %d matches of /%s/ in struct %s (%s); expected 1"
                % (len(hits), member_re, tag, rel))
        eol = text.index("\n", m.end() + hits[0].end())
        texts[rel] = text[:eol + 1] + "\t%s /* nvl72 layout fix */\n" % placeholder + \
            text[eol + 1:]
    for rel, text in texts.items():
        dst = os.path.join(overlay, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w") as fh:
            fh.write(text)


def find_body(src, rel, kind, tag, typedef):
    """Body of `typedef struct|enum [tag] { ... } typedef;` or `struct tag { ... };`."""
    text = strip_c(open(src.path(rel)).read())
    if tag:
        m = re.search(r"\b%s\s+%s\s*\{" % (kind, re.escape(tag)), text)
        if not m:
            die("%s: no definition of %s %s" % (rel, kind, tag))
        start = m.end() - 1
        end = match_brace(text, start)
        return text[start + 1:end]
    # anonymous: find "} typedef;" and walk back to "typedef kind {"
    for m in re.finditer(r"typedef\s+%s\s*\{" % kind, text):
        start = m.end() - 1
        end = match_brace(text, start)
        if re.match(r"\}\s*%s\s*;" % re.escape(typedef), text[end:]):
            return text[start + 1:end]
    die("%s: no anonymous 'typedef %s { ... } %s;'" % (rel, kind, typedef))


def struct_field_names(body):
    names = []
    for decl in body.split(";"):
        decl = re.sub(r"^\s*#[^\n]*$", "", decl, flags=re.M).strip()
        if not decl:
            continue
        m = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", decl)  # function pointer
        if m:
            names.append(m.group(1))
            continue
        if "{" in decl or "(" in decl:
            die("cannot parse struct member declaration: %r" % decl)
        for part in decl.split(","):
            m = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*(:\s*\d+)?\s*$", part.strip())
            if not m:
                die("cannot parse struct member declaration: %r" % decl)
            names.append(m.group(1))
    return names


def enum_names(body):
    names = []
    for item in body.split(","):
        item = re.sub(r"^\s*#[^\n]*$", "", item, flags=re.M).strip()
        if item:
            names.append(re.match(r"(\w+)", item).group(1))
    return names


def typename(decl):
    """The abstract type-name of a declarator template: 'int (*{})(x)' -> 'int (*)(x)'."""
    return re.sub(r"\s+", " ", decl.format("")).strip()


def declare(decl, name):
    return decl.format(name)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          **kw)


def probe(src, gen, work, cc):
    """Compile and run the C probe against the tree. Returns the parsed measurements."""
    lines = ['#include "config.h"', '#include "src/common/slurm_xlator.h"']
    lines += ['#include "%s"' % h for h in PROBE_HEADERS]
    lines += ["#include <stddef.h>", "#include <stdio.h>",
              "#define SAME(a, b) __builtin_types_compatible_p(a, b)", ""]
    asserts = []

    def check(expr, what):
        asserts.append('_Static_assert(%s, "%s");' % (expr, what.replace('"', "'")))

    for t, real in PUBLIC_TYPES:
        if real:
            check("SAME(%s, %s)" % (t, real), "type %s is %s" % (t, real))
    for tag, td, _ in OPAQUE:
        check("SAME(%s, struct %s)" % (td, tag), "%s is struct %s" % (td, tag))
    for s in STRUCTS:
        if s["tag"]:
            check("SAME(%s, struct %s)" % (s["typedef"], s["tag"]),
                  "%s is struct %s" % (s["typedef"], s["tag"]))
        for f, decl in s["fields"]:
            check("SAME(__typeof__(((%s *)0)->%s), %s)" % (s["typedef"], f, typename(decl)),
                  "type of %s.%s is %s" % (s["typedef"], f, typename(decl)))
    for st, f, decl in PUBLIC_FIELDS:
        check("SAME(__typeof__(((%s *)0)->%s), %s)" % (st, f, typename(decl)),
              "type of %s.%s is %s" % (st, f, typename(decl)))
    for name, decl, _, _ in FUNCTIONS:
        check("SAME(__typeof__(&%s), %s)" % (name, typename(decl.replace("{}", "(*{})"))),
              "prototype of %s is %s" % (name, declare(decl, name)))
    for name, decl, _ in GLOBALS:
        check("SAME(__typeof__(%s), %s)" % (name, typename(decl)),
              "type of %s is %s" % (name, typename(decl)))
    lines += asserts
    lines += ["", "int main(void)", "{"]
    P = lines.append
    for s in STRUCTS:
        t = s["typedef"]
        P('\tprintf("struct %s %%zu %%zu\\n", sizeof(%s), _Alignof(%s));' % (t, t, t))
        for f, _ in s["fields"]:
            P('\tprintf("field %s %s %%zu %%zu %%zu\\n", offsetof(%s, %s), '
              'sizeof(((%s *)0)->%s), _Alignof(__typeof__(((%s *)0)->%s)));'
              % (t, f, t, f, t, f, t, f))
    for st, f, _ in PUBLIC_FIELDS:
        P('\tprintf("pubfield %s %s %%zu\\n", offsetof(%s, %s));' % (st, f, st, f))
    enum_items = {}
    for e, rel in ENUMS:
        names = enum_names(find_body(src, rel, "enum", None, e))
        enum_items[e] = names
        for n in names:
            P('\tprintf("enum %s %s %%lld\\n", (long long)%s);' % (e, n, n))
        P('\tprintf("enumsize %s %%zu\\n", sizeof(%s));' % (e, e))
    for m, _ in MACROS + [(x, None) for x in PUBLIC_MACROS]:
        P('\tprintf("macro %s %%llu %%d\\n", (unsigned long long)(%s), (int)((%s) < 0));'
          % (m, m, m))
    P("\treturn 0;")
    P("}")
    path = os.path.join(work, "probe.c")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    exe = os.path.join(work, "probe")
    r = run([cc, "-std=gnu11", "-O0", "-w", "-fmax-errors=0"] + src.includes(gen) +
            ["-o", exe, path])
    if r.returncode != 0:
        errs = [l for l in r.stderr.splitlines() if "error" in l]
        die("the probe does not compile against %s (the SPEC disagrees with the tree):\n  %s"
            % (src.tree, "\n  ".join(errs[:60]) or r.stderr[-4000:]))
    r = run([exe])
    if r.returncode != 0:
        die("the probe failed: %s" % r.stderr)
    out = {"struct": {}, "field": {}, "enum": {}, "enumsize": {}, "macro": {}, "pubfield": {}}
    for line in r.stdout.splitlines():
        p = line.split()
        if p[0] == "struct":
            out["struct"][p[1]] = (int(p[2]), int(p[3]))
        elif p[0] == "field":
            out["field"][(p[1], p[2])] = tuple(int(x) for x in p[3:6])
        elif p[0] == "pubfield":
            out["pubfield"][(p[1], p[2])] = int(p[3])
        elif p[0] == "enum":
            out["enum"].setdefault(p[1], []).append((p[2], int(p[3])))
        elif p[0] == "enumsize":
            out["enumsize"][p[1]] = int(p[2])
        elif p[0] == "macro":
            out["macro"][p[1]] = (int(p[2]), p[3] == "1")
    for e, names in enum_items.items():
        assert [n for n, _ in out["enum"][e]] == names
    return out


def check_completeness(src):
    """Full structs must list every member of the tree's definition, in order."""
    for s in STRUCTS:
        body = find_body(src, s["src"], "struct", s["tag"], s["typedef"])
        have = struct_field_names(body)
        mine = [f for f, _ in s["fields"]]
        if s["full"]:
            if have != mine:
                die("%s is declared in full but its members differ from %s:\n  tree: %s\n"
                    "  spec: %s" % (s["typedef"], s["src"], have, mine))
        else:
            missing = [f for f in mine if f not in have]
            if missing:
                die("%s: %s not members in %s" % (s["typedef"], missing, s["src"]))
    for tag, td, rel in OPAQUE:
        text = strip_c(open(src.path(rel)).read())
        if not re.search(r"\bstruct\s+%s\s*\{" % tag, text):
            die("%s: no struct %s" % (rel, tag))


def public_probe(src, gen, work, cc):
    """The items taken from the public headers must be there with only slurm.h included."""
    lines = ["#include <slurm/slurm.h>", "#include <slurm/slurm_errno.h>",
             "#include <slurm/slurmdb.h>", "#include <stddef.h>",
             "#define SAME(a, b) __builtin_types_compatible_p(a, b)"]
    for t, real in PUBLIC_TYPES:
        lines.append("typedef %s nvl72_probe_%s;" % (t, t))
        if real:
            lines.append('_Static_assert(SAME(%s, %s), "%s");' % (t, real, t))
    for name, decl, _, public in FUNCTIONS:
        if public:
            lines.append('_Static_assert(SAME(__typeof__(&%s), %s), "%s");'
                         % (name, typename(decl.replace("{}", "(*{})")), name))
    for m in PUBLIC_MACROS:
        lines.append("#ifndef %s\n#error %s not public\n#endif" % (m, m))
    path = os.path.join(work, "public.c")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    r = run([cc, "-std=gnu11", "-fsyntax-only", "-I", gen, "-I", src.tree, path])
    if r.returncode != 0:
        die("public-header probe failed:\n%s" % r.stderr[-4000:])


def c_int(v, neg):
    return str(v - (1 << 64) if neg else v)


def render(m, target, fixes, out):
    major, minor = int(m["Major"]), int(m["Minor"])
    tag = "slurm-%d-%02d-%d-%s" % (major, minor, int(m["Micro"]), m.get("Release", "1"))
    guard = "NVL72_SLURM_ABI_%d_%02d_H" % (major, minor)
    L = []
    P = L.append
    P("/*")
    P(" * slurm-headers/abi/slurm-%d.%02d.h - GENERATED by scripts/gen-abi-header.py. Do not edit."
      % (major, minor))
    P(" *")
    P(" * For Slurm %s. Measured in the Slurm source tree %s (META Version %s)," % (
        target, tag, m["version"]))
    P(" * x86_64 (LP64), gcc%s" % (":" if fixes else "."))
    for _, _, _, placeholder, why in fixes:
        for i, line in enumerate(textwrap.wrap("%s layout fix: %s." % (target, why), 84)):
            P(" *   %s %s" % ("+" if i == 0 else " ", line))
    if fixes:
        P(" *   (Slurm %s's source is not available; the fixes come from Debian's %s objects," %
          (target, target))
        P(" *   see scripts/gen-abi-header.py --verify-objects.)")
    P(" * It describes ONLY the internal declarations, struct layouts (field offsets) and")
    P(" * constants that topology/nvl72 uses, for builds where Slurm's source is not available")
    P(" * (bindgen reads the public headers of libslurm-dev plus this file).")
    P(" * Partially declared structs keep Slurm's tags and typedef names, place each used field")
    P(" * at its real offset (char _padN[] in between) and keep the real sizeof; small structs")
    P(" * and enums are declared in full. Every offset, size and alignment is asserted below.")
    P(" * Regenerate: scripts/gen-abi-header.py --tree <slurm tree>   (docs/abi-26.05-inputs.md)")
    P(" * Check:      scripts/gen-abi-header.py --tree <slurm tree> --check")
    P(" */")
    P("#ifndef %s" % guard)
    P("#define %s" % guard)
    P("")
    P("#include <stdbool.h>")
    P("#include <stddef.h>")
    P("#include <stdint.h>")
    P("#include <time.h>")
    P("")
    P("#include <slurm/slurm.h>")
    P("#include <slurm/slurm_errno.h>")
    P("#include <slurm/slurmdb.h>")
    P("")
    P("#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(%d, %d, 0) || \\" % (major, minor))
    P("    SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(%d, %d, 0)" % (major, minor + 1))
    P('#error "slurm-headers/abi/slurm-%d.%02d.h describes Slurm %d.%02d only"'
      % (major, minor, major, minor))
    P("#endif")
    P('_Static_assert(sizeof(void *) == 8 && sizeof(long) == 8, "LP64 (x86_64) layouts");')
    P("")
    P("/*")
    P(" * From the public headers (checked there, not redeclared):")
    for line in textwrap.wrap("types %s;" % ", ".join(t for t, _ in PUBLIC_TYPES), 86,
                              subsequent_indent="  "):
        P(" *   %s" % line)
    for line in textwrap.wrap("functions %s." % ", ".join(
            n for n, _, _, pub in FUNCTIONS if pub), 86, subsequent_indent="  "):
        P(" *   %s" % line)
    P(" */")
    for st, f, _ in PUBLIC_FIELDS:
        P('_Static_assert(offsetof(%s, %s) == %d, "%s.%s");'
          % (st, f, out["pubfield"][(st, f)], st, f))
    P("")
    P("/* ---- constants (internal headers; literal values) ---- */")
    for name, fmt in MACROS:
        v, neg = out["macro"][name]
        P("#define %s %s" % (name, ("0x%x" % v) if fmt == "hex" else c_int(v, neg)))
    P("")
    P("/* ---- enums (all values) ---- */")
    for e, _ in ENUMS:
        P("typedef enum {")
        for n, v in out["enum"][e]:
            P("\t%s = %d," % (n, v))
        P("} %s;" % e)
        P('_Static_assert(sizeof(%s) == %d, "sizeof(%s)");' % (e, out["enumsize"][e], e))
    P("")
    P("/* ---- opaque types (used through pointers only) ---- */")
    for tag_, td, _ in OPAQUE:
        P("typedef struct %s %s;" % (tag_, td))
    P("")
    P("/* ---- structs ---- */")
    for s in STRUCTS:
        if s["tag"]:
            P("typedef struct %s %s;" % (s["tag"], s["typedef"]))
    for s in STRUCTS:
        P("")
        t = s["typedef"]
        size, align = out["struct"][t]
        fields = sorted(((out["field"][(t, f)], f, decl) for f, decl in s["fields"]),
                        key=lambda x: x[0][0])
        P("/* %s: %s, sizeof %d, align %d. */" % (
            t, "all fields" if s["full"] else "%d used fields of %d bytes" % (len(fields), size),
            size, align))
        P(("struct %s {" % s["tag"]) if s["tag"] else "typedef struct {")
        at, npad, nat_align = 0, 0, 1
        for (off, fsize, falign), f, decl in fields:
            if off < at:
                die("%s.%s overlaps the previous field" % (t, f))
            if off > at:
                if s["full"] and off - at >= falign:
                    die("%s.%s: unexpected gap of %d bytes in a full struct" % (t, f, off - at))
                if not s["full"]:
                    P("\tchar _pad%d[%d];" % (npad, off - at))
                    npad += 1
            P("\t%s;\t/* @%d */" % (declare(decl, f), off))
            at = off + fsize
            nat_align = max(nat_align, falign)
        if size > at:
            if s["full"] and size - at >= align:
                die("%s: unexpected tail of %d bytes in a full struct" % (t, size - at))
            if not s["full"]:
                P("\tchar _pad%d[%d];" % (npad, size - at))
        attr = " __attribute__((aligned(%d)))" % align if nat_align < align else ""
        P(("}%s;" % attr) if s["tag"] else ("}%s %s;" % (attr, t)))
        P('_Static_assert(sizeof(%s) == %d, "sizeof(%s)");' % (t, size, t))
        P('_Static_assert(_Alignof(%s) == %d, "_Alignof(%s)");' % (t, align, t))
        for (off, _, _), f, _ in fields:
            P('_Static_assert(offsetof(%s, %s) == %d, "%s.%s");' % (t, f, off, t, f))
    P("")
    P("/* ---- globals ---- */")
    for name, decl, where in GLOBALS:
        P("extern %s;\t/* %s */" % (declare(decl, name), where))
    P("")
    P("/* ---- functions (exported names) ---- */")
    for name, decl, where, public in FUNCTIONS:
        if public:
            continue
        P("extern %s;%s" % (declare(decl, name),
                            "\t/* topology helper library */" if where == HELPER else ""))
    P("")
    P("#endif /* %s */" % guard)
    return "\n".join(L) + "\n"


def syntax_check(path, gen, tree, cc, work):
    """The header must compile with only the public headers (here: the tree's slurm/)."""
    pub = os.path.join(work, "pub")
    os.makedirs(os.path.join(pub, "slurm"), exist_ok=True)
    for h in ("slurm.h", "slurm_errno.h", "slurmdb.h"):
        shutil.copy(os.path.join(tree, "slurm", h), os.path.join(pub, "slurm", h))
    path_c = os.path.join(work, "syntax.c")
    with open(path_c, "w") as fh:
        fh.write('#include "%s"\n' % os.path.abspath(path))
    r = run([cc, "-std=gnu11", "-fsyntax-only", "-Wall", "-I", gen, "-I", pub, path_c])
    if r.returncode != 0:
        die("the generated header does not compile with the public headers alone:\n%s"
            % r.stderr[-4000:])


def nm_defined(path):
    args = ["nm", "--defined-only"]
    if path.endswith(".so") or ".so." in path or not path.endswith((".a", ".o")):
        args.append("-D")
    r = run(args + [path])
    if r.returncode != 0:
        die("nm %s: %s" % (path, r.stderr.strip()))
    names = set()
    for line in r.stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] not in ("U", "w", "v"):
            names.add(p[2])
    return names


# ---- --verify-objects -----------------------------------------------------------------
# For every call in a function, the values of its first two argument registers when they
# were loaded from memory (the displacement, i.e. the struct offset read), and of the second
# when set from an immediate (e.g. xcalloc's size). Calls are aligned by callee name between the two builds,
# and the values compared: compiler differences rarely change them, layouts always do.

_R64 = {}
for _a, _b in [("rax", "eax ax al"), ("rbx", "ebx bx bl"), ("rcx", "ecx cx cl"),
               ("rdx", "edx dx dl"), ("rsi", "esi si sil"), ("rdi", "edi di dil"),
               ("rbp", "ebp bp bpl"), ("rsp", "esp sp spl")]:
    _R64[_a] = _a
    for _x in _b.split():
        _R64[_x] = _a
for _n in range(8, 16):
    for _s in ("", "d", "w", "b"):
        _R64["r%d%s" % (_n, _s)] = "r%d" % _n


def _calls(dis_text, func):
    norm = lambda r: _R64.get(r, r)  # noqa: E731
    lines = dis_text.splitlines()
    res, inside, regs, slots = [], False, {}, {}
    for i, line in enumerate(lines):
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            inside = m.group(1) == func
            continue
        if not inside:
            continue
        m = re.match(r"\s+[0-9a-f]+:\s+(\S+)\s*(.*)", line)
        if not m:
            continue
        op, args = m.group(1), m.group(2)
        if op.startswith("call"):
            r = re.search(r"R_X86_64_\w+\s+(\S+?)(-0x4)?$", lines[i + 1]) \
                if i + 1 < len(lines) else None
            res.append((r.group(1) if r else "?", regs.get("rdi"), regs.get("rsi")))
            for k in ("rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11"):
                regs.pop(k, None)
            continue
        if op.startswith(("j", "test", "cmp", "bt", "push", "nop", "endbr")):
            continue
        mm = re.match(r"(-?0x[0-9a-f]+)?\(%(\w+)\),%(\w+)$", args)
        if mm and op.startswith("mov"):
            base, dst = norm(mm.group(2)), norm(mm.group(3))
            d = int(mm.group(1), 16) if mm.group(1) else 0
            if base in ("rsp", "rbp"):
                regs[dst] = slots.get((base, d))
            elif base == "rip":
                regs.pop(dst, None)
            else:
                regs[dst] = ("mem", d)
            continue
        mm = re.match(r"\$(0x[0-9a-f]+),%(\w+)$", args)
        if mm and op.startswith("mov"):
            # immediates only as the 2nd argument: xcalloc(count, SIZE, ...)
            dst = norm(mm.group(2))
            regs[dst] = ("imm", int(mm.group(1), 16)) if dst == "rsi" else None
            continue
        mm = re.match(r"%(\w+),(-?0x[0-9a-f]+)?\(%(rbp|rsp)\)$", args)
        if mm and op.startswith("mov"):
            slots[(mm.group(3), int(mm.group(2), 16) if mm.group(2) else 0)] = \
                regs.get(norm(mm.group(1)))
            continue
        mm = re.match(r"%(\w+),%(\w+)$", args)
        if mm and op.startswith("mov"):
            regs[norm(mm.group(2))] = regs.get(norm(mm.group(1)))
            continue
        mm = re.search(r",%(\w+)$", args)
        if mm:
            regs.pop(norm(mm.group(1)), None)
    return res


def _compare_objects(ours, theirs):
    def dis(o):
        return run(["objdump", "-d", "-r", "--no-show-raw-insn", o]).stdout
    da, db = dis(ours), dis(theirs)
    fa, fb = nm_funcs(ours), nm_funcs(theirs)
    pairs = collections.Counter()
    for f in sorted(fa & fb):
        A, B = _calls(da, f), _calls(db, f)
        sm = difflib.SequenceMatcher(a=[x[0] for x in A], b=[x[0] for x in B], autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag != "equal":
                continue
            for k in range(i2 - i1):
                for idx in (1, 2):
                    x, y = A[i1 + k][idx], B[j1 + k][idx]
                    if x is not None and y is not None and x[0] == y[0]:
                        pairs[(x, y)] += 1
    return pairs


def nm_funcs(o):
    return {p[2] for p in (l.split() for l in run(["nm", "--defined-only", o]).stdout.splitlines())
            if len(p) == 3 and p[1] == "T"}


def verify_objects(src, gen, work, cc, objdir):
    """Compile the tree's sources (with the layout fixes) and compare with objdir's objects."""
    helper_a = os.path.join(objdir, "lib/libslurm_topology_common.a")
    theirs_dir = os.path.join(work, "theirs")
    os.makedirs(theirs_dir)
    if os.path.exists(helper_a):
        run(["ar", "x", helper_a], cwd=theirs_dir)
    for d in (os.path.join(objdir, "verify"), objdir):
        if os.path.isdir(d):
            for f in os.listdir(d):
                if f.endswith(".o") and not os.path.exists(os.path.join(theirs_dir, f)):
                    shutil.copy(os.path.join(d, f), theirs_dir)
    ok = True
    for obj, rel, gated in VERIFY:
        theirs = os.path.join(theirs_dir, obj)
        if not os.path.exists(theirs):
            say("verify: %-14s missing in %s (skipped)" % (obj, objdir))
            ok = ok and not gated
            continue
        # compile a copy placed in the overlay so that "sibling.h" includes see the fixes
        copy = os.path.join(work, "vsrc", rel)
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        shutil.copy(os.path.join(src.tree, rel), copy)
        odir = os.path.join(src.overlay, os.path.dirname(rel)) if src.overlay else None
        if odir and os.path.isdir(odir):
            for h in os.listdir(odir):
                shutil.copy(os.path.join(odir, h), os.path.dirname(copy))
        ours = os.path.join(work, "ours-" + obj)
        r = run([cc, "-c"] + VERIFY_CFLAGS + src.includes(gen) +
                ["-I", os.path.join(src.tree, os.path.dirname(rel)), "-o", ours, copy])
        if r.returncode != 0:
            die("verify: cannot compile %s:\n%s" % (rel, r.stderr[-3000:]))
        run(["objcopy", "--discard-all", ours])  # theirs have no local symbols either
        pairs = _compare_objects(ours, theirs)
        total = sum(pairs.values())
        same = sum(n for (x, y), n in pairs.items() if x == y)
        share = same / total if total else 1.0
        bad = gated and total and share < VERIFY_MIN_AGREEMENT
        ok = ok and not bad
        print("verify: %-14s %4d/%-4d call arguments agree (%5.1f%%)%s" % (
            obj, same, total, 100 * share,
            "" if gated else "  [informational]") + ("  <-- DISAGREES" if bad else ""))
        diffs = sorted(((x, y, n) for (x, y), n in pairs.items() if x != y),
                       key=lambda t: -t[2])
        for x, y, n in diffs[:8 if bad else 3]:
            print("        %s %#x here, %#x in %s (x%d)" % (x[0], x[1], y[1], obj, n))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", required=True, help="Slurm source tree (with META)")
    ap.add_argument("--out", help="output header (default slurm-headers/abi/slurm-M.mm.h)")
    ap.add_argument("--target", help="the Slurm release the header is for (default: from "
                    "the pin that names --out as SLURM_ABI_HEADER, else the tree's version)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary file and diff against --out")
    ap.add_argument("--cc", default=os.environ.get("CC", "gcc"))
    ap.add_argument("--symbols", nargs="*", default=[],
                    help="binaries to look up functions/globals in with nm (report only)")
    ap.add_argument("--verify-objects", metavar="DIR",
                    help="compare the layouts with the target's compiled objects in DIR "
                    "(verify/*.o, lib/libslurm_topology_common.a; see fetch-slurm-binary.sh)")
    a = ap.parse_args()

    tree = os.path.abspath(a.tree)
    m = meta(tree)
    major, minor, micro = int(m["Major"]), int(m["Minor"]), int(m["Micro"])
    if (major, minor) not in SERIES:
        die("the SPEC in this script is for Slurm %s; %s is %s"
            % (", ".join("%d.%02d" % s for s in SERIES), tree, m["version"]))
    out_path = os.path.abspath(a.out or os.path.join(
        ROOT, "slurm-headers/abi/slurm-%d.%02d.h" % (major, minor)))
    target = a.target
    if not target:
        pin = pin_for(out_path)
        target = pin[1].get("SLURM_VERSION") if pin else m["version"]
        if pin:
            say("target Slurm %s (slurm-headers/pins/%s)" % (target, pin[0]))
    fixes = []
    if target != m["version"]:
        if target not in LAYOUT_FIXES or LAYOUT_FIXES[target][0] != m["version"]:
            die("the header is for Slurm %s but %s is %s, and LAYOUT_FIXES has no entry for "
                "%s measured in %s (add one: docs/abi-26.05-inputs.md)"
                % (target, tree, m["version"], target, m["version"]))
        fixes = LAYOUT_FIXES[target][1]
    if tuple(int(x) for x in target.split(".")[:2]) != (major, minor):
        die("target %s is not Slurm %d.%02d, the series of %s" % (target, major, minor, tree))
    work = tempfile.mkdtemp(prefix="gen-abi-header.")
    try:
        gen = os.path.join(work, "include")
        os.makedirs(os.path.join(gen, "slurm"))
        # slurm_version.h of the measured tree: the probes compile the tree's sources
        with open(os.path.join(gen, "slurm/slurm_version.h"), "w") as fh:
            fh.write(version_h(major, minor, micro))
        overlay = None
        if fixes:
            overlay = os.path.join(work, "overlay")
            apply_fixes(tree, overlay, fixes)
        src = Src(tree, overlay, fixes)
        check_completeness(src)
        public_probe(src, gen, work, a.cc)
        data = probe(src, gen, work, a.cc)
        text = render(m, target, fixes, data)
        tmp = os.path.join(work, os.path.basename(out_path))
        with open(tmp, "w") as fh:
            fh.write(text)
        syntax_check(tmp, gen, tree, a.cc, work)
        if a.symbols:
            defs = [(p, nm_defined(p)) for p in a.symbols]
            for name, _, where, _ in FUNCTIONS + [(g, d, w, False) for g, d, w in GLOBALS]:
                found = [os.path.basename(p) for p, s in defs if name in s]
                print("%-38s %-24s %s" % (name, where, " ".join(found) or "NOT FOUND"))
        if a.verify_objects:
            if not verify_objects(src, gen, work, a.cc, os.path.abspath(a.verify_objects)):
                say("the layouts DISAGREE with the objects in %s" % a.verify_objects)
                return 1
            say("the layouts agree with the objects in %s" % a.verify_objects)
            if not a.check:
                return 0
        if a.check:
            try:
                old = open(out_path).read()
            except OSError:
                old = ""
            if old != text:
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), out_path,
                    "regenerated from %s" % tree))
                say("%s is NOT up to date with %s" % (out_path, tree))
                return 1
            say("%s is up to date (Slurm %s from %s)" % (out_path, target, tree))
            return 0
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        with open(out_path, "w") as fh:
            fh.write(text)
        say("wrote %s for Slurm %s from %s (Slurm %s)" % (out_path, target, tree, m["version"]))
        print(out_path)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
