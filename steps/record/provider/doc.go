// Package provider is the node's provider configuration format: the
// base provider.json an installation writes and the per-generation
// state/node/generations/<g>.json (and the plan inside <g>.preparing), which
// the platform's oac-node program reads (CONTRACT §3.1).
//
// A Config is one JSON object with exactly these keys:
//
//	installation_id   canonical UUID
//	provider          "docker" or "microsandbox"
//	core_url          <Core origin>/api/v1
//	generation        deployment generation (integer ≥ 1)
//	specification     the deployment specification copied from Core
//	docker            adapter object, only for provider docker:
//	                  host, image, network, seccomp_file, nested_sandbox
//	microsandbox      adapter object, only for provider microsandbox:
//	                  helper_path, runtime_path, firmware_path,
//	                  runtime_sha256, firmware_sha256, runtime_home, image,
//	                  cpus, memory_mib, root_disk_mib, environment_disk_mib,
//	                  network {default_egress, default_ingress, rules}
//
// Parse is strict the way the platform's readers are: unknown keys
// (max_active, idle_seconds, … included), missing keys, duplicate keys,
// nulls, booleans or fractions where integers belong are refused. Marshal
// writes sorted keys, two-space indentation and a trailing newline, so equal
// configurations are equal bytes.
//
// Preparing a later generation writes its configuration twice: first as a
// plan (inside <g>.preparing) before anything is downloaded, then, after the
// Runtime import, as the final write-once <g>.json. CheckPlan says what a
// plan may be: the base configuration's installation, provider and Core URL,
// every path inside the node root (never another release than its own
// releases/<source_commit>), a microsandbox home that is one of the
// installation's stores, and for Docker an image that is one of the
// specification's two identities. CheckFinal says what the final
// configuration may be: the plan, except the Docker image, which becomes the
// local image ID the resolver returned.
package provider
