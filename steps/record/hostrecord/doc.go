// Package hostrecord is root's record of one installation,
// /etc/oac-node/<id>.json (CONTRACT §3.4, §10): the host's list of nodes
// for other tools and the Core address a run without Core's answer goes by.
// The bookkeeping (installer.db) is authoritative; install writes its entry
// first, then this record, and refuses when the two disagree.
//
// The record is one JSON object, written by json.MarshalIndent with two
// spaces and a final newline, keys in alphabetical order:
//
//	{
//	  "allow_insecure_origin": true,        only when opted in
//	  "core_ca": "<node root>/core-ca.pem", only with --core-ca
//	  "core_ca_sha256": "<hex>",            only with --core-ca
//	  "core_url": "https://core.example",
//	  "format": 1,
//	  "installation_id": "<id>",
//	  "node_root": "/var/lib/oac-node/.oac/nodes/<id>",
//	  "provider": "docker",
//	  "unit": "/etc/systemd/system/oac-node-<id>.service"
//	}
//
// Write replaces the file atomically (temporary file, fsync, rename, fsync
// of the directory), mode 0644, owned by the writer (root). Read opens it
// beneath /etc/oac-node without following a symbolic link, requires one
// link, root's ownership and at most MaxSize bytes, and decodes it with
// journal/strictjson: no duplicate key, no key that differs from a known one
// only in case, no null, every value of its type, format 1, and
// installation_id, provider and core_url present. Keys it does not know are
// skipped, as every reader before it skipped them.
package hostrecord
