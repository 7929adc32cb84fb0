/*
 * Minimal config.h for compiling against Slurm's internal headers and for building
 * Slurm's static topology helper library (src/plugins/topology/common) inside the plugin.
 *
 * Slurm's headers include "config.h" unconditionally. Of the ~190 macros configure would
 * define, the header closure of the topology interface only consults the ones below, and
 * none of them changes the layout of a struct the plugin touches (see docs/abi.md).
 * This file is ours, not upstream's.
 */
#ifndef NVL72_SLURM_CONFIG_H
#define NVL72_SLURM_CONFIG_H

#define USE_ALIAS 1                 /* slurm_xlator.h: call the slurm_-prefixed exports */
#define HAVE___BUILTIN_BSWAP64 1
#define SLURM_BIGENDIAN 0
#define SYSTEM_DIMENSIONS 1
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* no value: Slurm's slurmstepd_job.h defines it the same way */
#endif
/* xassert() compiled out: an assertion in a helper must never abort slurmctld. */
#ifndef NDEBUG
#define NDEBUG 1
#endif

#endif
