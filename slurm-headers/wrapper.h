/*
 * The Slurm declarations topology/nvl72 binds to (input of bindgen in build.rs).
 * Everything comes from the pinned upstream tree; bindgen's allowlist keeps the output small.
 */
#include "config.h"
#include "src/common/slurm_xlator.h"

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/core_array.h"
#include "src/common/hostlist.h"
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

/* Node state flags are SLURM_BIT() expressions, which bindgen cannot evaluate; an enum can. */
enum nvl72_node_flag {
	NVL72_NODE_STATE_DRAIN = NODE_STATE_DRAIN,
	NVL72_NODE_STATE_FAIL = NODE_STATE_FAIL,
	NVL72_NODE_STATE_NO_RESPOND = NODE_STATE_NO_RESPOND,
	NVL72_NODE_STATE_COMPLETING = NODE_STATE_COMPLETING,
};
