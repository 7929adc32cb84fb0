/*
 * The Slurm declarations topology/nvl72 binds to (input of bindgen in build.rs).
 * From a source tree: Slurm's own headers. From Debian's binary packages (NVL72_ABI_HEADER set
 * by build.rs): the public headers plus the committed ABI description of that release
 * (slurm-headers/abi/), because the internal headers are not packaged.
 * bindgen's allowlist keeps the output small.
 */
#include "config.h"

#ifdef NVL72_ABI_HEADER
#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include NVL72_ABI_HEADER
#else
#include "src/common/slurm_xlator.h"

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/core_array.h"
#include "src/common/hostlist.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/pack.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/topology.h"
#include "src/plugins/topology/common/common_topo.h"
#include "src/plugins/topology/common/eval_nodes.h"
#include "src/slurmctld/slurmctld.h"
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
#include "src/common/run_in_daemon.h"
#endif
#endif

/* Node state flags are SLURM_BIT() expressions, which bindgen cannot evaluate; an enum can. */
enum nvl72_node_flag {
	NVL72_NODE_STATE_DRAIN = NODE_STATE_DRAIN,
	NVL72_NODE_STATE_FAIL = NODE_STATE_FAIL,
	NVL72_NODE_STATE_NO_RESPOND = NODE_STATE_NO_RESPOND,
	NVL72_NODE_STATE_COMPLETING = NODE_STATE_COMPLETING,
	NVL72_NODE_STATE_DYNAMIC_NORM = NODE_STATE_DYNAMIC_NORM,
};

/* JOB_COMPLETING is a SLURM_BIT() flag too. */
enum nvl72_job_flag {
	NVL72_JOB_COMPLETING = JOB_COMPLETING,
};

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
/* run_in_daemon() takes a SLURM_BIT() mask (run_in_daemon.h). */
enum nvl72_daemon {
	NVL72_IS_SLURMCTLD = IS_SLURMCTLD,
};
#endif
