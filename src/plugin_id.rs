//! The plugin's identity: the data symbols Slurm's plugin loader reads (`plugin_name`,
//! `plugin_type`, `plugin_version`, `plugin_id`, and from 25.05 `supports_exclusive_topo`).
//! Data only, no code runs; `plugin_id` also tags the containers the plugin hands Slurm
//! (`topoinfo`, `jobinfo`).
#![allow(non_upper_case_globals)]

const fn parse_u32(s: &str) -> u32 {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut v = 0u32;
    while i < bytes.len() {
        v = v * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    v
}

#[no_mangle]
#[allow(unsafe_code)] // data, read by the loader; no code runs
pub static plugin_name: [u8; 22] = *b"topology NVL72 plugin\0";
/// Must be exactly "topology/<name>": the loader matches it when scanning PluginDir.
#[no_mangle]
#[allow(unsafe_code)] // data, read by the loader; no code runs
pub static plugin_type: [u8; 15] = *b"topology/nvl72\0";
/// Slurm loads a plugin only if major.minor.micro equal its own (build.rs derives this from
/// the tree it compiled against).
#[no_mangle]
#[allow(unsafe_code)] // data, read by the loader; no code runs
pub static plugin_version: u32 = parse_u32(env!("NVL72_SLURM_VERSION_NUMBER"));
/// Unused by Slurm's own topology plugins (100-103); `scontrol show topology` compares it with
/// the id of the plugin loaded in the client.
#[no_mangle]
#[allow(unsafe_code)] // data, read by the loader; no code runs
pub static plugin_id: u32 = 172;

/// 25.05+: `--exclusive=topo` is supported (`whole_topo` widens a job to whole racks).
#[cfg(slurm_ctx)]
#[no_mangle]
#[allow(unsafe_code)] // data, read by the loader; no code runs
pub static supports_exclusive_topo: bool = true;
